package controllers

// Rollout and gate: the alias moves to a built revision, after its gating Evaluation under EvaluationGated.

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/reconcile"
	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/vectorstore"
)

// reconcileRollout moves the alias to the desired revision once it is built and, under
// EvaluationGated, once its gating Evaluation passed.
func (r *IndexReconciler) reconcileRollout(ctx context.Context, st *indexState) (reconcile.Result, error) {
	idx := st.idx
	rev := findRevision(idx, st.revision)
	if rev == nil {
		return reconcile.Stop, nil
	}
	active := findRevision(idx, idx.Status.ActiveRevision)
	if rev.Phase == ragopsv1alpha1.RevisionActive {
		// Make sure Weaviate agrees, once per DriftInterval (driftChecks): the collection still
		// exists (data lost, deleted by hand) and the alias points at it (an alias deleted
		// behind our back is restored). The reconciles in between ask Weaviate nothing.
		next := r.drift.due(idx, rev.Collection, st.alias, r.Options.DriftInterval, time.Now())
		if next == 0 {
			if ok, err := st.store.CollectionExists(ctx, rev.Collection); err != nil || !ok {
				if err == nil {
					err = &vectorstore.CollectionNotFoundError{Op: "check collection", Collection: rev.Collection}
				}
				return r.collectionError(ctx, st, rev, "read collection "+rev.Collection, err)
			}
			target, found, err := st.store.GetAlias(ctx, st.alias)
			if err != nil {
				return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeRetrying, ReasonWeaviateError, fmt.Sprintf("read alias %s: %v", st.alias, err)), nil
			}
			if !found || target != rev.Collection {
				if err := st.store.SetAlias(ctx, st.alias, rev.Collection); err != nil {
					return r.collectionError(ctx, st, rev, fmt.Sprintf("point alias %s at %s", st.alias, rev.Collection), err)
				}
			}
			r.drift.passed(idx, rev.Collection, st.alias, time.Now())
			next = r.Options.DriftInterval
		}
		if rev.ServedTime == nil {
			// Recorded before ServedTime existed: it serves now, so it served.
			rev.ServedTime = ptr.To(metav1.Now())
		}
		idx.Status.Chunks = rev.Chunks
		metrics.SetActiveRevision(idx.Namespace, idx.Name, rev.Name)
		return reconcile.ProceedFor(jitter(next)), nil
	}
	gate := idx.Spec.Rollout.Gate
	gated := idx.Spec.Rollout.Policy == ragopsv1alpha1.RolloutEvaluationGated && gate != nil
	if rev.Phase == ragopsv1alpha1.RevisionRejected {
		res, err, again := r.reconsiderRejected(ctx, st, rev, gated)
		if !again {
			return res, err
		}
	}
	// The candidate catches up with the Corpus before it is gated and takes the alias: it
	// must not serve documents deleted since its build began, and the gate measures it on the
	// corpus revision it will serve.
	if done, res, err := r.syncRevision(ctx, st, rev); err != nil || !done {
		if res.Outcome == reconcile.OutcomeProgressingKeepReady {
			res.Outcome = reconcile.OutcomeProgressing
			res.Message = fmt.Sprintf("revision %s catches up with the Corpus before it is gated and takes the alias: %s", rev.Name, res.Message)
		}
		res.Stop = true
		return res, err
	}
	// A kept revision that served before (a revert) takes the alias back without a gate.
	gatedNow := gated && rev.ServedTime == nil && active != nil
	if gatedNow {
		v, err := r.reconcileGate(ctx, st, rev, active)
		if err != nil {
			return reconcile.Stop.With(reconcile.OutcomeProgressing, ReasonGating, v.message), err
		}
		switch v.state {
		case gateWaiting:
			return reconcile.Stop.With(reconcile.OutcomeProgressing, ReasonGating, v.message), nil
		case gateEvaluationStalled:
			return reconcile.Stalled(ReasonGateEvaluationFailed, v.message+retryHint(idx)), nil
		case gateRejected:
			rev.Phase, rev.Message = ragopsv1alpha1.RevisionRejected, v.message
			st.events.Eventf(idx, nil, corev1.EventTypeWarning, ReasonGateFailed, "Rollout", "%s", v.message)
			return reconcile.Stalled(ReasonGateFailed, v.message), nil
		}
	}
	// A collection wired to a model server takes the alias once that server is ready.
	if res, wait := r.awaitServing(ctx, st, rev); wait {
		return res, nil
	}
	if err := st.store.SetAlias(ctx, st.alias, rev.Collection); err != nil {
		return r.collectionError(ctx, st, rev, fmt.Sprintf("point alias %s at %s", st.alias, rev.Collection), err)
	}
	from := idx.Status.ActiveRevision
	if active != nil {
		active.Phase = ragopsv1alpha1.RevisionReady
	}
	rev.Phase = ragopsv1alpha1.RevisionActive
	rev.Message = ""
	rev.ServedTime = ptr.To(metav1.Now())
	idx.Status.ActiveRevision = rev.Name
	idx.Status.Chunks = rev.Chunks
	metrics.SetActiveRevision(idx.Namespace, idx.Name, rev.Name)
	if gatedNow && rev.GateMessage != "" {
		st.events.Eventf(idx, nil, corev1.EventTypeNormal, ReasonGatePassed, "Rollout", "%s", rev.GateMessage)
	}
	st.events.Eventf(idx, nil, corev1.EventTypeNormal, "AliasMoved", "Rollout", "alias %s: revision %q -> %q", st.alias, from, rev.Name)
	log.FromContext(ctx).Info("alias moved", "alias", st.alias, "from", from, "to", rev.Name)
	// It caught up with the Corpus just above: it serves (the sync step ran before the move).
	moved := reconcile.ProceedFor(jitter(r.Options.DriftInterval)).With(reconcile.OutcomeReady, ReasonActive, servingMessage(rev, st.alias))
	// status.serving and ServingReady were read before the move: they name the revision
	// behind the alias in the same status write that records the move.
	return r.servingStatus(ctx, st).Merge(moved), nil
}

// collectionError handles a failed Weaviate call about a built revision's collection. When
// the collection is gone (Weaviate's data lost, deleted by hand) no alias can point at it
// again, so the revision is rebuilt under a new Job (Attempt + 1) and the Index is not Ready
// meanwhile; any other failure retries after ProgressInterval.
func (r *IndexReconciler) collectionError(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, op string, err error) (reconcile.Result, error) {
	idx := st.idx
	var nf *vectorstore.CollectionNotFoundError
	if !errors.As(err, &nf) || nf.Collection != rev.Collection {
		return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeRetrying, ReasonWeaviateError, fmt.Sprintf("%s: %v", op, err)), nil
	}
	if lost, why := confirmLost(ctx, st.store, rev.Collection, lossConfirmations, r.Options.lossConfirmWait()); !lost {
		// One 404 (a node restarting, a schema read served by a lagging node) is not a loss.
		// Ready is left as it is: what serves still serves.
		return reconcile.StopFor(r.Options.ProgressInterval).With(reconcile.OutcomeProgressingKeepReady, ReasonWeaviateError, fmt.Sprintf("%s: %v; not confirmed (%s): not rebuilding", op, err, why)), nil
	}
	if err := r.restartBuild(ctx, st, rev, fmt.Sprintf("collection %s is missing from Weaviate", rev.Collection)); err != nil {
		return reconcile.Stop, err
	}
	st.events.Eventf(idx, nil, corev1.EventTypeWarning, ReasonCollectionLost, "Rebuild", "revision %s: %s", rev.Name, rev.Message)
	return reconcile.StopFor(time.Second).With(reconcile.OutcomeRetrying, ReasonCollectionLost, fmt.Sprintf("revision %s: %s", rev.Name, rev.Message)), nil
}

// lossConfirmations is how many more reads must find a collection missing, spread over
// Options.lossConfirmWait each, before it counts as lost and is rebuilt.
const lossConfirmations = 3

// confirmLost reads whether collection exists n more times, wait apart, and reports a loss
// only when every read answers "missing"; otherwise why says what a read found.
func confirmLost(ctx context.Context, store Store, collection string, n int, wait time.Duration) (bool, string) {
	for i := range n {
		if i > 0 || wait > 0 {
			select {
			case <-ctx.Done():
				return false, ctx.Err().Error()
			case <-time.After(wait):
			}
		}
		ok, err := store.CollectionExists(ctx, collection)
		if err != nil {
			return false, fmt.Sprintf("read %d of %d failed: %v", i+1, n, err)
		}
		if ok {
			return false, fmt.Sprintf("read %d of %d found the collection", i+1, n)
		}
	}
	return true, ""
}

// gateEvaluationName names the gating Evaluation of a revision.
func gateEvaluationName(idx *ragopsv1alpha1.Index, rev string) string {
	return fmt.Sprintf("%s-gate-%s", workload.ObjectName(idx.Name, 40), rev)
}

// gateState is where a candidate's gate stands.
type gateState int

const (
	// gateWaiting: a gating Evaluation (the candidate's or the baseline's) has not finished.
	gateWaiting gateState = iota
	// gatePassed: the candidate may take the alias.
	gatePassed
	// gateRejected: the candidate failed minRecall or maxRegression.
	gateRejected
	// gateEvaluationStalled: a gating Evaluation failed; the gate cannot decide until it is
	// fixed and retried.
	gateEvaluationStalled
)

// gateVerdict is the state of a candidate's gate, explained by message.
type gateVerdict struct {
	state   gateState
	message string
}

// gateHash hashes the gate spec a decision is made under (Evaluation parameters and bounds).
func gateHash(g *ragopsv1alpha1.RolloutGate) string {
	if g == nil {
		return ""
	}
	return hashJSON(g)[:10]
}

// reconsiderRejected decides whether a Rejected revision is gated again: when the gate
// changed since it was rejected (a lowered minRecall, a fixed dataset), when the policy no
// longer gates it, or on a new ragops.dev/retry value. again reports that the rollout goes on
// with the revision (now Ready); otherwise res is the step's result.
func (r *IndexReconciler) reconsiderRejected(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, gated bool) (res reconcile.Result, err error, again bool) {
	idx := st.idx
	switch retry := idx.Annotations[AnnotationRetry]; {
	case !gated || rev.GateHash != gateHash(idx.Spec.Rollout.Gate):
		rev.Message = "the gate changed since the revision was rejected: gating it again"
	case retry != "" && retry != idx.Status.LastHandledRetry:
		idx.Status.LastHandledRetry = retry
		// The gating Evaluation runs anew (the dataset behind it may have been fixed).
		if err := r.retryGateEvaluation(ctx, idx, rev.Name, retry); err != nil {
			return reconcile.Stop, err, false
		}
		rev.Message = fmt.Sprintf("retry requested (%s=%s): gating again", AnnotationRetry, retry)
	default:
		return reconcile.Stalled(ReasonGateFailed, rev.Message+retryHint(idx)), nil, false
	}
	rev.Phase, rev.GateRecall, rev.GateHash, rev.GateMessage = ragopsv1alpha1.RevisionReady, nil, "", ""
	return reconcile.Proceed, nil, true
}

// reconcileGate runs the gating Evaluations of the candidate (and of the active revision
// when maxRegression needs its baseline) and decides. The candidate's recall is recorded as
// soon as it is known; the decision waits for the baseline when maxRegression needs one, and
// whether a revision served before is told by ServedTime alone, so a recorded recall never
// lets a candidate through ungated.
func (r *IndexReconciler) reconcileGate(ctx context.Context, st *indexState, cand, active *ragopsv1alpha1.RevisionStatus) (gateVerdict, error) {
	idx := st.idx
	gate := idx.Spec.Rollout.Gate
	hash := gateHash(gate)
	cand.Phase = ragopsv1alpha1.RevisionGating
	// Both sides are measured on the corpus revision the candidate synced just before.
	corpus := cand.CorpusRevision
	candRecall, v, err := r.gateRecall(ctx, idx, cand, hash, corpus)
	if err != nil || v.state != gatePassed {
		return v, err
	}
	cand.GateRecall, cand.GateHash, cand.GateMessage = ptr.To(candRecall), hash, ""
	if gate.MinRecall != nil && candRecall < *gate.MinRecall {
		return gateVerdict{gateRejected, fmt.Sprintf("revision %s recall@10 %.4f is below minRecall %.4f; alias stays on %s", cand.Name, candRecall, *gate.MinRecall, active.Name)}, nil
	}
	if gate.MaxRegression != nil {
		if corpus != "" && active.CorpusRevision != corpus {
			// Its sync runs in reconcileCorpusSync.
			return gateVerdict{gateWaiting, fmt.Sprintf("revision %s recall@10 %.4f on corpus revision %s; the active revision %s (corpus revision %q) syncs it before it is measured as the gate's baseline",
				cand.Name, candRecall, corpus, active.Name, active.CorpusRevision)}, nil
		}
		base, v, err := r.gateRecall(ctx, idx, active, hash, corpus)
		if err != nil || v.state != gatePassed {
			if v.state == gateWaiting {
				v.message = fmt.Sprintf("revision %s recall@10 %.4f; measuring the active revision %s as the gate's baseline: %s", cand.Name, candRecall, active.Name, v.message)
			}
			return v, err
		}
		active.GateRecall, active.GateHash = ptr.To(base), hash
		v, err = r.regressionVerdict(ctx, idx, cand, active, candRecall, base)
		if v.state == gatePassed || v.state == gateRejected {
			cand.GateMessage = v.message
		}
		return v, err
	}
	return gateVerdict{state: gatePassed}, nil
}

// gateRecall returns the recall@10 of a revision's gating Evaluation under the gate of hash
// hash, measured on corpus revision corpus ("" when the Corpus has none): the Evaluation's
// once the run its spec and retry value ask for is collected (gateRun), creating it when
// missing and replacing one whose parameters the gate no longer has. A run of another
// corpus revision is measured again (a ragops.dev/retry value corpus-<revision>); the
// revision has synced corpus by then. The Evaluation is read from the API server: a retry or
// re-measure this reconcile asked for is in what it reads, so figures from before it are
// never taken for its. The verdict is gatePassed when the recall is known, gateWaiting
// while it runs, and gateEvaluationStalled when the Evaluation failed; a new
// ragops.dev/retry value then runs it again.
func (r *IndexReconciler) gateRecall(ctx context.Context, idx *ragopsv1alpha1.Index, rev *ragopsv1alpha1.RevisionStatus, hash, corpus string) (float64, gateVerdict, error) {
	name := gateEvaluationName(idx, rev.Name)
	wait := func(why string) gateVerdict {
		return gateVerdict{gateWaiting, fmt.Sprintf("revision %s waits for its gating Evaluation %s: %s", rev.Name, name, why)}
	}
	params := idx.Spec.Rollout.Gate.Evaluation
	paramsHash := hashJSON(params)[:10]
	var ev ragopsv1alpha1.Evaluation
	err := r.Options.reader(r.Client).Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: name}, &ev)
	if apierrors.IsNotFound(err) {
		ev = ragopsv1alpha1.Evaluation{
			ObjectMeta: metav1.ObjectMeta{Namespace: idx.Namespace, Name: name, Labels: workload.ObjectLabels("gate", idx.Name, rev.Name),
				Annotations: map[string]string{AnnotationGateParameters: paramsHash}},
			Spec: ragopsv1alpha1.EvaluationSpec{
				IndexRef: ragopsv1alpha1.LocalObjectReference{Name: idx.Name}, Revision: rev.Name,
				RerunOnRevisionChange: ptr.To(false), EvaluationParameters: *params.DeepCopy(),
			},
		}
		if corpus != "" {
			ev.Annotations[workload.AnnotationCorpusRevision] = corpus // its run waits until the revision holds it
		}
		if err := controllerutil.SetControllerReference(idx, &ev, r.Scheme()); err != nil {
			return 0, wait("creating it"), err
		}
		return 0, wait("created"), r.Create(ctx, &ev)
	}
	if err != nil {
		return 0, wait("reading it"), err
	}
	if !ev.DeletionTimestamp.IsZero() {
		return 0, wait("it is being deleted"), nil
	}
	if ev.Annotations[AnnotationGateParameters] != paramsHash {
		// The gate's dataset or mode changed: measure under the new parameters (a new
		// generation, so a new Job). An Evaluation made before the annotation gets it here;
		// its spec patch is then a no-op and its figures stand.
		base := ev.DeepCopy()
		ev.Spec.EvaluationParameters = *params.DeepCopy()
		metav1.SetMetaDataAnnotation(&ev.ObjectMeta, AnnotationGateParameters, paramsHash)
		if err := r.Patch(ctx, &ev, client.MergeFrom(base)); err != nil || ev.Generation != base.Generation {
			return 0, wait("its parameters changed"), err
		}
	}
	if c := stalledGateEvaluation(&ev); c != nil {
		if retry := idx.Annotations[AnnotationRetry]; retry != "" && retry != idx.Status.LastHandledRetry {
			// The Evaluation runs again under the same retry value (a new Job).
			idx.Status.LastHandledRetry = retry
			return 0, wait("retry requested"), r.retryGateEvaluation(ctx, idx, rev.Name, retry)
		}
		return 0, gateVerdict{gateEvaluationStalled, fmt.Sprintf("gating Evaluation %s of revision %s failed (%s: %s); the gate cannot decide", name, rev.Name, c.Reason, c.Message)}, nil
	}
	if corpus != "" && ev.Annotations[workload.AnnotationCorpusRevision] != corpus {
		// The gate measures on another corpus revision than the Evaluation was asked for: its
		// next run waits for the revision to hold it, and a run of another one is made again.
		retry := ev.Annotations[AnnotationRetry]
		if measured := measuredCorpus(&ev); measured != corpus {
			retry = corpusRetryPrefix + corpus
		}
		if err := r.measureOn(ctx, idx, rev.Name, corpus, retry); err != nil {
			return 0, wait("asking it to measure corpus revision " + corpus), err
		}
		return 0, wait(fmt.Sprintf("its last run measured corpus revision %q; measuring revision %s on corpus revision %s", measuredCorpus(&ev), rev.Name, corpus)), nil
	}
	if why := gateRun(&ev, rev.Name); why != "" {
		return 0, wait(why), nil
	}
	if measured := measuredCorpus(&ev); corpus != "" && measured != corpus {
		// Asked for corpus, but run before the revision held it (an Evaluation from before
		// the annotation): measured again.
		if err := r.measureOn(ctx, idx, rev.Name, corpus, corpusRetryPrefix+corpus+"-"+measured); err != nil {
			return 0, wait("asking it to measure corpus revision " + corpus), err
		}
		return 0, wait(fmt.Sprintf("its last run measured corpus revision %q; measuring revision %s on corpus revision %s", measured, rev.Name, corpus)), nil
	}
	return *ev.Status.RecallAt10, gateVerdict{state: gatePassed}, nil
}

// measureOn asks a revision's gating Evaluation to measure corpus revision corpus: its
// ragops.dev/corpus-revision annotation (a run starts once the revision holds it) and its
// ragops.dev/retry value retry (a new value starts a new Job).
func (r *IndexReconciler) measureOn(ctx context.Context, idx *ragopsv1alpha1.Index, rev, corpus, retry string) error {
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: idx.Namespace, Name: gateEvaluationName(idx, rev)}}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q,%q:%q}}}`, workload.AnnotationCorpusRevision, corpus, AnnotationRetry, retry)
	return client.IgnoreNotFound(r.Patch(ctx, ev, client.RawPatch(types.MergePatchType, patch)))
}

// retryGateEvaluation runs a revision's gating Evaluation again: it sets the Evaluation's
// ragops.dev/retry annotation to retry, which starts a new Job.
func (r *IndexReconciler) retryGateEvaluation(ctx context.Context, idx *ragopsv1alpha1.Index, rev, retry string) error {
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: idx.Namespace, Name: gateEvaluationName(idx, rev)}}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, AnnotationRetry, retry)
	return client.IgnoreNotFound(r.Patch(ctx, ev, client.RawPatch(types.MergePatchType, patch)))
}
