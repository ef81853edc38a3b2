package reconcile

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
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/tracing"
)

// Object is a ragops resource with conditions.
type Object interface {
	client.Object
	GetConditions() *[]metav1.Condition
}

// StatusPatcher patches an object's status at the end of a reconcile, only when it changed,
// and emits an Event for every condition whose status or reason changed.
type StatusPatcher struct {
	before Object
	// warn says which conditions call for a Warning Event (the others are Normal).
	warn func(metav1.Condition) bool
}

// NewStatusPatcher remembers obj as read, before the reconcile changes it. warn says which
// conditions need a person (a Warning Event); nil makes every Event Normal.
func NewStatusPatcher(obj Object, warn func(metav1.Condition) bool) *StatusPatcher {
	return &StatusPatcher{before: obj.DeepCopyObject().(Object), warn: warn}
}

// ConflictRequeue is how soon a reconcile whose status patch met a Conflict runs again: the
// cache it read from catches up within milliseconds, so there is no error to back off from.
const ConflictRequeue = 200 * time.Millisecond

// Done patches obj's status at the end of a reconcile (see Patch) and folds the outcome into
// the reconcile's result: an object already gone is no error, and a Conflict with no other
// error runs the reconcile again after 200 ms, on a fresh copy, instead of logging one.
// stored reports whether the status the reconcile computed is the stored one (patched, or
// unchanged); its conditions are then exported as ragops_condition series (internal/metrics),
// which an object found gone loses.
func (p *StatusPatcher) Done(ctx context.Context, c client.Client, rec events.EventRecorder, obj Object, res *ctrl.Result, retErr *error) (stored bool) {
	err := p.Patch(ctx, c, rec, obj)
	switch {
	case err == nil:
		exportConditions(obj)
		return true
	case apierrors.IsNotFound(err):
		metrics.ForgetConditions(obj.GetNamespace(), KindOf(obj), obj.GetName())
	case apierrors.IsConflict(err) && *retErr == nil:
		log.FromContext(ctx).V(1).Info("status patch conflicted: the reconcile read a stale copy; running it again", "error", err.Error())
		*res = ctrl.Result{RequeueAfter: ConflictRequeue}
	default:
		*retErr = errors.Join(*retErr, err)
	}
	return false
}

// Patch writes obj's status when it differs from the status at fetch time. The patch carries
// obj's resourceVersion (optimistic lock): a reconcile that started from a stale cached copy
// gets a Conflict and runs again on a fresh one, instead of writing back lists (revisions,
// conditions) that a newer status had changed. Our own metadata patches in the reconcile
// (finalizers) move obj's resourceVersion with them, so they cause no conflict.
func (p *StatusPatcher) Patch(ctx context.Context, c client.Client, rec events.EventRecorder, obj Object) error {
	if equality.Semantic.DeepEqual(statusOf(p.before), statusOf(obj)) {
		return nil
	}
	before := p.before.DeepCopyObject().(Object)
	before.SetResourceVersion(obj.GetResourceVersion())
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	p.emitTransitions(rec, obj, *p.before.GetConditions(), *obj.GetConditions())
	tracing.Keep(ctx, "status")
	return nil
}

// KindOf returns the kind of a ragops object (its Go type's name: Index, Corpus, ...), which
// a typed object read from the cache carries in no field.
func KindOf(obj client.Object) string {
	return reflect.TypeOf(obj).Elem().Name()
}

// exportConditions sets obj's ragops_condition series to its conditions.
func exportConditions(obj Object) {
	var cs []metrics.Condition
	for _, c := range *obj.GetConditions() {
		cs = append(cs, metrics.Condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason})
	}
	metrics.SetConditions(obj.GetNamespace(), KindOf(obj), obj.GetName(), cs)
}

// statusOf returns the value of obj's Status field.
func statusOf(obj client.Object) any {
	v := reflect.ValueOf(obj).Elem().FieldByName("Status")
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

// emitTransitions records an Event for each decision among the conditions whose status or
// reason changed. Warning is for what needs a person (warn); waiting and progress are
// Normal, so a platform that alerts on Warning Events is not paged by every build. The
// conditions that changed to the same reason and message are one decision (Stalled=True and
// Ready=False of one outcome, see Summarize): one Event, Warning when any of them needs a
// person, with that condition as its action.
func (p *StatusPatcher) emitTransitions(rec events.EventRecorder, obj client.Object, before, after []metav1.Condition) {
	if rec == nil {
		return
	}
	type decision struct {
		c    metav1.Condition
		warn bool
	}
	var decisions []decision
next:
	for _, c := range after {
		old := meta.FindStatusCondition(before, c.Type)
		if old != nil && old.Status == c.Status && old.Reason == c.Reason {
			continue
		}
		if c.Type == ragopsv1alpha1.ConditionReconciling && c.Status == metav1.ConditionTrue && c.Reason == "Progressing" {
			continue
		}
		warn := p.warn != nil && p.warn(c)
		for i, d := range decisions {
			if d.c.Reason == c.Reason && d.c.Message == c.Message {
				if warn && !d.warn {
					decisions[i] = decision{c, true}
				}
				continue next
			}
		}
		decisions = append(decisions, decision{c, warn})
	}
	for _, d := range decisions {
		typ := corev1.EventTypeNormal
		if d.warn {
			typ = corev1.EventTypeWarning
		}
		rec.Eventf(obj, nil, typ, d.c.Reason, d.c.Type+"="+string(d.c.Status), "%s", d.c.Message)
	}
}

// EventBuffer is the events.EventRecorder of one reconcile: it holds the Events that report
// a status change (AliasMoved, RevisionBuilt, GateFailed) until that status is stored, so a
// reconcile whose patch conflicted and runs again reports its decision once, not twice.
type EventBuffer struct {
	held []heldEvent
}

type heldEvent struct {
	regarding, related              runtime.Object
	eventtype, reason, action, note string
	args                            []any
}

// Eventf holds an Event; see events.EventRecorder.
func (b *EventBuffer) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	b.held = append(b.held, heldEvent{regarding, related, eventtype, reason, action, note, args})
}

// Besides returns the recorder for the condition transitions of the reconcile whose step
// Events b holds (StatusPatcher.Done's): it records with rec, except an Event whose reason a
// held Event already reports, so that a step's decision (GateFailed, IncompleteCollection)
// is one Event, the step's, not one more for the conditions its outcome set. A Warning is
// dropped only for a held Warning: what needs a person is never reported as Normal alone.
// nil for a nil rec.
func (b *EventBuffer) Besides(rec events.EventRecorder) events.EventRecorder {
	if rec == nil {
		return nil
	}
	return besides{held: b, rec: rec}
}

type besides struct {
	held *EventBuffer
	rec  events.EventRecorder
}

func (s besides) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	for _, e := range s.held.held {
		if e.reason == reason && (e.eventtype == corev1.EventTypeWarning || eventtype != corev1.EventTypeWarning) {
			return
		}
	}
	s.rec.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// Flush records the held Events with rec (none when rec is nil) and empties the buffer.
func (b *EventBuffer) Flush(rec events.EventRecorder) {
	if rec != nil {
		for _, e := range b.held {
			rec.Eventf(e.regarding, e.related, e.eventtype, e.reason, e.action, e.note, e.args...)
		}
	}
	b.held = nil
}
