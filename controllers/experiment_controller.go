package controllers

// Experiment: expand the space into trials (experiment/trials), run them as owned
// ChunkingStrategies, Indexes and Evaluations under parallelism and the token budget
// (experiment/budget), rank the candidates and clean up the losers when done.
//
// The children are the Experiment's memory: a trial is started exactly when its Index exists
// (names are deterministic, so a restarted operator finds what it made and creates nothing
// twice), and its phase is read from the Index's revision and its Evaluations every
// reconcile. Only what the children cannot tell is kept in status: a trial's token estimate,
// and the figures of finished trials whose children were cleaned up.

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/experiment/budget"
	"github.com/ragops/ragops/experiment/trials"
	"github.com/ragops/ragops/internal/conditions"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/internal/reconcile"
)

// Experiment condition reasons (besides ragopsv1alpha1's ReasonTooManyFailedTrials,
// ReasonInvalidSpace and ReasonBudgetExhausted).
const (
	ReasonChildConflict  = "ChildConflict"
	ReasonExperimentDone = "Completed"
	ReasonWithinBudget   = "WithinBudget"
)

// ExperimentReconciler runs an Experiment's trials.
type ExperimentReconciler struct {
	client.Client
	Events  events.EventRecorder
	Options Options
	// Estimator estimates a trial's tokens before it starts; nil means a LocalEstimator
	// reading through Options.APIReader.
	Estimator TrialEstimator

	written ownWrites
	paired  pairedCache
}

// +kubebuilder:rbac:groups=ragops.dev,resources=experiments,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=ragops.dev,resources=experiments/status,verbs=patch
// +kubebuilder:rbac:groups=ragops.dev,resources=experiments/finalizers,verbs=update
// +kubebuilder:rbac:groups=ragops.dev,resources=indexes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=ragops.dev,resources=evaluations,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=ragops.dev,resources=chunkingstrategies,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=ragops.dev,resources=corpora,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// experimentChildren are the objects an Experiment controls, by name.
type experimentChildren struct {
	indexes     map[string]*ragopsv1alpha1.Index
	evaluations map[string]*ragopsv1alpha1.Evaluation
	strategies  map[string]*ragopsv1alpha1.ChunkingStrategy
}

// Reconcile drives one Experiment.
func (r *ExperimentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	var exp ragopsv1alpha1.Experiment
	if err := r.Get(ctx, req.NamespacedName, &exp); err != nil {
		r.written.forget(req.NamespacedName)
		if apierrors.IsNotFound(err) {
			metrics.ForgetConditions(req.Namespace, "Experiment", req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.written.behind(&exp) {
		return ctrl.Result{RequeueAfter: cacheCatchUp}, nil
	}
	defer r.written.record(&exp, exp.ResourceVersion)
	if !exp.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, &exp)
	}
	if !controllerutil.ContainsFinalizer(&exp, Finalizer) {
		before := exp.DeepCopy()
		controllerutil.AddFinalizer(&exp, Finalizer)
		if err := r.Patch(ctx, &exp, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, err
		}
	}
	patcher := reconcile.NewStatusPatcher(&exp, needsAPerson)
	defer func() {
		exp.Status.ObservedGeneration = exp.Generation
		patcher.Done(ctx, r.Client, r.Events, &exp, &res, &retErr)
	}()
	result, err := reconcile.Run(ctx, &experimentState{exp: &exp},
		r.listChildren,
		r.resolveSpace,
		r.readTrials,
		r.estimateTrials,
		r.startTrials,
		r.rankTrials,
	)
	res = reconcile.Summarize(&exp, result)
	if err != nil {
		return ctrl.Result{}, err // the work queue backs off
	}
	return res, nil
}

// experimentState carries what the steps of an Experiment reconcile resolve.
type experimentState struct {
	exp      *ragopsv1alpha1.Experiment
	children *experimentChildren
	corpus   ragopsv1alpha1.Corpus
	plan     *trials.Plan
	// statuses[i] is plan.Trials[i]'s status (readTrials, then startTrials); dropped are
	// the trials a spec change took out of the space whose builds spent tokens.
	statuses []ragopsv1alpha1.TrialStatus
	dropped  []ragopsv1alpha1.TrialStatus
	// ledger counts what the trials hold of the limits; limits are the spec's.
	ledger trialLedger
	limits trialLimits
	// waitEstimate is not empty while an estimate Job runs (jobEstimates).
	waitEstimate string
	// exhausted are the messages of the trials the budget did not start.
	exhausted []string
	// screening is the screening round's outcome.
	screening screeningOutcome
	// conflicts are the trials whose child's name another object holds (Stalled
	// ChildConflict).
	conflicts []string
}

// listChildren lists the Experiment's children; a finished Experiment whose spec is the one
// that finished only promotes its winner (spec.promote) and cleans up.
func (r *ExperimentReconciler) listChildren(ctx context.Context, st *experimentState) (reconcile.Result, error) {
	exp := st.exp
	if exp.Status.StartTime == nil {
		exp.Status.StartTime = ptr.To(metav1.Now())
	}
	children, err := r.children(ctx, exp)
	if err != nil {
		return reconcile.Stop, err
	}
	st.children = children
	if exp.Status.CompletionTime != nil && exp.Status.ObservedGeneration == exp.Generation {
		res, err := r.promote(ctx, exp, children)
		if err != nil {
			return reconcile.Stop, err
		}
		res.Stop = true
		return res, r.cleanup(ctx, exp, children)
	}
	return reconcile.Proceed, nil
}

// resolveSpace fetches the Corpus and the referenced strategies, validates the space,
// creates the generated strategies and expands the trials; it stalls with a condition that
// names the field at fault.
func (r *ExperimentReconciler) resolveSpace(ctx context.Context, st *experimentState) (reconcile.Result, error) {
	exp := st.exp
	if err := r.Get(ctx, client.ObjectKey{Namespace: exp.Namespace, Name: exp.Spec.CorpusRef.Name}, &st.corpus); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Stalled(ReasonCorpusNotFound, fmt.Sprintf("spec.corpusRef.name: Corpus %q not found", exp.Spec.CorpusRef.Name)), nil
		}
		return reconcile.Stop, err
	}
	referenced := map[string]ragopsv1alpha1.ChunkingStrategySpec{}
	for i, s := range exp.Spec.Space.Strategies {
		if s.StrategyRef == nil {
			continue
		}
		var cs ragopsv1alpha1.ChunkingStrategy
		if err := r.Get(ctx, client.ObjectKey{Namespace: exp.Namespace, Name: s.StrategyRef.Name}, &cs); err != nil {
			if apierrors.IsNotFound(err) {
				return reconcile.Stalled(ReasonStrategyNotFound, fmt.Sprintf("spec.space.strategies[%d].strategyRef.name: ChunkingStrategy %q not found", i, s.StrategyRef.Name)), nil
			}
			return reconcile.Stop, err
		}
		referenced[cs.Name] = cs.Spec
	}
	if err := trials.Validate(&exp.Spec); err != nil {
		return reconcile.Stalled(ragopsv1alpha1.ReasonInvalidSpace, err.Error()), nil
	}
	// The generated strategies exist before the revisions are computed: an Index's revision
	// hashes the strategy as stored (defaults applied), and so must the trials'.
	stored, msg, err := r.ensureStrategies(ctx, exp, st.children)
	if err != nil {
		return reconcile.Stop, err
	}
	if msg != "" {
		return reconcile.Stalled(ReasonChildConflict, msg), nil
	}
	for name, s := range referenced {
		stored[name] = s
	}
	p, err := trials.Expand(trials.Input{Experiment: exp, Referenced: referenced, Format: st.corpus.Spec.Format,
		Revision: func(s ragopsv1alpha1.ChunkingStrategySpec, idx *ragopsv1alpha1.Index, f ragopsv1alpha1.DocumentFormat) string {
			if st, ok := stored[idx.Spec.StrategyRef.Name]; ok {
				s = st
			}
			return Revision(s, idx, f)
		}})
	if err != nil {
		return reconcile.Stalled(ragopsv1alpha1.ReasonInvalidSpace, err.Error()), nil
	}
	if err := r.pruneChildren(ctx, p, st.children); err != nil {
		return reconcile.Stop, err
	}
	st.plan = p
	return reconcile.Proceed, nil
}

// children lists the Indexes, Evaluations and ChunkingStrategies exp controls.
func (r *ExperimentReconciler) children(ctx context.Context, exp *ragopsv1alpha1.Experiment) (*experimentChildren, error) {
	ch := &experimentChildren{indexes: map[string]*ragopsv1alpha1.Index{}, evaluations: map[string]*ragopsv1alpha1.Evaluation{},
		strategies: map[string]*ragopsv1alpha1.ChunkingStrategy{}}
	opts := []client.ListOption{client.InNamespace(exp.Namespace), client.HasLabels{ragopsv1alpha1.LabelExperiment}}
	var idxs ragopsv1alpha1.IndexList
	if err := r.List(ctx, &idxs, opts...); err != nil {
		return nil, err
	}
	for i := range idxs.Items {
		if metav1.IsControlledBy(&idxs.Items[i], exp) {
			ch.indexes[idxs.Items[i].Name] = &idxs.Items[i]
		}
	}
	var evs ragopsv1alpha1.EvaluationList
	if err := r.List(ctx, &evs, opts...); err != nil {
		return nil, err
	}
	for i := range evs.Items {
		if metav1.IsControlledBy(&evs.Items[i], exp) {
			ch.evaluations[evs.Items[i].Name] = &evs.Items[i]
		}
	}
	var css ragopsv1alpha1.ChunkingStrategyList
	if err := r.List(ctx, &css, opts...); err != nil {
		return nil, err
	}
	for i := range css.Items {
		if metav1.IsControlledBy(&css.Items[i], exp) {
			ch.strategies[css.Items[i].Name] = &css.Items[i]
		}
	}
	return ch, nil
}

// ensureStrategies creates the ChunkingStrategy of every template combination of the space
// (all of them, drawn or not, so that a Random draw hashes the same revisions every time) and
// returns their specs as stored. A strategy of that name the Experiment does not control is a
// conflict: msg names it.
func (r *ExperimentReconciler) ensureStrategies(ctx context.Context, exp *ragopsv1alpha1.Experiment, ch *experimentChildren) (stored map[string]ragopsv1alpha1.ChunkingStrategySpec, msg string, err error) {
	stored = map[string]ragopsv1alpha1.ChunkingStrategySpec{}
	combos, _ := trials.Strategies(&exp.Spec.Space)
	for _, c := range combos {
		if c.Ref != "" {
			continue
		}
		name := trials.StrategyName(exp.Name, c.Name)
		if _, done := stored[name]; done {
			continue
		}
		gen := hashJSON(c.Spec)[:16]
		if cs, ok := ch.strategies[name]; ok {
			if cs.Annotations[annotationGenerated] != gen {
				cs.Spec = *c.Spec.DeepCopy()
				metav1.SetMetaDataAnnotation(&cs.ObjectMeta, annotationGenerated, gen)
				if err := r.Update(ctx, cs); err != nil {
					return nil, "", err
				}
			}
			stored[name] = cs.Spec
			continue
		}
		cs := &ragopsv1alpha1.ChunkingStrategy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: exp.Namespace,
			Labels:      map[string]string{ragopsv1alpha1.LabelExperiment: trials.Label(exp.Name)},
			Annotations: map[string]string{annotationGenerated: gen}}, Spec: *c.Spec.DeepCopy()}
		if err := controllerutil.SetControllerReference(exp, cs, r.Scheme()); err != nil {
			return nil, "", err
		}
		if err := r.Create(ctx, cs); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil, fmt.Sprintf("%s: ChunkingStrategy %q exists and is not this Experiment's; rename the template or the strategy", c.Field, name), nil
			}
			return nil, "", err
		}
		ch.strategies[name] = cs
		stored[name] = cs.Spec // the response: defaults applied
	}
	return stored, "", nil
}

// annotationGenerated on a generated ChunkingStrategy holds a hash of the template
// combination's spec it was made from (before the apiserver's defaults), so that a changed
// template updates it and an unchanged one leaves it alone.
const annotationGenerated = "ragops.dev/generated-from"

// pruneChildren deletes the Indexes and Evaluations of trials (and variants) no longer in the
// plan: a spec change dropped them.
func (r *ExperimentReconciler) pruneChildren(ctx context.Context, p *trials.Plan, ch *experimentChildren) error {
	wantIdx, wantEval := map[string]bool{}, map[string]bool{}
	for _, t := range p.Trials {
		wantIdx[t.Name] = true
		for _, ev := range t.Evaluations {
			wantEval[ev.Name] = true
		}
	}
	for name, ev := range ch.evaluations {
		if !wantEval[name] {
			if err := r.Delete(ctx, ev); client.IgnoreNotFound(err) != nil {
				return err
			}
			delete(ch.evaluations, name)
		}
	}
	for name, idx := range ch.indexes {
		if !wantIdx[name] {
			if idx.DeletionTimestamp.IsZero() {
				if err := r.Delete(ctx, idx); client.IgnoreNotFound(err) != nil {
					return err
				}
			}
			delete(ch.indexes, name)
		}
	}
	return nil
}

// isTerminal reports whether a trial phase is final.
func isTerminal(p ragopsv1alpha1.TrialPhase) bool {
	return p == ragopsv1alpha1.TrialSucceeded || p == ragopsv1alpha1.TrialFailed || p == ragopsv1alpha1.TrialSkipped
}

// comparisonRetry is when a reconcile whose paired comparisons could not all be read runs
// again.
const comparisonRetry = 10 * time.Second

// droppedMessage starts the message of a trial a spec change took out of the space.
const droppedMessage = "no longer in the space"

// estimate returns the trial's token estimate, computed once per revision and kept in ts; a
// screening trial's is its sample's (toSample).
func (r *ExperimentReconciler) estimate(ctx context.Context, exp *ragopsv1alpha1.Experiment, c *ragopsv1alpha1.Corpus, t *trials.Trial, ts *ragopsv1alpha1.TrialStatus) (budget.Estimate, error) {
	if ts.EstimateSampleDocuments > 0 {
		return budget.Estimate{Tokens: ts.EstimatedTokens, SampleDocuments: int(ts.EstimateSampleDocuments),
			Population: budget.Population{Documents: c.Status.Documents, Bytes: c.Status.Bytes}, ScaledBy: "bytes"}, nil
	}
	est := r.Estimator
	if est == nil {
		est = &LocalEstimator{Reader: r.Options.reader(r.Client)}
		r.Estimator = est
	}
	e, err := est.EstimateTrial(ctx, exp, c, t)
	if err != nil {
		return budget.Estimate{}, err
	}
	e.Tokens = r.toSample(ctx, exp, t, e.Tokens, e.Population.Documents) // a screening trial builds its sample only
	ts.EstimatedTokens, ts.EstimateSampleDocuments = e.Tokens, int64(e.SampleDocuments)
	return e, nil
}

// ensureTrial creates the trial's Index and Evaluations where missing and brings their specs
// to the plan's (a spec change that keeps the trial's name). A name taken by an object the
// Experiment does not control is a *childConflictError.
func (r *ExperimentReconciler) ensureTrial(ctx context.Context, exp *ragopsv1alpha1.Experiment, t *trials.Trial, ch *experimentChildren) error {
	if idx, ok := ch.indexes[t.Name]; ok {
		want := t.Index.Spec
		if !idx.DeletionTimestamp.IsZero() {
			return nil // a deleted trial Index goes first; the next reconcile starts it anew
		}
		if idx.Spec.StrategyRef != want.StrategyRef || idx.Spec.CorpusRef != want.CorpusRef ||
			!equality.Semantic.DeepEqual(idx.Spec.Model, want.Model) || !equality.Semantic.DeepEqual(idx.Spec.Weaviate, want.Weaviate) ||
			!sameSample(idx.Spec.Sample, want.Sample) ||
			(idx.Status.Revision != "" && idx.Status.Revision != t.Revision) {
			idx.Spec.StrategyRef, idx.Spec.CorpusRef, idx.Spec.Model, idx.Spec.Weaviate = want.StrategyRef, want.CorpusRef, want.Model, want.Weaviate
			idx.Spec.Embedder, idx.Spec.VectorIndex, idx.Spec.Sample = want.Embedder, want.VectorIndex, want.Sample.DeepCopy()
			if err := r.Update(ctx, idx); err != nil {
				return err
			}
		}
	} else {
		idx := t.Index.DeepCopy()
		if err := controllerutil.SetControllerReference(exp, idx, r.Scheme()); err != nil {
			return err
		}
		if err := r.Create(ctx, idx); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return &childConflictError{trial: t.Name, kind: "Index", name: idx.Name}
			}
			return err
		}
		ch.indexes[idx.Name] = idx
	}
	for _, want := range t.Evaluations {
		if ev, ok := ch.evaluations[want.Name]; ok {
			if ev.Spec.Revision != want.Spec.Revision || ev.Spec.IndexRef != want.Spec.IndexRef {
				ev.Spec = *want.Spec.DeepCopy()
				if err := r.Update(ctx, ev); err != nil {
					return err
				}
			}
			continue
		}
		ev := want.DeepCopy()
		if err := controllerutil.SetControllerReference(exp, ev, r.Scheme()); err != nil {
			return err
		}
		if err := r.Create(ctx, ev); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return &childConflictError{trial: t.Name, kind: "Evaluation", name: ev.Name}
			}
			return err
		}
		ch.evaluations[ev.Name] = ev
	}
	return nil
}

// childConflictError is ensureTrial's error when a trial's Index or Evaluation name is taken
// by an object the Experiment does not control (the informer lists only its own children,
// so a create is what finds it).
type childConflictError struct {
	trial, kind, name string
}

func (e *childConflictError) Error() string {
	return fmt.Sprintf("trial %s: %s %q exists and is not this Experiment's; delete or rename it, or rename the Experiment", e.trial, e.kind, e.name)
}

// sameSample reports whether a trial Index's sample is the plan's (spec.screening's fraction
// and seed; the judged dataset follows spec.dataset).
func sameSample(a, b *ragopsv1alpha1.DocumentSample) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Fraction == b.Fraction && a.Seed == b.Seed
}

// reconcileDelete deletes the children (the Indexes first, which delete their collections
// through their own finalizer) and removes the finalizer once none is left.
func (r *ExperimentReconciler) reconcileDelete(ctx context.Context, exp *ragopsv1alpha1.Experiment) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(exp, Finalizer) {
		return ctrl.Result{}, nil
	}
	ch, err := r.children(ctx, exp)
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, ev := range ch.evaluations {
		if err := r.Delete(ctx, ev); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
	}
	for _, idx := range ch.indexes {
		if idx.DeletionTimestamp.IsZero() {
			if err := r.Delete(ctx, idx); client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
		}
	}
	if len(ch.indexes) > 0 {
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	for _, cs := range ch.strategies {
		if err := r.Delete(ctx, cs); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
	}
	before := exp.DeepCopy()
	controllerutil.RemoveFinalizer(exp, Finalizer)
	return ctrl.Result{}, client.IgnoreNotFound(r.Patch(ctx, exp, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
}

// cleanup deletes, once the Experiment is done, the Indexes and Evaluations of the trials
// spec.cleanup does not keep (cleanupTrials), and the generated strategies no kept trial
// uses.
func (r *ExperimentReconciler) cleanup(ctx context.Context, exp *ragopsv1alpha1.Experiment, ch *experimentChildren) error {
	usedStrategies, err := r.cleanupTrials(ctx, exp, ch)
	if err != nil || usedStrategies == nil {
		return err
	}
	for name, cs := range ch.strategies {
		if !usedStrategies[name] {
			if err := r.Delete(ctx, cs); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// cleanupTrials deletes the Indexes (their collections and model servers with them) and
// Evaluations of the trials spec.cleanup does not keep, and returns the strategies the kept
// trials use (nil for KeepAll, which deletes nothing).
func (r *ExperimentReconciler) cleanupTrials(ctx context.Context, exp *ragopsv1alpha1.Experiment, ch *experimentChildren) (usedStrategies map[string]bool, err error) {
	if exp.Spec.Cleanup == ragopsv1alpha1.CleanupKeepAll {
		return nil, nil
	}
	keep := map[string]bool{}
	if o := exp.Status.CurrentOptimalTrial; o != nil {
		keep[o.Trial] = true
	}
	if b := baselineTrial(exp, exp.Status.Trials); b != "" {
		keep[b] = true
	}
	if exp.Spec.Cleanup == ragopsv1alpha1.CleanupKeepLeaderboard {
		for _, e := range exp.Status.Leaderboard {
			keep[e.Trial] = true
		}
	}
	usedStrategies = map[string]bool{}
	for name, idx := range ch.indexes {
		if keep[name] {
			usedStrategies[idx.Spec.StrategyRef.Name] = true
			continue
		}
		if idx.DeletionTimestamp.IsZero() {
			if err := r.Delete(ctx, idx); client.IgnoreNotFound(err) != nil {
				return nil, err
			}
		}
	}
	for _, ev := range ch.evaluations {
		if !keep[ev.Labels[ragopsv1alpha1.LabelTrial]] {
			if err := r.Delete(ctx, ev); client.IgnoreNotFound(err) != nil {
				return nil, err
			}
		}
	}
	return usedStrategies, nil
}

// trialStatus reads one trial's phase and figures from its children.
func trialStatus(t *trials.Trial, ch *experimentChildren, obj ragopsv1alpha1.ExperimentObjective) ragopsv1alpha1.TrialStatus {
	ts := ragopsv1alpha1.TrialStatus{Name: t.Name, Strategy: t.Strategy.Name, StrategyRef: t.Index.Spec.StrategyRef.Name,
		Model: t.Model.Name, Parameters: t.Parameters, Revision: t.Revision, Phase: ragopsv1alpha1.TrialPending, Screening: t.Screens != ""}
	for _, ev := range t.Evaluations {
		ts.Evaluations = append(ts.Evaluations, ragopsv1alpha1.TrialEvaluation{Retrieval: ev.Labels[ragopsv1alpha1.LabelRetrieval], Evaluation: ev.Name})
	}
	idx, ok := ch.indexes[t.Name]
	if !ok {
		return ts
	}
	ts.Phase = ragopsv1alpha1.TrialBuilding
	rev := findRevision(idx, t.Revision)
	if rev == nil {
		return ts
	}
	switch rev.Phase {
	case ragopsv1alpha1.RevisionBuilding, ragopsv1alpha1.RevisionSuperseded:
		return ts
	case ragopsv1alpha1.RevisionFailed:
		ts.Phase, ts.Message = ragopsv1alpha1.TrialFailed, "build failed: "+rev.Message
		if rev.Message == "" {
			if c := meta.FindStatusCondition(idx.Status.Conditions, ragopsv1alpha1.ConditionReady); c != nil {
				ts.Message = "build failed: " + c.Message
			}
		}
		ts.Tokens, ts.Chunks = rev.Tokens, rev.Chunks
		return ts
	}
	ts.Tokens, ts.Chunks, ts.StorageBytes = rev.Tokens, rev.Chunks, rev.StoredBytes
	if rev.CreationTime != nil && rev.CompletionTime != nil {
		ts.BuildSeconds = int64(rev.CompletionTime.Sub(rev.CreationTime.Time).Seconds())
	}
	done, failedEval := 0, ""
	for i, want := range t.Evaluations {
		ev, ok := ch.evaluations[want.Name]
		if !ok {
			continue
		}
		if v, ok := objectiveOf(ev, t.Revision, obj.K); ok {
			ts.Evaluations[i].Objective = ptr.To(v.value(obj.Metric))
			done++
			continue
		}
		if c := meta.FindStatusCondition(ev.Status.Conditions, ragopsv1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue &&
			c.Reason == ReasonEvaluationFailed && c.ObservedGeneration == ev.Generation && failedEval == "" {
			failedEval = fmt.Sprintf("Evaluation %s failed: %s", ev.Name, c.Message)
		}
	}
	switch {
	case failedEval != "":
		ts.Phase, ts.Message = ragopsv1alpha1.TrialFailed, failedEval
	case done == len(t.Evaluations):
		ts.Phase = ragopsv1alpha1.TrialSucceeded
	default:
		ts.Phase = ragopsv1alpha1.TrialEvaluating
	}
	return ts
}

// evalMetrics is an Evaluation's finished figures at the objective's cut-off.
type evalMetrics struct {
	at      ragopsv1alpha1.MetricsAtK
	queries int32
}

// value returns the objective metric m of the figures (0 for spanHit without spans).
func (e evalMetrics) value(m ragopsv1alpha1.ObjectiveMetric) float64 {
	switch m {
	case ragopsv1alpha1.ObjectiveNDCG:
		return e.at.NDCG
	case ragopsv1alpha1.ObjectiveMRR:
		return e.at.MRR
	case ragopsv1alpha1.ObjectiveSpanHit:
		if e.at.SpanHit != nil {
			return *e.at.SpanHit
		}
		return 0
	}
	return e.at.Recall
}

// objectiveOf returns ev's figures at cut-off k when ev has finished on rev.
func objectiveOf(ev *ragopsv1alpha1.Evaluation, rev string, k int32) (evalMetrics, bool) {
	if ev.Status.Revision != rev || !conditions.IsReady(ev) {
		return evalMetrics{}, false
	}
	for _, m := range ev.Status.Metrics {
		if m.K == k {
			return evalMetrics{at: m, queries: ev.Status.Queries}, true
		}
	}
	return evalMetrics{}, false
}

// SetupWithManager watches Experiments, the Indexes, Evaluations, ChunkingStrategies and
// estimate Jobs they control, and the status of the Corpora they name (the trials' estimates
// wait for the Corpus's scan, a missing Corpus created later resumes the Experiment).
func (r *ExperimentReconciler) SetupWithManager(mgr ctrl.Manager) error {
	statusChanged := predicate.Funcs{UpdateFunc: func(e evtUpdate) bool {
		return !equalStatus(e.ObjectOld, e.ObjectNew) || e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
	}}
	return ctrl.NewControllerManagedBy(mgr).
		For(&ragopsv1alpha1.Experiment{}).
		Owns(&ragopsv1alpha1.Index{}).
		Owns(&ragopsv1alpha1.Evaluation{}).
		Owns(&ragopsv1alpha1.ChunkingStrategy{}).
		Owns(&batchv1.Job{}).
		Watches(&ragopsv1alpha1.Corpus{}, enqueueReferrers(r.Client, func() client.ObjectList { return &ragopsv1alpha1.ExperimentList{} }, experimentByCorpus),
			builder.WithPredicates(statusChanged)).
		Named("experiment").
		Complete(r)
}
