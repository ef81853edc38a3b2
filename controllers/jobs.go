package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// Labels on everything ragops creates.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelComponent = "app.kubernetes.io/component"
	LabelOwner     = "ragops.dev/owner"
	LabelRevision  = "ragops.dev/revision"
	managedBy      = "ragops"

	// labelJobKind tells an Index's build Jobs from its sync Jobs.
	labelJobKind = "ragops.dev/job-kind"
	jobKindBuild = "build"
	jobKindSync  = "sync"

	jobOwnerKey = ".metadata.controller"

	// labelPlanHash on a plan ConfigMap holds the first 16 hex digits of its plan's SHA-256
	// (the Job's pods carry the whole sum in RAGOPS_PLAN_SHA256).
	labelPlanHash = "ragops.dev/plan-hash"

	// defaultBackoffLimit is the retries of a worker Job whose template sets none (the CRD's
	// default when a template is given), rather than Kubernetes's 6 with minutes of back-off.
	defaultBackoffLimit int32 = 2
)

// jobOwnerIndexer indexes Jobs by "<Kind>/<name>" of their controlling owner.
func jobOwnerIndexer(o client.Object) []string {
	ref := metav1.GetControllerOf(o)
	if ref == nil || !strings.HasPrefix(ref.APIVersion, ragopsv1alpha1.GroupVersion.Group+"/") {
		return nil
	}
	return []string{ref.Kind + "/" + ref.Name}
}

// workload is one Job the controllers run: its plan, command and mounts.
type workload struct {
	owner     client.Object
	name      string
	component string // scan, embed, evaluate
	kind      string // build or sync for embed Jobs
	revision  string
	plan      any
	args      []string
	template  ragopsv1alpha1.JobTemplate
	image     string
	shards    int32
	gpu       bool
	volumes   []corev1.Volume
	mounts    []corev1.VolumeMount
	env       []corev1.EnvVar
	init      []corev1.Container
	// deadline is the Job's activeDeadlineSeconds when the template sets none.
	deadline time.Duration
	// annotations go on the Job.
	annotations map[string]string
}

func (w *workload) labels() map[string]string {
	l := map[string]string{
		LabelManagedBy: managedBy,
		LabelComponent: w.component,
		LabelOwner:     labelValue(w.owner.GetName()),
	}
	if w.revision != "" {
		l[LabelRevision] = w.revision
	}
	if w.kind != "" {
		l[labelJobKind] = w.kind
	}
	return l
}

// JobConflictError is a Job or plan ConfigMap that has a workload's name but is not
// controlled by the workload's owner: ragops never adopts (and never reads the results of)
// an object another owner controls.
type JobConflictError struct {
	Kind, Name string
	// Owner is the object's controller ("Kind/name"), or "" when it has none.
	Owner string
}

func (e *JobConflictError) Error() string {
	owner := "no controller"
	if e.Owner != "" {
		owner = "controller " + e.Owner
	}
	return fmt.Sprintf("%s %s exists with %s; delete or rename it", e.Kind, e.Name, owner)
}

func conflictOf(kind string, o metav1.Object) error {
	e := &JobConflictError{Kind: kind, Name: o.GetName()}
	if ref := metav1.GetControllerOf(o); ref != nil {
		e.Owner = ref.Kind + "/" + ref.Name
	}
	return e
}

// ensure creates the plan ConfigMap and the Job when they do not exist and returns the Job.
// An existing Job (or ConfigMap) of that name is used only when the owner controls it;
// otherwise the error is a *JobConflictError. live reads from the API server: a Job another
// owner made is outside the manager's label-scoped cache.
func (w *workload) ensure(ctx context.Context, c client.Client, live client.Reader) (*batchv1.Job, error) {
	var job batchv1.Job
	err := c.Get(ctx, client.ObjectKey{Namespace: w.owner.GetNamespace(), Name: w.name}, &job)
	if apierrors.IsNotFound(err) {
		// The cache can lag behind our own create: ask the API server before the plan
		// ConfigMap of a Job that may exist is rewritten.
		err = live.Get(ctx, client.ObjectKey{Namespace: w.owner.GetNamespace(), Name: w.name}, &job)
	}
	if err == nil {
		if !metav1.IsControlledBy(&job, w.owner) {
			return nil, conflictOf("Job", &job)
		}
		return &job, nil
	}
	if client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	raw, err := json.MarshalIndent(w.plan, "", "  ")
	if err != nil {
		return nil, err
	}
	sum := plan.SHA256(raw)
	labels := w.labels()
	labels[labelPlanHash] = sum[:16]
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.owner.GetNamespace(), Name: w.name, Labels: labels},
		Data:       map[string]string{plan.File: string(raw)},
	}
	if err := controllerutil.SetControllerReference(w.owner, cm, c.Scheme()); err != nil {
		return nil, err
	}
	if err := c.Create(ctx, cm); apierrors.IsAlreadyExists(err) {
		// Left by a Job that went another way than deleteJob (kubectl delete, a TTL, a failed
		// create): its plan and results are not this Job's, so it is rewritten whole.
		var old corev1.ConfigMap
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &old); err != nil {
			return nil, err
		}
		if !metav1.IsControlledBy(&old, w.owner) {
			return nil, conflictOf("ConfigMap", &old)
		}
		old.Labels, old.Data, old.BinaryData = labels, cm.Data, nil
		old.OwnerReferences = cm.OwnerReferences
		if err := c.Update(ctx, &old); err != nil {
			return nil, fmt.Errorf("rewrite plan ConfigMap %s: %w", w.name, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("create plan ConfigMap %s: %w", w.name, err)
	}
	j := w.job()
	ctr := &j.Spec.Template.Spec.Containers[0]
	ctr.Env = append(ctr.Env, corev1.EnvVar{Name: plan.EnvPlanSHA256, Value: sum})
	if err := controllerutil.SetControllerReference(w.owner, j, c.Scheme()); err != nil {
		return nil, err
	}
	if err := c.Create(ctx, j); apierrors.IsAlreadyExists(err) {
		// Another reconcile on a stale cache created it first (use it if ours), or someone
		// else did (not in the cache, so ask the API server).
		if err := live.Get(ctx, client.ObjectKeyFromObject(j), &job); err != nil {
			return nil, err
		}
		if !metav1.IsControlledBy(&job, w.owner) {
			return nil, conflictOf("Job", &job)
		}
		return &job, nil
	} else if err != nil {
		return nil, fmt.Errorf("create Job %s: %w", w.name, err)
	}
	// The plan belongs to its Job too: the garbage collector removes it with the Job, however
	// the Job goes.
	if err := controllerutil.SetOwnerReference(j, cm, c.Scheme()); err == nil {
		owners, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": cm.OwnerReferences}})
		if err := c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, owners)); err != nil {
			log.FromContext(ctx).Info("plan ConfigMap not owned by its Job yet", "configMap", cm.Name, "error", err.Error())
		}
	}
	return j, nil
}

// maxNameLength bounds the names ragops generates for Jobs, their plan ConfigMaps and
// Evaluations: a Job's name is also the value of its pods' job-name label (at most 63).
const maxNameLength = 63

// labelValue returns name as a label value: itself when it fits a label's 63 characters,
// else shortened with a hash suffix (objectName), so any object name can own workloads.
func labelValue(name string) string { return objectName(name, 63) }

// objectName returns prefix when it fits n bytes, else its first n-9 bytes, "-" and 8 hex
// digits of its SHA-256: names derived from two long object names that share their first n
// bytes stay apart.
func objectName(prefix string, n int) string {
	if len(prefix) <= n {
		return prefix
	}
	sum := sha256.Sum256([]byte(prefix))
	return strings.TrimRight(prefix[:n-9], "-.") + "-" + hex.EncodeToString(sum[:])[:8]
}

func (w *workload) job() *batchv1.Job {
	t := w.template
	image := t.Image
	if image == "" {
		image = w.image
	}
	res := *t.Resources.DeepCopy()
	if w.gpu {
		gpu := corev1.ResourceName("nvidia.com/gpu")
		if _, ok := res.Limits[gpu]; !ok {
			if res.Limits == nil {
				res.Limits = corev1.ResourceList{}
			}
			res.Limits[gpu] = resource.MustParse("1")
		}
	}
	volumes := append([]corev1.Volume{{
		Name: "plan",
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: w.name},
		}},
	}, {
		Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}},
	}}, w.volumes...)
	mounts := append([]corev1.VolumeMount{
		{Name: "plan", MountPath: plan.Dir, ReadOnly: true},
		{Name: "tmp", MountPath: "/tmp"},
	}, w.mounts...)
	shards := max(w.shards, 1)
	backoff := t.BackoffLimit
	if backoff == nil {
		backoff = ptr.To(defaultBackoffLimit)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.owner.GetNamespace(), Name: w.name, Labels: w.labels(), Annotations: w.annotations},
		Spec: batchv1.JobSpec{
			Completions:           ptr.To(shards),
			Parallelism:           ptr.To(shards),
			BackoffLimit:          backoff,
			ActiveDeadlineSeconds: activeDeadline(t.ActiveDeadlineSeconds, w.deadline),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: w.labels()},
				Spec: corev1.PodSpec{
					RestartPolicy:      corev1.RestartPolicyNever,
					ServiceAccountName: t.ServiceAccountName,
					NodeSelector:       t.NodeSelector,
					Tolerations:        t.Tolerations,
					InitContainers:     w.init,
					Volumes:            volumes,
					Containers: []corev1.Container{{
						Name:                     w.component,
						Image:                    image,
						Command:                  []string{"ragops"},
						Args:                     append(w.args, "--plan", path.Join(plan.Dir, plan.File)),
						Env:                      w.env,
						Resources:                res,
						VolumeMounts:             mounts,
						TerminationMessagePath:   plan.TerminationLog,
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
				},
			},
		},
	}
	restrictPod(&job.Spec.Template.Spec)
	if shards > 1 || w.component == "embed" {
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	}
	return job
}

// activeDeadline returns the template's activeDeadlineSeconds, else the default d (none
// when d is 0).
func activeDeadline(set *int64, d time.Duration) *int64 {
	if set != nil || d <= 0 {
		return set
	}
	return ptr.To(int64(d.Seconds()))
}

// deleteJob deletes a Job and its pods and its plan ConfigMap. Propagation is foreground:
// the Job stays (with a deletionTimestamp) until its pods are gone, so "no Job" means no pod
// of it still writes.
func deleteJob(ctx context.Context, c client.Client, ns, name string) error {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationForeground)); client.IgnoreNotFound(err) != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	return client.IgnoreNotFound(c.Delete(ctx, cm))
}

// jobState summarises a Job.
type jobState int

const (
	jobRunning jobState = iota
	jobSucceeded
	jobFailed
)

func stateOf(job *batchv1.Job) (jobState, string) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return jobSucceeded, ""
		case batchv1.JobFailed:
			return jobFailed, fmt.Sprintf("%s: %s", c.Reason, c.Message)
		}
	}
	return jobRunning, ""
}

// podResults returns the termination messages of the Job's terminated worker containers,
// newest pod per completion index first, keyed by completion index ("0" for non-indexed Jobs);
// failed holds the failures of failed pods, oldest first.
func podResults(ctx context.Context, c client.Reader, job *batchv1.Job) (succeeded map[string]string, failed []podFailure, err error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{"batch.kubernetes.io/job-name": job.Name}); err != nil {
		return nil, nil, err
	}
	sort.Slice(pods.Items, func(i, j int) bool {
		return pods.Items[i].CreationTimestamp.Before(&pods.Items[j].CreationTimestamp)
	})
	succeeded = map[string]string{}
	for _, p := range pods.Items {
		idx := p.Annotations[batchv1.JobCompletionIndexAnnotation]
		if idx == "" {
			idx = "0"
		}
		for _, cs := range p.Status.InitContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				msg := strings.TrimSpace(t.Message)
				if msg == "" {
					msg = t.Reason
				}
				failed = append(failed, podFailure{text: fmt.Sprintf("pod %s: init container %s exited with code %d: %s", p.Name, cs.Name, t.ExitCode, msg)})
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.State.Terminated
			if t == nil {
				continue
			}
			if t.ExitCode == 0 {
				succeeded[idx] = t.Message
			} else {
				msg, reason := resultError(t.Message)
				if msg == "" {
					msg = t.Reason
				}
				failed = append(failed, podFailure{text: fmt.Sprintf("pod %s exited with code %d: %s", p.Name, t.ExitCode, msg), reason: reason})
			}
		}
	}
	return succeeded, failed, nil
}

// resultKey is the plan ConfigMap key that keeps a shard's result.
func resultKey(shard string) string { return "result-" + shard + ".json" }

// saveResults copies the termination messages of a Job's succeeded pods into its plan
// ConfigMap (keys result-<shard>.json), so results survive the pods (garbage-collected, or
// evicted with their node) and returns every saved result by shard.
func saveResults(ctx context.Context, c client.Client, job *batchv1.Job) (map[string]string, error) {
	var cm corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(job), &cm); err != nil {
		return nil, fmt.Errorf("plan ConfigMap of Job %s: %w", job.Name, err)
	}
	if !sameController(&cm, job) {
		return nil, conflictOf("ConfigMap", &cm)
	}
	ok, _, err := podResults(ctx, c, job)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	base := cm.DeepCopy()
	for k, v := range cm.Data {
		if shard, found := strings.CutPrefix(k, "result-"); found {
			out[strings.TrimSuffix(shard, ".json")] = v
		}
	}
	changed := false
	for shard, msg := range ok {
		if _, had := out[shard]; !had {
			out[shard] = msg
			cm.Data[resultKey(shard)] = msg
			changed = true
		}
	}
	if changed {
		if err := c.Patch(ctx, &cm, client.MergeFrom(base)); err != nil {
			return nil, fmt.Errorf("save shard results of Job %s: %w", job.Name, err)
		}
	}
	return out, nil
}

// sameController reports whether a and b have the same controlling owner.
func sameController(a, b metav1.Object) bool {
	ra, rb := metav1.GetControllerOf(a), metav1.GetControllerOf(b)
	return ra != nil && rb != nil && ra.UID == rb.UID
}

// jobFailure returns why a failed Job failed: the error its last failed pod reported in its
// termination message, else the Job's Failed condition. Callers pass the API reader: the
// Job's Failed condition can reach the cache before its pods do, and the reason read once is
// what the revision keeps.
func jobFailure(ctx context.Context, c client.Reader, job *batchv1.Job, condition string) (string, plan.FailureReason, error) {
	_, failed, err := podResults(ctx, c, job)
	if err != nil {
		return "", "", err
	}
	if len(failed) > 0 {
		f := failed[len(failed)-1]
		return f.text, f.reason, nil
	}
	return condition, "", nil
}

// enqueueReferrers maps an object to the objects of its namespace whose field index `field`
// holds its name (a Corpus to the Indexes that use it, say). newList returns an empty list of
// the referring kind.
func enqueueReferrers(c client.Client, newList func() client.ObjectList, field string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list := newList()
		if err := c.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{field: o.GetName()}); err != nil {
			return nil
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(items))
		for _, it := range items {
			if obj, ok := it.(client.Object); ok {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
		}
		return reqs
	})
}

// podFailure is why one pod of a Job failed: text names the pod, its exit code and the
// worker's error; reason is the worker's typed reason (empty for a plain failure).
type podFailure struct {
	text   string
	reason plan.FailureReason
}

// resultError reads a failed worker's termination message: the "error" and "reason" fields
// of its JSON result, or the trimmed message itself when it is no such result (a crash).
func resultError(msg string) (string, plan.FailureReason) {
	var r struct {
		Error  string             `json:"error"`
		Reason plan.FailureReason `json:"reason"`
	}
	if json.Unmarshal([]byte(msg), &r) == nil && r.Error != "" {
		return r.Error, r.Reason
	}
	return strings.TrimSpace(msg), ""
}

// sourceMounts maps a Corpus or dataset source into a workload: PVCs and ConfigMaps become
// read-only volumes at dir, the other sources are fetched by the worker itself.
func sourceMounts(w *workload, name, dir string, pvc *ragopsv1alpha1.PVCSource, cm *ragopsv1alpha1.LocalObjectReference) string {
	switch {
	case pvc != nil:
		w.volumes = append(w.volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.ClaimName, ReadOnly: true},
		}})
		w.mounts = append(w.mounts, corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true})
		return path.Join(dir, pvc.Path)
	case cm != nil:
		w.volumes = append(w.volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}},
		}})
		w.mounts = append(w.mounts, corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true})
		return dir
	}
	return ""
}

// headerMounts mounts an HTTP source's header Secret.
func headerMounts(w *workload, h *ragopsv1alpha1.HTTPSource) {
	if h == nil || h.HeadersSecretRef == nil {
		return
	}
	w.volumes = append(w.volumes, corev1.Volume{Name: "http-headers", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: h.HeadersSecretRef.Name},
	}})
	w.mounts = append(w.mounts, corev1.VolumeMount{Name: "http-headers", MountPath: plan.HeadersDir, ReadOnly: true})
}

// modelMounts mounts a model folder at dir: a PVC folder, a folder of the image, or an
// emptyDir filled by an init container that fetches and checks the archive.
func modelMounts(w *workload, name, dir string, m ragopsv1alpha1.ModelSpec, image string) string {
	switch {
	case m.PVC != nil:
		w.volumes = append(w.volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: m.PVC.ClaimName, ReadOnly: true},
		}})
		w.mounts = append(w.mounts, corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true})
		return path.Join(dir, m.PVC.Path)
	case m.HTTP != nil:
		w.volumes = append(w.volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		w.mounts = append(w.mounts, corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true})
		w.init = append(w.init, corev1.Container{
			Name:         "fetch-" + name,
			Image:        image,
			Command:      []string{"ragops"},
			Args:         []string{"fetch", "--url", m.HTTP.URL, "--sha256", m.HTTP.SHA256, "--dest", dir},
			VolumeMounts: []corev1.VolumeMount{{Name: name, MountPath: dir}},
		})
		return dir
	default:
		return m.ImagePath
	}
}

// secretEnv returns an env var read from a Secret key.
func secretEnv(name string, ref ragopsv1alpha1.SecretKeySelector) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: ref.Key,
	}}}
}
