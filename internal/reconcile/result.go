// Package reconcile is the step kit every ragops reconciler shares (after Flux's
// internal/reconcile and summarize): a reconcile is a list of steps, each returning a typed
// Result that names the outcome it found; Summarize alone turns the merged result into the
// kstatus conditions (Ready, Reconciling, Stalled, DeletionBlocked), once per reconcile; the
// StatusPatcher writes the status once at the end and reports condition changes as Events.
package reconcile

import (
	"context"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/tracing"
)

// Result is what one step of a reconcile decided: whether the later steps run, when to look
// again, and the conditions its outcome calls for (applied by Summarize).
type Result struct {
	// Stop ends this reconcile after the step: it waits for a Job, an Evaluation, another
	// object or a user's change.
	Stop bool
	// RequeueAfter asks for another reconcile after this long (0: on the next event only).
	RequeueAfter time.Duration
	// Outcome is the state the step found; OutcomeNone leaves the conditions to other steps.
	Outcome Outcome
	// Reason and Message explain Outcome in the conditions it sets.
	Reason, Message string
	// Also are the other conditions the step decided (UnderReplicated, ServingReady,
	// BudgetExhausted): Summarize sets each after the kstatus ones, and removes the types
	// whose Status is "". Merge appends them, so a later step's decision on a type wins.
	Also []metav1.Condition
}

// Outcome is the kstatus state a step found (see package internal/conditions).
type Outcome int

const (
	// OutcomeNone: the step has nothing to say about the conditions.
	OutcomeNone Outcome = iota
	// OutcomeReady: the desired state is reached; Ready=True, no Reconciling, no Stalled.
	OutcomeReady
	// OutcomeProgressing: work in progress (a build, a gate, an object to wait for);
	// Reconciling=True, and Ready stays True when it was (what serves keeps serving), else
	// Ready=False.
	OutcomeProgressing
	// OutcomeReconciling: work in progress on a result not usable until it ends (an
	// Experiment's trials); Reconciling=True and Ready=False whatever it was.
	OutcomeReconciling
	// OutcomeProgressingKeepReady: work in progress on what serves (a corpus sync);
	// Reconciling=True, Ready left as it is.
	OutcomeProgressingKeepReady
	// OutcomeRetrying: a transient failure (Weaviate unreachable, a collection lost and
	// being rebuilt); Ready=False, Reconciling=True.
	OutcomeRetrying
	// OutcomeStalled: progress needs a user's change; Stalled=True, Ready=False.
	OutcomeStalled
	// OutcomeSuspended: spec.suspend; no Reconciling, and Stalled unless Ready is True.
	OutcomeSuspended
	// OutcomeDeletionBlocked: deletion waits (for Job pods, for Weaviate);
	// DeletionBlocked=True, the other conditions left as they are.
	OutcomeDeletionBlocked
	// OutcomeDeleted: cleanup is done and only others' finalizers may hold the object;
	// Ready=False, no Reconciling, Stalled or DeletionBlocked.
	OutcomeDeleted
)

var (
	// Proceed lets the next step run.
	Proceed = Result{}
	// Stop ends the reconcile until an event (or the error's backoff).
	Stop = Result{Stop: true}
)

// StopFor ends the reconcile and looks again after d.
func StopFor(d time.Duration) Result { return Result{Stop: true, RequeueAfter: d} }

// ProceedFor lets the next step run and looks again after d.
func ProceedFor(d time.Duration) Result { return Result{RequeueAfter: d} }

// Stalled ends the reconcile until a user's change: Stalled=True with reason and msg.
func Stalled(reason, msg string) Result { return Stop.With(OutcomeStalled, reason, msg) }

// With returns res with the outcome o, explained by reason and msg.
func (res Result) With(o Outcome, reason, msg string) Result {
	res.Outcome, res.Reason, res.Message = o, reason, msg
	return res
}

// Set returns res deciding the condition typ (see Also).
func (res Result) Set(typ string, status metav1.ConditionStatus, reason, msg string) Result {
	res.Also = append(slices.Clip(res.Also), metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg})
	return res
}

// Remove returns res deciding that the condition typ goes (see Also).
func (res Result) Remove(typ string) Result {
	res.Also = append(slices.Clip(res.Also), metav1.Condition{Type: typ})
	return res
}

// Requeue returns res looking again after d.
func (res Result) Requeue(d time.Duration) Result {
	res.RequeueAfter = d
	return res
}

// Merge keeps the soonest requeue of two steps, b's Stop, and b's outcome unless b has none:
// the last step that decided the conditions decides them.
func (res Result) Merge(b Result) Result {
	if res.RequeueAfter == 0 || (b.RequeueAfter > 0 && b.RequeueAfter < res.RequeueAfter) {
		res.RequeueAfter = b.RequeueAfter
	}
	res.Stop = b.Stop
	if b.Outcome != OutcomeNone {
		res.Outcome, res.Reason, res.Message = b.Outcome, b.Reason, b.Message
	}
	res.Also = append(slices.Clip(res.Also), b.Also...)
	return res
}

// Step is one sub-reconciler: it reads and changes the reconcile's state S and says what it
// decided. An error ends the reconcile (the work queue backs off).
type Step[S any] func(context.Context, S) (Result, error)

// Run runs steps in order until one stops or fails and returns their merged result with the
// error of the step that failed.
func Run[S any](ctx context.Context, st S, steps ...Step[S]) (Result, error) {
	var merged Result
	for _, step := range steps {
		res, err := traceStep(ctx, st, step)
		merged = merged.Merge(res)
		if err != nil || res.Stop {
			return merged, err
		}
	}
	return merged, nil
}

// Summarize sets obj's Ready, Reconciling, Stalled and DeletionBlocked conditions from the
// merged result of its steps, then the other conditions the steps decided (Also), and
// returns the reconcile's result. It is the one place a reconciler sets conditions.
func Summarize(obj conditions.Getter, res Result) ctrl.Result {
	switch res.Outcome {
	case OutcomeReady:
		conditions.MarkReady(obj, res.Reason, res.Message)
	case OutcomeProgressing:
		conditions.MarkReconcilingKeepReadyOrFalse(obj, res.Reason, res.Message)
	case OutcomeReconciling:
		conditions.MarkReconciling(obj, res.Reason, res.Message)
	case OutcomeProgressingKeepReady:
		conditions.MarkReconcilingKeepReady(obj, res.Reason, res.Message)
	case OutcomeRetrying:
		conditions.MarkNotReady(obj, res.Reason, res.Message)
	case OutcomeStalled:
		conditions.MarkStalled(obj, res.Reason, res.Message)
	case OutcomeSuspended:
		conditions.Remove(obj, ragopsv1alpha1.ConditionReconciling)
		if c := meta.FindStatusCondition(*obj.GetConditions(), ragopsv1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			conditions.MarkStalled(obj, res.Reason, res.Message)
		}
	case OutcomeDeletionBlocked:
		conditions.Set(obj, ragopsv1alpha1.ConditionDeletionBlocked, metav1.ConditionTrue, res.Reason, res.Message)
	case OutcomeDeleted:
		conditions.Set(obj, ragopsv1alpha1.ConditionReady, metav1.ConditionFalse, res.Reason, res.Message)
		conditions.Remove(obj, ragopsv1alpha1.ConditionReconciling)
		conditions.Remove(obj, ragopsv1alpha1.ConditionStalled)
		conditions.Remove(obj, ragopsv1alpha1.ConditionDeletionBlocked)
	}
	for _, c := range res.Also {
		if c.Status == "" {
			conditions.Remove(obj, c.Type)
		} else {
			conditions.Set(obj, c.Type, c.Status, c.Reason, c.Message)
		}
	}
	return ctrl.Result{RequeueAfter: res.RequeueAfter}
}

// traceStep runs step in a span named after its function when ctx's span records (a traced
// reconcile, tracing.Reconcile), with the outcome it decided.
func traceStep[S any](ctx context.Context, st S, step Step[S]) (Result, error) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return step(ctx, st)
	}
	name := runtime.FuncForPC(reflect.ValueOf(step).Pointer()).Name()
	name = strings.TrimSuffix(name[strings.LastIndex(name, ".")+1:], "-fm")
	ctx, span := tracing.Start(ctx, name)
	res, err := step(ctx, st)
	if res.Reason != "" {
		span.SetAttributes(attribute.String("ragops.reason", res.Reason))
	}
	span.SetAttributes(attribute.Bool("ragops.stop", res.Stop))
	tracing.End(span, err)
	return res, err
}
