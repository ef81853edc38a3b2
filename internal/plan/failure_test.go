package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// A refusal keeps its reason through wrapping and across the termination message, and reads
// "<Reason>: <error>"; a plain error has none.
func TestFailureReasonSurvivesWrappingAndJSON(t *testing.T) {
	refusal := &Failure{Reason: FailureModelLimitExceeded, Err: errors.New("spec.size 800 tokens needs 802 positions")}
	wrapped := fmt.Errorf("shard 0: %w", refusal)
	if got := ReasonOf(wrapped); got != FailureModelLimitExceeded {
		t.Errorf("ReasonOf(wrapped) = %q, want %q", got, FailureModelLimitExceeded)
	}
	if got, want := wrapped.Error(), "shard 0: ModelLimitExceeded: spec.size 800 tokens needs 802 positions"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if got := ReasonOf(errors.New("weaviate unreachable")); got != "" {
		t.Errorf("ReasonOf(plain) = %q, want none", got)
	}
	raw, _ := json.Marshal(BuildResult{Error: wrapped.Error(), Reason: ReasonOf(wrapped)})
	var back BuildResult
	if err := json.Unmarshal(raw, &back); err != nil || back.Reason != FailureModelLimitExceeded {
		t.Errorf("reason after the termination message %s: %q (%v)", raw, back.Reason, err)
	}
}
