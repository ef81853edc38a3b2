package controllers_test

import (
	"encoding/json"
	"testing"
	"time"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// Issue 51, visible: what a sync's shards read (extracted, unchanged, cache hits and misses,
// planning time) and the pages they ran OCR on are recorded in status.revisions[].
func TestSyncReadsAreRecordedInIndexStatus(t *testing.T) {
	ns := newNamespace(t)
	r1, sync, corpusRev := syncFixture(t, ns)
	reads := ragopsv1alpha1.DocumentReads{Extracted: 1, Unchanged: 2, CacheMisses: 1, PlanMilliseconds: 40}
	res, _ := json.Marshal(plan.BuildResult{Documents: 1, Unchanged: 2, Chunks: 2, OCR: &ragopsv1alpha1.OCRStatus{Pages: 3}, Reads: &reads})
	finishJob(t, sync, 0, string(res))
	var rev ragopsv1alpha1.RevisionStatus
	eventually(t, 30*time.Second, "the sync's reads in status", func() (bool, error) {
		rev = revisionOf(t, ns, r1)
		return rev.CorpusRevision == corpusRev && rev.Reads != nil, nil
	})
	if *rev.Reads != reads || rev.OCR == nil || rev.OCR.Pages != 3 {
		t.Errorf("status reads %+v, OCR %+v; want %+v and 3 pages", *rev.Reads, rev.OCR, reads)
	}
}
