package plan

import "errors"

// FailureReason says why a worker refused or failed its plan, in a result's Reason field: the
// controller maps it to a condition reason and never parses the error text.
type FailureReason string

const (
	// FailureModelLimitExceeded: the strategy's chunks (spec.size, spec.late.window) cannot
	// fit the model's positions (registry.CheckModelLimits); nothing was embedded.
	FailureModelLimitExceeded FailureReason = "ModelLimitExceeded"
	// FailureModelChanged: the model folder's content hash is not the one the revision was
	// embedded with (Build.ModelHash); nothing was written.
	FailureModelChanged FailureReason = "ModelChanged"
)

// Failure is a worker error with its reason. Error reads "<Reason>: <Err>".
type Failure struct {
	Reason FailureReason
	Err    error
}

func (f *Failure) Error() string { return string(f.Reason) + ": " + f.Err.Error() }

// Unwrap returns the underlying error.
func (f *Failure) Unwrap() error { return f.Err }

// ReasonOf returns the reason of the first *Failure in err's chain; "" when there is none
// (a plain failure).
func ReasonOf(err error) FailureReason {
	var f *Failure
	if errors.As(err, &f) {
		return f.Reason
	}
	return ""
}
