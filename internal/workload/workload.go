// Package workload holds the pure builders of the Jobs ragops runs: a resource and its
// resolved inputs become a Job and the plan ConfigMap it mounts, with no API client
// (after CloudNativePG's pkg/specs). It also reads a finished Job's results back from its
// pods. The controllers create, watch and delete what these functions describe.
package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/tracing"
)

// Labels on everything ragops creates.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelComponent = "app.kubernetes.io/component"
	LabelOwner     = "ragops.dev/owner"
	LabelRevision  = "ragops.dev/revision"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "ragops"

	// LabelJobKind tells an Index's build Jobs from its sync Jobs.
	LabelJobKind = "ragops.dev/job-kind"
	JobKindBuild = "build"
	JobKindSync  = "sync"

	// LabelPlanHash on a plan ConfigMap holds the first 16 hex digits of its plan's SHA-256
	// (the Job's pods carry the whole sum in RAGOPS_PLAN_SHA256).
	LabelPlanHash = "ragops.dev/plan-hash"
)

// Components: the LabelComponent value of each workload kind.
const (
	ComponentScan     = "scan"
	ComponentEmbed    = "embed"
	ComponentEvaluate = "evaluate"
	ComponentEstimate = "estimate"
)

// DefaultBackoffLimit is the retries of a worker Job whose template sets none (the CRD's
// default when a template is given), rather than Kubernetes's 6 with minutes of back-off. An
// Indexed Job (sharded, every embed Job) has it per shard (backoffLimitPerIndex).
const DefaultBackoffLimit int32 = 2

// MaxNameLength bounds the names ragops generates for Jobs, their plan ConfigMaps and
// Evaluations: a Job's name is also the value of its pods' job-name label (at most 63).
const MaxNameLength = 63

// Owner is the resource that controls a workload's Job and plan ConfigMap: any API object
// (a controller-runtime client.Object satisfies it).
type Owner interface {
	metav1.Object
	runtime.Object
}

// Workload is one Job the controllers run: its plan, command and mounts. The builders of
// this package (Scan, Embed, Evaluate) fill it; Job and PlanConfigMap render it.
type Workload struct {
	// Owner controls the Job and its plan ConfigMap; its namespace is theirs.
	Owner Owner
	Name  string
	// Component is the LabelComponent value (ComponentScan, ComponentEmbed, ...).
	Component string
	// Kind is JobKindBuild or JobKindSync for embed Jobs, else "".
	Kind     string
	Revision string
	// Plan is written as JSON into the plan ConfigMap (plan.File).
	Plan     any
	Args     []string
	Template ragopsv1alpha1.JobTemplate
	// Image is the worker image when the template names none.
	Image  string
	Shards int32
	// GPU asks for one nvidia.com/gpu unless the template's limits name a count.
	GPU     bool
	Volumes []corev1.Volume
	Mounts  []corev1.VolumeMount
	Env     []corev1.EnvVar
	Init    []corev1.Container
	// Deadline is the Job's activeDeadlineSeconds when the template sets none (none when 0).
	Deadline time.Duration
	// Annotations go on the Job.
	Annotations map[string]string
	// Trace is the worker's tracing environment (tracing.JobEnv: the OTLP settings and the
	// TRACEPARENT of the reconcile that made the Job), set on the container; its TRACEPARENT
	// is also the Job's tracing.AnnotationTraceParent. None while tracing is off.
	Trace [][2]string
	// fetched is the room, in bytes, the remote sources the worker fetches into /tmp need
	// (see Fetches); the scratch volume's size limit is ScratchBase more.
	fetched int64
}

// Labels returns the labels of the Job, its pods and its plan ConfigMap.
func (w *Workload) Labels() map[string]string {
	l := ObjectLabels(w.Component, w.Owner.GetName(), w.Revision)
	if w.Kind != "" {
		l[LabelJobKind] = w.Kind
	}
	return l
}

// ObjectLabels returns the labels of an object ragops creates for owner (a gate
// Evaluation, a results ConfigMap, a Job): managed-by, component, the owner's name as a
// label value and, unless empty, the revision.
func ObjectLabels(component, owner, revision string) map[string]string {
	l := map[string]string{
		LabelManagedBy: ManagedBy,
		LabelComponent: component,
		LabelOwner:     LabelValue(owner),
	}
	if revision != "" {
		l[LabelRevision] = LabelValue(revision)
	}
	return l
}

// PlanConfigMap returns the plan ConfigMap of the Job (no owner references yet) and the
// plan's SHA-256 in hex, which the Job's container must carry in plan.EnvPlanSHA256.
func (w *Workload) PlanConfigMap() (*corev1.ConfigMap, string, error) {
	raw, err := json.MarshalIndent(w.Plan, "", "  ")
	if err != nil {
		return nil, "", err
	}
	sum := plan.SHA256(raw)
	labels := w.Labels()
	labels[LabelPlanHash] = sum[:16]
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Owner.GetNamespace(), Name: w.Name, Labels: labels},
		Data:       map[string]string{plan.File: string(raw)},
	}, sum, nil
}

// LabelValue returns name as a label value: itself when it fits a label's 63 characters,
// else shortened with a hash suffix (ObjectName), so any object name can own workloads.
func LabelValue(name string) string { return ObjectName(name, 63) }

// ObjectName returns prefix when it fits n bytes, else its first n-9 bytes, "-" and 8 hex
// digits of its SHA-256: names derived from two long object names that share their first n
// bytes stay apart.
func ObjectName(prefix string, n int) string {
	if len(prefix) <= n {
		return prefix
	}
	sum := sha256.Sum256([]byte(prefix))
	return strings.TrimRight(prefix[:n-9], "-.") + "-" + hex.EncodeToString(sum[:])[:8]
}

// Job returns the Job of the workload (no owner reference, no plan checksum: the caller
// adds both): one worker container running `ragops <Args> --plan <plan>`, its plan mounted
// read-only, /tmp an emptyDir of ScratchLimit (also in plan.EnvScratchBytes), the pod
// restricted (RestrictPod). Jobs of more than one shard, and every embed Job, use Indexed
// completion.
func (w *Workload) Job() *batchv1.Job {
	t := w.Template
	image := t.Image
	if image == "" {
		image = w.Image
	}
	res := *t.Resources.DeepCopy()
	if w.GPU {
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
			LocalObjectReference: corev1.LocalObjectReference{Name: w.Name},
		}},
	}, {
		Name: plan.ScratchVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: w.ScratchLimit()}},
	}}, w.Volumes...)
	mounts := append([]corev1.VolumeMount{
		{Name: "plan", MountPath: plan.Dir, ReadOnly: true},
		{Name: plan.ScratchVolume, MountPath: "/tmp"},
	}, w.Mounts...)
	env := append(slices.Clone(w.Env), corev1.EnvVar{Name: plan.EnvScratchBytes, Value: strconv.FormatInt(w.ScratchLimit().Value(), 10)})
	annotations := w.Annotations
	for _, kv := range w.Trace {
		env = append(env, corev1.EnvVar{Name: kv[0], Value: kv[1]})
		if kv[0] == tracing.EnvTraceParent {
			annotations = maps.Clone(annotations)
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[tracing.AnnotationTraceParent] = kv[1]
		}
	}
	shards := max(w.Shards, 1)
	backoff := t.BackoffLimit
	if backoff == nil {
		backoff = ptr.To(DefaultBackoffLimit)
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Owner.GetNamespace(), Name: w.Name, Labels: w.Labels(), Annotations: annotations},
		Spec: batchv1.JobSpec{
			Completions:           ptr.To(shards),
			Parallelism:           ptr.To(shards),
			BackoffLimit:          backoff,
			ActiveDeadlineSeconds: activeDeadline(t.ActiveDeadlineSeconds, w.Deadline),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: w.Labels()},
				Spec: corev1.PodSpec{
					RestartPolicy:      corev1.RestartPolicyNever,
					ServiceAccountName: t.ServiceAccountName,
					NodeSelector:       t.NodeSelector,
					Tolerations:        t.Tolerations,
					InitContainers:     w.Init,
					Volumes:            volumes,
					Containers: []corev1.Container{{
						Name:                     w.Component,
						Image:                    image,
						Command:                  []string{"ragops"},
						Args:                     append(w.Args, "--plan", path.Join(plan.Dir, plan.File)),
						Env:                      env,
						Resources:                res,
						VolumeMounts:             mounts,
						TerminationMessagePath:   plan.TerminationLog,
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
					}},
				},
			},
		},
	}
	RestrictPod(&job.Spec.Template.Spec)
	if shards > 1 || w.Component == ComponentEmbed {
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		// Each shard has its own retry budget: one that keeps failing (an OOM on a tail
		// document) fails alone while the others finish, and the Job reports which indexes
		// completed and failed. More than half the shards failing points at a common cause
		// (image, store, model): the Job then stops the rest.
		job.Spec.BackoffLimitPerIndex, job.Spec.BackoffLimit = backoff, nil
		job.Spec.MaxFailedIndexes = ptr.To(shards / 2)
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
