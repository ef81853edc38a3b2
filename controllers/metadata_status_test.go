package controllers_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// Issue 52: metadata values that did not parse, counted by the shards per field and reason,
// are recorded in status.revisions[].invalidMetadata.
func TestInvalidMetadataIsRecordedInIndexStatus(t *testing.T) {
	ns := newNamespace(t)
	r1, sync, corpusRev := syncFixture(t, ns)
	invalid := map[string]int64{"datum/InvalidValue": 2, "type/InvalidSidecar": 1}
	res, _ := json.Marshal(plan.BuildResult{Documents: 3, Chunks: 3, InvalidMetadata: invalid})
	finishJob(t, sync, 0, string(res))
	var rev ragopsv1alpha1.RevisionStatus
	eventually(t, 30*time.Second, "the sync's invalid metadata in status", func() (bool, error) {
		rev = revisionOf(t, ns, r1)
		return rev.CorpusRevision == corpusRev && rev.InvalidMetadata != nil, nil
	})
	if !reflect.DeepEqual(rev.InvalidMetadata, invalid) {
		t.Errorf("status invalidMetadata %v, want %v", rev.InvalidMetadata, invalid)
	}
}
