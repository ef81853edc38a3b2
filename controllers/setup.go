// Package controllers reconciles Corpus, ChunkingStrategy, Index, Evaluation and Experiment
// resources.
//
// Each reconciler follows Flux's source-controller shape: fetch the object, defer one status
// patch (reconcile.StatusPatcher, written only when the status changed), handle deletion and
// the finalizer first, then run its steps in sequence (reconcile.Run). A step returns a
// reconcile.Result naming the outcome it found and any other conditions it decided;
// reconcile.Summarize sets the conditions from the merged result, once per reconcile, so no
// step sets a condition itself. Conditions follow kstatus (Ready, Reconciling, Stalled) with
// observedGeneration, and every condition transition emits an Event (Warning for what needs a
// person, see needsAPerson). Work happens in Jobs running the ragops binary (scan, embed,
// evaluate), built by package internal/workload; their results come back in the pods'
// termination messages.
package controllers

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/workload"
)

// Options configure every reconciler.
type Options struct {
	// WorkerImage is the ragops image the Jobs run (scan, embed, evaluate).
	WorkerImage string
	// ManagerNamespace is the namespace the manager runs in: model server NetworkPolicies
	// admit its pods there so it can read /meta. Empty: none (a manager outside a cluster).
	ManagerNamespace string
	// WeaviateAdminKey, when set, is the Weaviate API key that provisions the RBAC role and
	// user of each Index with access rules (a root user's); empty uses the Index's own key.
	WeaviateAdminKey string
	// NewStore opens a vector store for an Index's Weaviate endpoint; nil means
	// NewWeaviateStore with one cached Store per endpoint and API key.
	NewStore StoreFactory
	// ProgressInterval is how often a running build's progress is refreshed (at most 30 s).
	ProgressInterval time.Duration
	// DriftInterval is how often an Index whose active revision is serving checks that its
	// collection and alias still exist in Weaviate (default 5 minutes).
	DriftInterval time.Duration
	// IndexConcurrency is how many Indexes reconcile at once (Weaviate calls can be slow).
	IndexConcurrency int
	// FinalizerTimeout bounds how long deletion waits for Weaviate before giving up with a
	// Warning event that names what was left behind.
	FinalizerTimeout time.Duration
	// ResultGrace is how long after a Job completed its shard results may stay invisible (the
	// pod cache lags) before they count as lost (default 30 s).
	ResultGrace time.Duration
	// WeaviateOutageWait is how long embedder workers wait out an unavailable Weaviate before
	// their shard fails (plan outageSeconds); 0 leaves the worker's default (5 minutes).
	// The controllers themselves keep short deadlines.
	WeaviateOutageWait time.Duration
	// PodStartTimeout is how long a Job's pod may stay Pending (unschedulable, a volume or
	// image that cannot be had) before the object says so with PodsNotStarting (default 10
	// minutes); causes that cannot pass by themselves are reported at once.
	PodStartTimeout time.Duration
	// JobStopTimeout bounds how long an Index's deletion waits for the pods of its running
	// Jobs to stop before it force-deletes them (default 5 minutes).
	JobStopTimeout time.Duration
	// JobDeadline is the activeDeadlineSeconds of a worker Job whose template sets none
	// (default 7 days): a backstop so that no Job runs, or waits, forever.
	JobDeadline time.Duration
	// ModelServerURLs is how collections (their text2vec-transformers URLs), status.serving and
	// the manager's /meta reads address a model server: ModelServerServiceDNS (""; the
	// default) by its Service's name, http://NAME.NAMESPACE.svc:8080, for a Weaviate inside the
	// cluster; ModelServerClusterIP by its Service's ClusterIP, http://CLUSTERIP:8080, for a
	// Weaviate (and a manager) that reaches the cluster's Service network but not its DNS, such
	// as the local cluster's Weaviate on the host (hack/demo.sh). A ClusterIP lasts as long as
	// its Service, which lasts as long as a kept revision needs it.
	ModelServerURLs string
	// MaxConcurrentSyncs bounds the corpus sync Jobs that run at once across all Indexes; a
	// revision that needs a sync waits for a slot, longest-waiting first (0: no bound).
	MaxConcurrentSyncs int
	// ModelServers reads the model hash a model server reports; nil means
	// HTTPModelServerClient.
	ModelServers ModelServerClient
	// ModelServerGrace is how long a model server object is kept after its creation even
	// when no Index seems to need it: the cached Indexes the ModelServerReconciler decides
	// from may lag the status that made it needed (default 1 minute).
	ModelServerGrace time.Duration
	// APIReader reads from the API server, not the cache (the manager's GetAPIReader; set by
	// SetupWithManager): it tells a Job ragops cannot see in its label-scoped cache from one
	// that does not exist.
	APIReader client.Reader
}

// lossConfirmWait is how far apart the reads that confirm a lost collection are: a fifth of
// ProgressInterval (200 ms to 2 s).
func (o *Options) lossConfirmWait() time.Duration {
	return min(max(o.ProgressInterval/5, 200*time.Millisecond), 2*time.Second)
}

// reader returns APIReader, or c when none is set (reconcilers built by hand in tests).
func (o *Options) reader(c client.Client) client.Reader {
	if o.APIReader != nil {
		return o.APIReader
	}
	return c
}

func (o *Options) defaults() {
	if o.WorkerImage == "" {
		o.WorkerImage = "ghcr.io/ragops/ragops:latest"
	}
	if o.NewStore == nil {
		o.NewStore = InstrumentStores(cachedStores(NewWeaviateStore))
	}
	if o.IndexConcurrency <= 0 {
		o.IndexConcurrency = 4
	}
	if o.ProgressInterval <= 0 || o.ProgressInterval > 30*time.Second {
		o.ProgressInterval = 10 * time.Second
	}
	if o.DriftInterval <= 0 {
		o.DriftInterval = 5 * time.Minute
	}
	if o.FinalizerTimeout <= 0 {
		o.FinalizerTimeout = 15 * time.Minute
	}
	if o.PodStartTimeout <= 0 {
		o.PodStartTimeout = 10 * time.Minute
	}
	if o.JobStopTimeout <= 0 {
		o.JobStopTimeout = 5 * time.Minute
	}
	if o.JobDeadline <= 0 {
		o.JobDeadline = 7 * 24 * time.Hour
	}
	if o.ResultGrace <= 0 {
		o.ResultGrace = 30 * time.Second
	}
	if o.ModelServers == nil {
		o.ModelServers = HTTPModelServerClient{}
	}
	if o.ModelServerGrace <= 0 {
		o.ModelServerGrace = time.Minute
	}
}

// modelServers returns ModelServers, or HTTPModelServerClient when none is set (reconcilers
// built by hand in tests).
func (o *Options) modelServers() ModelServerClient {
	if o.ModelServers != nil {
		return o.ModelServers
	}
	return HTTPModelServerClient{}
}

// workloadDefaults are the settings every worker Job takes from the operator's options.
func (o Options) workloadDefaults() workload.Defaults {
	return workload.Defaults{Image: o.WorkerImage, Deadline: o.JobDeadline}
}

// Field index keys.
const (
	indexByCorpus   = ".spec.corpusRef.name"
	indexByStrategy = ".spec.strategyRef.name"
	// indexBySecret holds the Secrets an Index reads: the API key and a Secret CA bundle.
	indexBySecret = ".spec.weaviate.secrets"
	// indexByConfigMap holds the ConfigMap CA bundle an Index reads.
	indexByConfigMap = ".spec.weaviate.caBundle.configMapKeyRef.name"
	evalByIndex      = ".spec.indexRef.name"
	// experimentByCorpus holds an Experiment's Corpus: its trials wait for the Corpus's scan.
	experimentByCorpus = ".spec.corpusRef.name"
	corpusBySource     = ".spec.source.name"
)

// Finalizer is the finalizer ragops adds to an Index until its alias and collections are gone,
// and to an Experiment until its children are; CleanupFinalizer holds what an Index's cleanup
// reads. ragops never removes any other finalizer.
const Finalizer = "ragops.dev/cleanup"

// AnnotationRetry on an Index, set to a new value (a timestamp), rebuilds its Failed desired
// revision once: `kubectl annotate index <name> ragops.dev/retry="$(date +%s)" --overwrite`.
const AnnotationRetry = "ragops.dev/retry"

// AnnotationGateParameters on a gating Evaluation is the hash of the Index's
// rollout.gate.evaluation it was made from. The controller compares this hash, not the two
// specs: the API server defaults fields of the Evaluation (template.backoffLimit) that the
// Index's copy lacks when it was applied without a template.
const AnnotationGateParameters = "ragops.dev/gate-parameters"

// AnnotationSkipCleanup on an Index ("true") deletes it without touching Weaviate.
const AnnotationSkipCleanup = "ragops.dev/skip-cleanup"

// ScopeCache limits what the manager caches, so its memory does not grow with the cluster
// and it holds no Secret data: Jobs and Pods only when ragops made them (label
// app.kubernetes.io/managed-by=ragops, which the Job template gives its pods); Deployments,
// Services, NetworkPolicies and PodDisruptionBudgets only when they are ragops's model
// servers (managed-by=ragops and app.kubernetes.io/component=model-server); Secrets,
// ConfigMaps and PersistentVolumeClaims are watched as metadata only (the reconcilers map
// them to the objects that name them) and read from the API server when a reconcile needs
// one. No cached object keeps its managedFields (nothing reads them from the cache; they are
// often a third of an object), and a cached Pod keeps its metadata and status only: the
// controllers read a Job's pods for their phase, conditions and termination messages, never
// their spec, which repeats the Job's template (issue 56: at 500 Indexes one Corpus change
// puts 500 sync Jobs and their pods into the cache at once). Call it on the options before
// ctrl.NewManager.
func ScopeCache(o *ctrl.Options) {
	if o.Cache.DefaultTransform == nil {
		o.Cache.DefaultTransform = cache.TransformStripManagedFields()
	}
	ours := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{workload.LabelManagedBy: workload.ManagedBy})}
	if o.Cache.ByObject == nil {
		o.Cache.ByObject = map[client.Object]cache.ByObject{}
	}
	o.Cache.ByObject[&batchv1.Job{}] = ours
	o.Cache.ByObject[&corev1.Pod{}] = cache.ByObject{Label: ours.Label, Transform: podStatusOnly}
	// Model server objects: only ragops's (ModelServerReconciler writes them once per change
	// of a namespace's set; Index reconciles read them here, not from the API server).
	servers := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{workload.LabelManagedBy: workload.ManagedBy, workload.LabelComponent: componentModelServer})}
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &networkingv1.NetworkPolicy{}, &policyv1.PodDisruptionBudget{}} {
		o.Cache.ByObject[obj] = servers
	}
	if o.Client.Cache == nil {
		o.Client.Cache = &client.CacheOptions{}
	}
	o.Client.Cache.DisableFor = append(o.Client.Cache.DisableFor, &corev1.Secret{}, &corev1.ConfigMap{}, &corev1.PersistentVolumeClaim{})
}

// podStatusOnly is the cache transform of Pods: managedFields and the spec but its node are
// dropped, the rest of the metadata and the status are kept. A pod from the cache is never written back.
func podStatusOnly(in any) (any, error) {
	if p, ok := in.(*corev1.Pod); ok {
		p.ManagedFields = nil
		p.Spec = corev1.PodSpec{NodeName: p.Spec.NodeName}
	}
	return in, nil
}

// SetupWithManager registers the field indexes and the reconcilers.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	opts.defaults()
	if opts.APIReader == nil {
		opts.APIReader = mgr.GetAPIReader()
	}
	fi := mgr.GetFieldIndexer()
	indexes := []struct {
		obj client.Object
		key string
		fn  client.IndexerFunc
	}{
		{&ragopsv1alpha1.Index{}, indexByCorpus, func(o client.Object) []string { return []string{o.(*ragopsv1alpha1.Index).Spec.CorpusRef.Name} }},
		{&ragopsv1alpha1.Index{}, indexByStrategy, func(o client.Object) []string { return []string{o.(*ragopsv1alpha1.Index).Spec.StrategyRef.Name} }},
		{&ragopsv1alpha1.Index{}, indexBySecret, func(o client.Object) []string {
			w := o.(*ragopsv1alpha1.Index).Spec.Weaviate
			var names []string
			if r := w.APIKeySecretRef; r != nil {
				names = append(names, r.Name)
			}
			if w.CABundle != nil && w.CABundle.SecretKeyRef != nil {
				names = append(names, w.CABundle.SecretKeyRef.Name)
			}
			return names
		}},
		{&ragopsv1alpha1.Index{}, indexByConfigMap, func(o client.Object) []string {
			if ca := o.(*ragopsv1alpha1.Index).Spec.Weaviate.CABundle; ca != nil && ca.ConfigMapKeyRef != nil {
				return []string{ca.ConfigMapKeyRef.Name}
			}
			return nil
		}},
		{&ragopsv1alpha1.Evaluation{}, evalByIndex, func(o client.Object) []string { return []string{o.(*ragopsv1alpha1.Evaluation).Spec.IndexRef.Name} }},
		{&ragopsv1alpha1.Experiment{}, experimentByCorpus, func(o client.Object) []string {
			return []string{o.(*ragopsv1alpha1.Experiment).Spec.CorpusRef.Name}
		}},
		{&ragopsv1alpha1.Corpus{}, corpusBySource, func(o client.Object) []string {
			s := o.(*ragopsv1alpha1.Corpus).Spec
			var names []string
			if s.ConfigMap != nil {
				names = append(names, s.ConfigMap.Name)
			}
			if s.S3 != nil && s.S3.SecretRef != nil {
				names = append(names, s.S3.SecretRef.Name)
			}
			if s.Git != nil && s.Git.SecretRef != nil {
				names = append(names, s.Git.SecretRef.Name)
			}
			if s.PVC != nil {
				names = append(names, s.PVC.ClaimName)
			}
			return names
		}},
		{&batchv1.Job{}, jobOwnerKey, jobOwnerIndexer},
	}
	for _, ix := range indexes {
		if err := fi.IndexField(ctx, ix.obj, ix.key, ix.fn); err != nil {
			return err
		}
	}
	rec := mgr.GetEventRecorder("ragops")
	if err := (&CorpusReconciler{Client: mgr.GetClient(), Events: rec, Options: opts}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&ChunkingStrategyReconciler{Client: mgr.GetClient(), Events: rec}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&IndexReconciler{Client: mgr.GetClient(), Events: rec, Options: opts}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&ModelServerReconciler{Client: mgr.GetClient(), Options: opts}).SetupWithManager(mgr); err != nil {
		return err
	}
	for _, kind := range []string{"Secret", "ConfigMap"} {
		if err := (&CleanupRefReconciler{Client: mgr.GetClient(), Kind: kind}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	if err := (&EvaluationReconciler{Client: mgr.GetClient(), Events: rec, Options: opts}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&ExperimentReconciler{Client: mgr.GetClient(), Events: rec, Options: opts}).SetupWithManager(mgr)
}
