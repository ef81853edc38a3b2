package controllers

import (
	"context"
	"errors"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// statusObject is a ragops resource with conditions.
type statusObject interface {
	client.Object
	GetConditions() *[]metav1.Condition
}

// statusPatcher patches an object's status at the end of a reconcile, only when it changed,
// and emits an Event for every condition whose status or reason changed.
type statusPatcher struct {
	before statusObject
}

func newStatusPatcher(obj statusObject) *statusPatcher {
	return &statusPatcher{before: obj.DeepCopyObject().(statusObject)}
}

// conflictRequeue is how soon a reconcile whose status patch met a Conflict runs again: the
// cache it read from catches up within milliseconds, so there is no error to back off from.
const conflictRequeue = 200 * time.Millisecond

// done patches obj's status at the end of a reconcile (patch) and folds the outcome into the
// reconcile's result: an object already gone is no error, and a Conflict with no other error
// runs the reconcile again after conflictRequeue, on a fresh copy, instead of logging one.
// stored reports whether the status the reconcile computed is the stored one (patched, or
// unchanged).
func (p *statusPatcher) done(ctx context.Context, c client.Client, rec events.EventRecorder, obj statusObject, res *ctrl.Result, retErr *error) (stored bool) {
	err := p.patch(ctx, c, rec, obj)
	switch {
	case err == nil:
		return true
	case apierrors.IsNotFound(err):
	case apierrors.IsConflict(err) && *retErr == nil:
		log.FromContext(ctx).V(1).Info("status patch conflicted: the reconcile read a stale copy; running it again", "error", err.Error())
		*res = ctrl.Result{RequeueAfter: conflictRequeue}
	default:
		*retErr = errors.Join(*retErr, err)
	}
	return false
}

// eventBuffer is the events.EventRecorder of one reconcile: it holds the Events that report a
// status change (AliasMoved, RevisionBuilt, GateFailed) until that status is stored, so a
// reconcile whose patch conflicted and runs again reports its decision once, not twice.
type eventBuffer struct {
	held []heldEvent
}

type heldEvent struct {
	regarding, related              runtime.Object
	eventtype, reason, action, note string
	args                            []any
}

// Eventf holds an Event; see events.EventRecorder.
func (b *eventBuffer) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	b.held = append(b.held, heldEvent{regarding, related, eventtype, reason, action, note, args})
}

// flush records the held Events with rec (none when rec is nil) and empties the buffer.
func (b *eventBuffer) flush(rec events.EventRecorder) {
	if rec != nil {
		for _, e := range b.held {
			rec.Eventf(e.regarding, e.related, e.eventtype, e.reason, e.action, e.note, e.args...)
		}
	}
	b.held = nil
}

// patch writes obj's status when it differs from the status at fetch time. The patch carries
// obj's resourceVersion (optimistic lock): a reconcile that started from a stale cached copy
// gets a Conflict and runs again on a fresh one, instead of writing back lists (revisions,
// conditions) that a newer status had changed. Our own metadata patches in the reconcile
// (finalizers) move obj's resourceVersion with them, so they cause no conflict.
func (p *statusPatcher) patch(ctx context.Context, c client.Client, rec events.EventRecorder, obj statusObject) error {
	if equality.Semantic.DeepEqual(statusOf(p.before), statusOf(obj)) {
		return nil
	}
	before := p.before.DeepCopyObject().(statusObject)
	before.SetResourceVersion(obj.GetResourceVersion())
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	emitTransitions(rec, obj, *p.before.GetConditions(), *obj.GetConditions())
	return nil
}

// statusOf returns the value of obj's Status field.
func statusOf(obj client.Object) any {
	v := reflect.ValueOf(obj).Elem().FieldByName("Status")
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

// emitTransitions records an Event for each condition whose status or reason changed.
// Warning is for what needs a person (see needsAPerson); waiting and progress are Normal, so
// a platform that alerts on Warning Events is not paged by every build.
func emitTransitions(rec events.EventRecorder, obj client.Object, before, after []metav1.Condition) {
	if rec == nil {
		return
	}
	for _, c := range after {
		old := meta.FindStatusCondition(before, c.Type)
		if old != nil && old.Status == c.Status && old.Reason == c.Reason {
			continue
		}
		if c.Type == ragopsv1alpha1.ConditionReconciling && c.Status == metav1.ConditionTrue && c.Reason == "Progressing" {
			continue
		}
		typ := corev1.EventTypeNormal
		if needsAPerson(c) {
			typ = corev1.EventTypeWarning
		}
		rec.Eventf(obj, nil, typ, c.Reason, c.Type+"="+string(c.Status), "%s", c.Message)
	}
}

// problemReasons are the Ready=False reasons that mean something is wrong (not merely in
// progress or waiting on another object): an unreachable or inconsistent Weaviate, lost data,
// an unreadable source, a name taken by a foreign object.
var problemReasons = map[string]bool{
	ReasonWeaviateError: true, ReasonCollectionLost: true, ReasonIncompleteCollection: true,
	ReasonCleanupFailed: true, ReasonSourceUnreadable: true, ReasonJobConflict: true,
}

// needsAPerson reports whether a condition calls for a Warning Event: Stalled=True,
// ResultsStored=False for a refused or lost set, a DeletionBlocked or UnderReplicated that is not just waiting for pods to stop, or Ready=False
// for one of problemReasons. Ready=False while building, gating, syncing or waiting for a
// Corpus or Index is progress (Normal).
func needsAPerson(c metav1.Condition) bool {
	switch {
	case c.Type == ConditionResultsStored:
		// Positive polarity: a lost or refused set needs a person, not a stored one.
		return c.Status == metav1.ConditionFalse && (c.Reason == ReasonResultsUnavailable || c.Reason == ReasonResultsRefused)
	case c.Status != metav1.ConditionTrue && c.Type != ragopsv1alpha1.ConditionReady:
		return false
	case c.Type == ragopsv1alpha1.ConditionReady:
		return c.Status == metav1.ConditionFalse && problemReasons[c.Reason]
	case c.Type == ragopsv1alpha1.ConditionReconciling:
		return false
	case c.Type == ragopsv1alpha1.ConditionDeletionBlocked:
		return c.Reason != ReasonDeleting
	}
	return true
}
