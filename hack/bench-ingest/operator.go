package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/cmd"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
)

// operatorConfig says where the operator runs: the local cluster (hack/localcluster), its
// node's state folder (where the shim leaves each container's exit status with its wait4
// rusage), the namespace with the claim on the prepared data folder, and the processes whose
// CPU time is read from /proc over the run.
type operatorConfig struct {
	kubeconfig, namespace, claim, nodeState string
	// image is the model folder's path inside the worker image (/models/<name>).
	image       string
	shards      int
	managerPID  int
	clusterPIDs []int
	httpHost    string
	grpcHost    string
	size        int
	overlap     int
	timeout     time.Duration
}

// operatorResult is what an Index built by the operator adds to a run's result.
type operatorResult struct {
	Index  string `json:"index"`
	Shards int    `json:"shards"`
	// Pods are the build Job's pods (every attempt): their process's CPU and peak RSS from
	// the shim's wait4, the times, and their BuildResult.
	Pods []podRun `json:"pods"`
	// ScanCPUS is the Corpus scan pod's process CPU time (user + system).
	ScanCPUS float64 `json:"scanCpuS"`
	// OperatorCPUS is the ragops manager's CPU time over the run; ClusterCPUS that of etcd,
	// kube-apiserver, kube-controller-manager, kube-scheduler and the local node (the node's
	// own, not its pods').
	OperatorCPUS float64 `json:"operatorCpuS"`
	ClusterCPUS  float64 `json:"clusterCpuS"`
	// StatusChunks is the chunk count the Index's status reports for the revision.
	StatusChunks int64    `json:"statusChunks"`
	Timeline     timeline `json:"timeline"`
}

// podRun is one worker pod's process.
type podRun struct {
	Name       string            `json:"name"`
	CPUS       float64           `json:"cpuS"`
	PeakRSSMiB float64           `json:"peakRssMiB"`
	Result     *plan.BuildResult `json:"result,omitempty"`
	// Seen is when the benchmark first saw the pod (polled every 250 ms); Started and
	// Finished are the shim's clock around the program.
	Seen     time.Time `json:"seen"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
}

// timeline holds seconds after the apply (polled every 250 ms, the container's from the shim).
type timeline struct {
	CorpusReadyS    float64 `json:"corpusReadyS"`
	FirstBuildPodS  float64 `json:"firstBuildPodS"`
	FirstContainerS float64 `json:"firstContainerS"`
	LastContainerS  float64 `json:"lastContainerS"`
	ReadyS          float64 `json:"readyS"`
}

// exitStatus is the part of the local node shim's exit file (sandbox.ExitStatus) read here.
type exitStatus struct {
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	Usage      *struct {
		UserSeconds   float64 `json:"userSeconds"`
		SystemSeconds float64 `json:"systemSeconds"`
		MaxRSSKiB     int64   `json:"maxRssKiB"`
	} `json:"usage"`
}

// newClient returns a client of the local cluster that knows ragops's kinds and pods.
func newClient(kubeconfig string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	ctrllog.SetLogger(logr.Discard())
	return client.New(cfg, client.Options{Scheme: cmd.Scheme()})
}

// objects returns the Corpus, ChunkingStrategy and Index of one run, all named name: the
// prepared folder through the claim, the strategy impl ragops uses (Recursive, tokens), and
// an Index with its plan's settings (cpu, 1 thread, fp32, HNSW cosine 128/32, no model
// server) and cfg.shards embedder pods.
func (cfg operatorConfig) objects(name string) []client.Object {
	om := func() metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: cfg.namespace} }
	off := false
	return []client.Object{
		&ragopsv1alpha1.Corpus{ObjectMeta: om(), Spec: ragopsv1alpha1.CorpusSpec{
			PVC:    &ragopsv1alpha1.PVCSource{ClaimName: cfg.claim},
			Format: ragopsv1alpha1.FormatBEIR, Include: []string{"corpus.jsonl"}}},
		&ragopsv1alpha1.ChunkingStrategy{ObjectMeta: om(), Spec: ragopsv1alpha1.ChunkingStrategySpec{
			Type: ragopsv1alpha1.StrategyRecursive, Unit: ragopsv1alpha1.UnitTokens, Size: int32(cfg.size), Overlap: int32(cfg.overlap)}},
		&ragopsv1alpha1.Index{ObjectMeta: om(), Spec: ragopsv1alpha1.IndexSpec{
			CorpusRef:   ragopsv1alpha1.LocalObjectReference{Name: name},
			StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: name},
			Model:       ragopsv1alpha1.ModelSpec{Name: filepath.Base(cfg.image), ImagePath: cfg.image},
			Embedder: ragopsv1alpha1.EmbedderSpec{Device: ragopsv1alpha1.DeviceCPU, Precision: ragopsv1alpha1.PrecisionFP32,
				Shards: int32(cfg.shards), Threads: 1},
			Weaviate:    ragopsv1alpha1.WeaviateSpec{URL: "http://" + cfg.httpHost, GRPCAddress: cfg.grpcHost},
			VectorIndex: ragopsv1alpha1.VectorIndexSpec{Type: "hnsw", Distance: "cosine", EfConstruction: 128, MaxConnections: 32},
			Serving:     ragopsv1alpha1.ServingSpec{Enabled: &off},
		}},
	}
}

// runOperator applies one run's objects, waits for the Index to be Ready and fills res: wall
// time from the apply to Ready, the build pods' CPU and peak RSS, the operator's and the
// cluster's CPU, the revision's documents, chunks, tokens and collection.
func runOperator(ctx context.Context, cfg operatorConfig, res *result) error {
	c, err := newClient(cfg.kubeconfig)
	if err != nil {
		return err
	}
	name := strings.ToLower(strings.ReplaceAll(res.Collection, "_", "-"))
	op := &operatorResult{Index: name, Shards: cfg.shards}
	res.Operator = op
	m0, err := procCPU(cfg.managerPID)
	if err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	c0 := clusterCPU(cfg.clusterPIDs)
	start := time.Now()
	for _, o := range cfg.objects(name) {
		if err := c.Create(ctx, o); err != nil {
			return err
		}
	}
	seen := map[string]time.Time{}
	idx, err := waitReady(ctx, c, cfg, name, start, seen, &op.Timeline)
	if err != nil {
		return err
	}
	res.WallS = time.Since(start).Seconds()
	m1, err := procCPU(cfg.managerPID)
	if err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	op.OperatorCPUS, op.ClusterCPUS = m1-m0, clusterCPU(cfg.clusterPIDs)-c0
	var rev *ragopsv1alpha1.RevisionStatus
	for i := range idx.Status.Revisions {
		if idx.Status.Revisions[i].Name == idx.Status.ActiveRevision {
			rev = &idx.Status.Revisions[i]
		}
	}
	if rev == nil {
		return fmt.Errorf("index %s is Ready without its active revision %q in status", name, idx.Status.ActiveRevision)
	}
	res.Collection, res.Documents, res.Chunks, res.EncodedTokens = rev.Collection, rev.Documents, rev.Chunks, rev.Tokens
	op.StatusChunks = idx.Status.Chunks
	return podUsage(ctx, c, cfg, name, start, seen, res)
}

// waitReady polls the Index (and the run's pods, to note when each is first seen) every
// 250 ms until it is Ready for its generation; Stalled or the timeout end the wait.
func waitReady(ctx context.Context, c client.Client, cfg operatorConfig, name string, start time.Time,
	seen map[string]time.Time, tl *timeline) (*ragopsv1alpha1.Index, error) {
	since := func() float64 { return time.Since(start).Seconds() }
	key := client.ObjectKey{Namespace: cfg.namespace, Name: name}
	for time.Since(start) < cfg.timeout {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(cfg.namespace),
			client.MatchingLabels{workload.LabelOwner: workload.LabelValue(name)}); err != nil {
			return nil, err
		}
		for _, p := range pods.Items {
			if _, ok := seen[p.Name]; !ok {
				seen[p.Name] = time.Now()
				if p.Labels[workload.LabelComponent] == workload.ComponentEmbed && tl.FirstBuildPodS == 0 {
					tl.FirstBuildPodS = since()
				}
			}
		}
		if tl.CorpusReadyS == 0 {
			var corpus ragopsv1alpha1.Corpus
			if err := c.Get(ctx, key, &corpus); err != nil {
				return nil, err
			}
			if apimeta.IsStatusConditionTrue(corpus.Status.Conditions, "Ready") {
				tl.CorpusReadyS = since()
			}
		}
		var idx ragopsv1alpha1.Index
		if err := c.Get(ctx, key, &idx); err != nil {
			return nil, err
		}
		if s := apimeta.FindStatusCondition(idx.Status.Conditions, "Stalled"); s != nil && s.Status == metav1.ConditionTrue {
			return nil, fmt.Errorf("index %s is Stalled: %s: %s", name, s.Reason, s.Message)
		}
		if idx.Status.ObservedGeneration == idx.Generation && apimeta.IsStatusConditionTrue(idx.Status.Conditions, "Ready") {
			tl.ReadyS = since()
			return &idx, nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return nil, fmt.Errorf("index %s not Ready within %s", name, cfg.timeout)
}

// podUsage reads the run's pods: each build pod's process CPU, peak RSS and times from the
// node's exit files and its BuildResult from the termination message; the scan pods' CPU.
// res.CPUS is the build pods' summed CPU, res.PeakRSSMiB the largest pod's peak, res.Stages
// the shards' summed stages.
func podUsage(ctx context.Context, c client.Client, cfg operatorConfig, name string, start time.Time,
	seen map[string]time.Time, res *result) error {
	op := res.Operator
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(cfg.namespace),
		client.MatchingLabels{workload.LabelOwner: workload.LabelValue(name)}); err != nil {
		return err
	}
	res.Stages = &plan.StageSeconds{}
	for _, p := range pods.Items {
		run := podRun{Name: p.Name, Seen: seen[p.Name]}
		for _, cs := range p.Spec.Containers {
			exits, _ := filepath.Glob(filepath.Join(cfg.nodeState, "pods", string(p.UID), "containers", cs.Name, "exit-*.json"))
			if len(exits) == 0 {
				return fmt.Errorf("pod %s: no exit status under %s", p.Name, cfg.nodeState)
			}
			for _, f := range exits {
				var st exitStatus
				raw, err := os.ReadFile(f)
				if err != nil {
					return err
				}
				if err := json.Unmarshal(raw, &st); err != nil {
					return fmt.Errorf("%s: %w", f, err)
				}
				if st.Usage == nil {
					return fmt.Errorf("%s has no usage: a local node from before the shim recorded rusage", f)
				}
				run.CPUS += st.Usage.UserSeconds + st.Usage.SystemSeconds
				run.PeakRSSMiB = max(run.PeakRSSMiB, float64(st.Usage.MaxRSSKiB)/1024)
				if run.Started.IsZero() || st.StartedAt.Before(run.Started) {
					run.Started = st.StartedAt
				}
				if st.FinishedAt.After(run.Finished) {
					run.Finished = st.FinishedAt
				}
			}
		}
		if p.Labels[workload.LabelComponent] != workload.ComponentEmbed {
			op.ScanCPUS += run.CPUS
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode == 0 {
				var br plan.BuildResult
				if err := json.Unmarshal([]byte(t.Message), &br); err == nil {
					run.Result = &br
				}
			}
		}
		op.Pods = append(op.Pods, run)
	}
	if len(op.Pods) == 0 {
		return fmt.Errorf("index %s: no build pods found", name)
	}
	sort.Slice(op.Pods, func(i, j int) bool { return op.Pods[i].Name < op.Pods[j].Name })
	tl := &op.Timeline
	for i, p := range op.Pods {
		res.CPUS += p.CPUS
		res.PeakRSSMiB = max(res.PeakRSSMiB, p.PeakRSSMiB)
		s, f := p.Started.Sub(start).Seconds(), p.Finished.Sub(start).Seconds()
		if i == 0 || s < tl.FirstContainerS {
			tl.FirstContainerS = s
		}
		tl.LastContainerS = max(tl.LastContainerS, f)
		if st := p.Result; st != nil && st.Stages != nil {
			res.Stages.Read += st.Stages.Read
			res.Stages.Chunk += st.Stages.Chunk
			res.Stages.Tokenize += st.Stages.Tokenize
			res.Stages.Inference += st.Stages.Inference
			res.Stages.Write += st.Stages.Write
		}
	}
	return nil
}

// cleanupOperator deletes the run's Index (its finalizer deletes the alias and the
// collections), waits until it is gone, then deletes the Corpus and the strategy.
func cleanupOperator(ctx context.Context, cfg operatorConfig, name string) error {
	c, err := newClient(cfg.kubeconfig)
	if err != nil {
		return err
	}
	objs := cfg.objects(name)
	idx := objs[2]
	if err := client.IgnoreNotFound(c.Delete(ctx, idx, client.PropagationPolicy(metav1.DeletePropagationBackground))); err != nil {
		return err
	}
	for end := time.Now().Add(2 * time.Minute); ; time.Sleep(250 * time.Millisecond) {
		err := c.Get(ctx, client.ObjectKeyFromObject(idx), &ragopsv1alpha1.Index{})
		if apierrors.IsNotFound(err) {
			break
		}
		if err != nil {
			return err
		}
		if time.Now().After(end) {
			return fmt.Errorf("index %s still there 2 minutes after its deletion", name)
		}
	}
	for _, o := range objs[:2] {
		if err := client.IgnoreNotFound(c.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground))); err != nil {
			return err
		}
	}
	return nil
}

// clusterCPU sums the CPU seconds of the processes (those gone count 0).
func clusterCPU(pids []int) float64 {
	var s float64
	for _, p := range pids {
		v, _ := procCPU(p)
		s += v
	}
	return s
}
