package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/vectorstore"
)

// dims is the vector length of the chunks the player writes.
const dims = 8

// player plays what the Job controller, the kubelet and the embedder pods would do for a
// build Job (envtest runs no pods): it writes chunks into the revision collection in the real
// Weaviate, creates one pod per shard with a termination message, and marks the Job Complete,
// as controllers/suite_test.go does.
type player struct {
	k8s   client.Client
	store *vectorstore.Store
	rec   *recorder
	docs  []string
}

// run handles Jobs from rec.jobs until ctx ends; the first error is sent to errs.
func (p *player) run(ctx context.Context, errs chan<- error) {
	for {
		select {
		case <-ctx.Done():
			return
		case key := <-p.rec.jobs:
			if err := p.finish(ctx, key); err != nil && ctx.Err() == nil {
				select {
				case errs <- fmt.Errorf("play Job %s: %w", key, err):
				default:
				}
			}
		}
	}
}

func (p *player) finish(ctx context.Context, key client.ObjectKey) error {
	var cm corev1.ConfigMap
	if err := p.k8s.Get(ctx, key, &cm); err != nil {
		return fmt.Errorf("plan ConfigMap: %w", err)
	}
	var b plan.Build
	p.rec.playStart(cm.Labels[workload.LabelOwner], time.Now())
	if err := json.Unmarshal([]byte(cm.Data[plan.File]), &b); err != nil {
		return fmt.Errorf("plan ConfigMap %s key %s: %w", key, plan.File, err)
	}
	spec := vectorstore.CollectionSpec{Name: b.Collection, Revision: b.Revision, Dimensions: dims,
		Index: vectorstore.VectorIndex{Type: string(b.VectorIndex.Type), Distance: b.VectorIndex.Distance}}
	if err := p.store.EnsureCollection(ctx, spec); err != nil {
		return err
	}
	var chunks []vectorstore.Chunk
	for d, doc := range p.docs {
		for o := 0; o < 2; o++ {
			v := make([]float32, dims)
			v[(d+o)%dims] = 1
			chunks = append(chunks, vectorstore.Chunk{DocID: doc, Ordinal: o, Start: o * 10, End: o*10 + 10, Text: doc, Vector: v})
		}
	}
	if err := p.store.Upsert(ctx, b.Collection, chunks); err != nil {
		return err
	}
	var job batchv1.Job
	if err := p.k8s.Get(ctx, key, &job); err != nil {
		return err
	}
	shards := max(b.Shards, 1)
	for i := 0; i < shards; i++ {
		res, _ := json.Marshal(plan.BuildResult{Shard: i, Documents: int64(len(p.docs)), Chunks: int64(len(chunks)), Tokens: 600, Seconds: 2})
		if err := p.createPod(ctx, &job, i, string(res)); err != nil {
			return err
		}
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := p.k8s.Get(ctx, key, &job); err != nil {
			return err
		}
		now := metav1.Now()
		start := metav1.NewTime(now.Add(-2 * time.Second))
		job.Status = batchv1.JobStatus{StartTime: &start, CompletionTime: &now, Succeeded: int32(shards),
			Conditions: []batchv1.JobCondition{
				{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "CompletionsReached"},
				{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "CompletionsReached"},
			}}
		if job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion {
			job.Status.CompletedIndexes = "0"
			if shards > 1 {
				job.Status.CompletedIndexes = fmt.Sprintf("0-%d", shards-1)
			}
		}
		return p.k8s.Status().Update(ctx, &job)
	})
	if err != nil {
		return fmt.Errorf("mark Job Complete: %w", err)
	}
	p.rec.jobDone(job.Labels[workload.LabelOwner], time.Now())
	return nil
}

// createPod creates the succeeded pod of one completion index, as the kubelet would leave it,
// with the labels and the controller reference the Job controller gives it (the template's
// labels and job-name; the Job's UID).
func (p *player) createPod(ctx context.Context, job *batchv1.Job, i int, msg string) error {
	labels := map[string]string{"batch.kubernetes.io/job-name": job.Name}
	for k, v := range job.Spec.Template.Labels {
		labels[k] = v
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: fmt.Sprintf("%s-%d", job.Name, i),
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))},
			Annotations:     map[string]string{batchv1.JobCompletionIndexAnnotation: fmt.Sprint(i)}},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	if err := p.k8s.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: job.Spec.Template.Spec.Containers[0].Name, Image: "ragops:bench",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: msg, Reason: "Completed"}},
	}}}
	return p.k8s.Status().Update(ctx, pod)
}
