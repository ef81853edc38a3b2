package controllers

// Model servers: one Deployment and Service (with a NetworkPolicy and, above one replica, a
// PodDisruptionBudget) per (model folder, precision, and for an imagePath model the image it
// was built from) in an Index's namespace, shared by every kept revision of every Index there
// that needs it. The name depends only on what a revision's vectors depend on (its recorded
// model, precision and server image), so the URL a collection is wired to stays valid for the
// revision's lifetime, and an operator upgrade does not change the model a kept revision's
// queries are embedded with. The device, replicas, resources and scheduling are settings of
// the Deployment (those of the oldest Index that uses it; the ServingSettingsApplied condition
// of every other Index says where its own differ) and change it in place; a
// spec.serving.precision override applies only when every Index sharing the server asks the
// same one. A Deployment a HorizontalPodAutoscaler scales keeps the autoscaler's replicas.
//
// The rest of the model server code: index_serving_address.go (the URLs collections are wired
// to), index_serving_client.go (the manager's /meta reads), index_serving_modules.go (whether
// Weaviate has the text2vec-transformers module) and index_serving_gate.go (which revision may
// take the alias, status.serving and ServingReady).
//
// One set per namespace, written once per change: the ModelServerReconciler
// (index_serving_set.go), keyed by namespace, computes the servers every Index there needs
// from the cached Indexes whenever an Index's serving needs change, and writes only the
// objects whose content hash (annotationSpecHash) differs from what the cache holds. An Index
// reconcile only reads its servers from the manager's cache (label-scoped: ScopeCache), so it
// issues no API LIST and no write to them, whatever the namespace's number of Indexes.
//
// Lifetime without owner references to Indexes: a server's objects are labelled
// (componentModelServer) and carry no owner reference, so adding or deleting an Index
// rewrites at most one annotation (AnnotationServerIndexes) instead of every object's owner
// list. A server no Index needs any more (revisions pruned, model changed, serving disabled,
// its last Index deleted) is deleted by the ModelServerReconciler, which also runs for every
// namespace holding model server objects when the manager starts, so servers whose Indexes
// went while no manager ran are collected too. Deleting the namespace deletes them as well.
// Servers written by an older manager (an owner reference per Index) are rewritten once
// without them: their content hash differs.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/reconcile"
)

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=list

// Reasons of the ServingReady condition.
const (
	// ReasonModelServerReady: the model server has ready replicas.
	ReasonModelServerReady = "ModelServerReady"
	// ReasonModelServerNotReady: the model server has no ready replica yet (or any more).
	ReasonModelServerNotReady = "ModelServerNotReady"
	// ReasonTransformersModuleMissing: Weaviate lacks the text2vec-transformers module, so
	// collections are built without a vectorizer (nearText through the alias fails).
	ReasonTransformersModuleMissing = "TransformersModuleMissing"
	// ReasonModelHashMismatch: the model server loaded another model folder than the
	// revision's; the revision is not wired to it and does not take the alias.
	ReasonModelHashMismatch = "ModelHashMismatch"
	// ReasonModelServerURLMismatch: the revision's collection queries through another URL
	// than its model server's; the revision does not take the alias.
	ReasonModelServerURLMismatch = "ModelServerURLMismatch"
	// ReasonModelServerNotWired: the revision's collection has no vectorizer while the active
	// revision's has one and serving is on; the revision does not take the alias.
	ReasonModelServerNotWired = "ModelServerNotWired"
	// ReasonOwnSettings: the Index's model servers run its spec.serving settings
	// (ServingSettingsApplied True).
	ReasonOwnSettings = "OwnSettings"
	// ReasonSharedServerSettings: a model server the Index shares runs another Index's
	// settings, or not its precision override (ServingSettingsApplied False).
	ReasonSharedServerSettings = "SharedServerSettings"
	// ReasonWeaviateModulesUnknown: whether Weaviate has the text2vec-transformers module is
	// not known yet (its modules could not be read); the build waits.
	ReasonWeaviateModulesUnknown = "WeaviateModulesUnknown"
)

// componentModelServer is the app.kubernetes.io/component label of model server objects.
const componentModelServer = "model-server"

// annotationSpecHash on a model server object is the hash of what the controller last wrote;
// an object whose hash differs from the desired one is updated.
const annotationSpecHash = "ragops.dev/spec-hash"

// Annotations of a model server Deployment that say whom it serves (written by the
// ModelServerReconciler, read by Index reconciles for ServingSettingsApplied).
const (
	// AnnotationServerIndexes is the number of Indexes whose kept or desired revisions
	// need the server (a decimal).
	AnnotationServerIndexes = "ragops.dev/indexes"
	// annotationSettingsFrom names the Index whose spec.serving settings the server runs
	// (settingsFor's from).
	annotationSettingsFrom = "ragops.dev/settings-from"
	// annotationPrecisionOverride is the spec.serving.precision override the server applies
	// ("" for none; settingsFor's precision).
	annotationPrecisionOverride = "ragops.dev/precision-override"
)

// servingKey is what a model server serves: a model folder in the precision a revision was
// embedded in; for an imagePath model, from the image the revision recorded (Image; empty
// for other models and for revisions recorded before RevisionStatus.ServerImage, whose
// servers run the operator's current image and keep their names).
type servingKey struct {
	Model     ragopsv1alpha1.ModelSpec `json:"model"`
	Precision ragopsv1alpha1.Precision `json:"precision"`
	Image     string                   `json:"image,omitempty"`
}

// name is the server's object name: ragops-serve- and 10 hex digits of the key's hash.
func (k servingKey) name() string { return "ragops-serve-" + hashJSON(k)[:10] }

// servingKeyFor is the model server of revision rev of idx (nil: the desired revision before
// its status exists, whose server image is image, the operator's): the revision's model,
// precision and server image.
func servingKeyFor(idx *ragopsv1alpha1.Index, rev *ragopsv1alpha1.RevisionStatus, image string) servingKey {
	model, e := idx.Spec.Model, idx.Spec.Embedder
	image = serverImage(model, image)
	if rev != nil {
		model, e = queryModel(idx, rev)
		image = serverImage(model, rev.ServerImage)
	}
	k := servingKey{Model: model, Precision: e.Precision, Image: image}
	if k.Precision == "" {
		k.Precision = ragopsv1alpha1.PrecisionFP32
	}
	return k
}

// serverImage is the image a model server of model runs pinned to: image for an imagePath
// model (the folder is inside it), "" for others.
func serverImage(model ragopsv1alpha1.ModelSpec, image string) string {
	if model.ImagePath == "" {
		return ""
	}
	return image
}

// servingNeeds returns the model servers idx needs, by name: those of its kept revisions
// (Failed and Superseded ones have no collection to serve) and of its desired revision
// (whose server image is image). A deleting Index or one with serving disabled needs none.
func servingNeeds(idx *ragopsv1alpha1.Index, desired, image string) map[string]servingKey {
	needs := map[string]servingKey{}
	if !idx.DeletionTimestamp.IsZero() || !idx.Spec.Serving.ServingEnabled() {
		return needs
	}
	haveDesired := false
	for i := range idx.Status.Revisions {
		rev := &idx.Status.Revisions[i]
		if rev.Phase == ragopsv1alpha1.RevisionFailed || rev.Phase == ragopsv1alpha1.RevisionSuperseded {
			continue
		}
		haveDesired = haveDesired || rev.Name == desired
		k := servingKeyFor(idx, rev, image)
		needs[k.name()] = k
	}
	if !haveDesired && desired != "" {
		k := servingKeyFor(idx, nil, image)
		needs[k.name()] = k
	}
	return needs
}

// reconcileServing reports the model server of the revision behind the alias (of the desired
// revision while none serves) in status.serving and the ServingReady condition, and in
// ServingSettingsApplied whether the servers this Index needs run its spec.serving settings.
// The servers themselves are written by the ModelServerReconciler, once per change of the
// namespace's set; this step reads them from the manager's cache and issues no API LIST, so
// its cost does not grow with the namespace's Indexes. It never stops the reconcile; while
// that server is not ready it looks again after ProgressInterval.
func (r *IndexReconciler) reconcileServing(ctx context.Context, st *indexState) (reconcile.Result, error) {
	idx := st.idx
	res := r.servingStatus(ctx, st)
	if !idx.Spec.Serving.ServingEnabled() {
		return res.Remove(ragopsv1alpha1.ConditionServingSettingsApplied), nil
	}
	var notes []string
	for _, name := range slices.Sorted(maps.Keys(servingNeeds(idx, st.revision, r.Options.WorkerImage))) {
		var dep appsv1.Deployment
		if err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: name}, &dep); err != nil {
			if apierrors.IsNotFound(err) {
				continue // not written yet: the ModelServerReconciler writes it once the revision is recorded
			}
			return reconcile.Stop, err
		}
		fromName, ok := dep.Annotations[annotationSettingsFrom]
		if !ok {
			continue // written by an older manager: the ModelServerReconciler rewrites it
		}
		from := idx
		if fromName != idx.Name {
			from = &ragopsv1alpha1.Index{}
			if err := r.Get(ctx, client.ObjectKey{Namespace: idx.Namespace, Name: fromName}, from); err != nil {
				if apierrors.IsNotFound(err) {
					continue // deleted meanwhile: the server is being rewritten
				}
				return reconcile.Stop, err
			}
		}
		if note := settingsConflict(idx, from, ragopsv1alpha1.Precision(dep.Annotations[annotationPrecisionOverride])); note != "" {
			notes = append(notes, fmt.Sprintf("model server %s: %s", name, note))
		}
	}
	if len(notes) == 0 {
		return res.Set(ragopsv1alpha1.ConditionServingSettingsApplied, metav1.ConditionTrue, ReasonOwnSettings, "the model servers run this Index's spec.serving settings"), nil
	}
	return res.Set(ragopsv1alpha1.ConditionServingSettingsApplied, metav1.ConditionFalse, ReasonSharedServerSettings, strings.Join(notes, "; ")), nil
}

// settingsFor decides what a model server shared by users runs with: the replicas, device,
// resources and scheduling of from, the oldest of them (by creation, then name), and a
// spec.serving.precision override only when every user asks the same one (precision; ""
// serves the precision the revisions were built in), so that one Index's override never
// changes how another's queries are embedded. users is sorted oldest first.
func settingsFor(users []*ragopsv1alpha1.Index) (from *ragopsv1alpha1.Index, precision ragopsv1alpha1.Precision) {
	slices.SortFunc(users, func(a, b *ragopsv1alpha1.Index) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	precision = users[0].Spec.Serving.Precision
	for _, u := range users[1:] {
		if u.Spec.Serving.Precision != precision {
			precision = ""
		}
	}
	return users[0], precision
}

// settingsConflict says where idx's spec.serving differs from what a server runs with
// (settingsFor's from and precision); "" where it does not.
func settingsConflict(idx, from *ragopsv1alpha1.Index, precision ragopsv1alpha1.Precision) string {
	var diffs []string
	want, have := idx.Spec.Serving, from.Spec.Serving
	if idx.UID != from.UID {
		if max(want.Replicas, 1) != max(have.Replicas, 1) {
			diffs = append(diffs, fmt.Sprintf("replicas %d (asks %d)", max(have.Replicas, 1), max(want.Replicas, 1)))
		}
		if deviceOf(want) != deviceOf(have) {
			diffs = append(diffs, fmt.Sprintf("device %s (asks %s)", deviceOf(have), deviceOf(want)))
		}
		if !equality.Semantic.DeepEqual(want.Resources, have.Resources) {
			diffs = append(diffs, "resources")
		}
		if !equality.Semantic.DeepEqual(want.NodeSelector, have.NodeSelector) || !equality.Semantic.DeepEqual(want.Tolerations, have.Tolerations) {
			diffs = append(diffs, "node placement")
		}
	}
	var out []string
	if len(diffs) > 0 {
		out = append(out, fmt.Sprintf("runs with the settings of Index %s, the oldest sharing it: %s", from.Name, strings.Join(diffs, ", ")))
	}
	if want.Precision != "" && want.Precision != precision {
		out = append(out, fmt.Sprintf("precision %s is not applied: not every Index sharing the server asks it, so it serves the precision the revisions were built in", want.Precision))
	}
	return strings.Join(out, "; ")
}

// deviceOf is a spec.serving's device, cpu when unset.
func deviceOf(s ragopsv1alpha1.ServingSpec) ragopsv1alpha1.Device {
	if s.Device == "" {
		return ragopsv1alpha1.DeviceCPU
	}
	return s.Device
}
