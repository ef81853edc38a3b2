package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/procfs"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/cmd"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
)

// env is the local cluster the parts run on (hack/localcluster, started by run.sh as
// hack/bench-ingest/run.sh does): its node's state folder (the shim leaves each container's
// exit status with wait4's rusage there), the namespace, the model folder inside the worker
// image, Weaviate, and the operator's and control plane's pids (CPU from /proc).
type env struct {
	c           client.Client
	namespace   string
	nodeState   string
	image       string
	httpHost    string
	grpcHost    string
	managerPID  int
	weaviatePID int
	clusterPIDs []int
	timeout     time.Duration
}

func newEnv(kubeconfig string) (*env, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	ctrllog.SetLogger(logr.Discard())
	c, err := client.New(cfg, client.Options{Scheme: cmd.Scheme()})
	if err != nil {
		return nil, err
	}
	return &env{c: c}, nil
}

// claim makes a PersistentVolume on the host folder dir (ReadOnlyMany, hostPath) and its
// claim name in the namespace.
func (e *env) claim(ctx context.Context, name, dir string) error {
	q := resource.MustParse("1Gi")
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: e.namespace + "-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: q},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			StorageClassName:              e.namespace,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: dir, Type: ptr(corev1.HostPathDirectory)}},
		}}
	sc := e.namespace
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.namespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			StorageClassName: &sc, VolumeName: pv.Name,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: q}},
		}}
	for _, o := range []client.Object{pv, pvc} {
		if err := e.c.Create(ctx, o); err != nil {
			return fmt.Errorf("%s: %w", o.GetName(), err)
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// corpus is a Corpus on a claim, reading the files Include names, rescanned only on request
// (interval 24 h), OCR as the Corpus defaults it (Auto, nld and eng).
func (e *env) corpus(name, claim string, format ragopsv1alpha1.DocumentFormat, include ...string) *ragopsv1alpha1.Corpus {
	return &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.namespace},
		Spec: ragopsv1alpha1.CorpusSpec{PVC: &ragopsv1alpha1.PVCSource{ClaimName: claim}, Format: format,
			Include: include, Interval: metav1.Duration{Duration: 24 * time.Hour}}}
}

// strategy is a Recursive strategy of size tokens, no overlap.
func (e *env) strategy(name string, size int) *ragopsv1alpha1.ChunkingStrategy {
	return &ragopsv1alpha1.ChunkingStrategy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.namespace},
		Spec: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyRecursive,
			Unit: ragopsv1alpha1.UnitTokens, Size: int32(size)}}
}

// index is an Index of corpus and strategy with the model in the worker image (cpu, fp32, 1
// thread a pod, HNSW cosine, no model server) on shards embedder pods.
func (e *env) index(name, corpus, strategy string, shards int) *ragopsv1alpha1.Index {
	off := false
	return &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.namespace},
		Spec: ragopsv1alpha1.IndexSpec{
			CorpusRef:   ragopsv1alpha1.LocalObjectReference{Name: corpus},
			StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: strategy},
			Model:       e.model(),
			Embedder: ragopsv1alpha1.EmbedderSpec{Device: ragopsv1alpha1.DeviceCPU, Precision: ragopsv1alpha1.PrecisionFP32,
				Shards: int32(shards), Threads: 1},
			Weaviate:    ragopsv1alpha1.WeaviateSpec{URL: "http://" + e.httpHost, GRPCAddress: e.grpcHost},
			VectorIndex: ragopsv1alpha1.VectorIndexSpec{Type: "hnsw", Distance: "cosine", EfConstruction: 128, MaxConnections: 32},
			Serving:     ragopsv1alpha1.ServingSpec{Enabled: &off},
		}}
}

func (e *env) model() ragopsv1alpha1.ModelSpec {
	return ragopsv1alpha1.ModelSpec{Name: filepath.Base(e.image), ImagePath: e.image}
}

// step is what one measured step (a build, a sync, a copy) cost, from its start (an apply or
// a change of the documents) to the served revision holding it.
type step struct {
	Part  int     `json:"part"`
	Step  string  `json:"step"`
	Index string  `json:"index"`
	WallS float64 `json:"wallS"`
	// ReaderCalls are the documents whose format reader ran (DocumentReads.Extracted summed
	// over the step's worker pods' BuildResults); StatusReads is the active revision's
	// status.reads after the step (the same counts as the operator summed them).
	ReaderCalls int64                         `json:"readerCalls"`
	StatusReads *ragopsv1alpha1.DocumentReads `json:"statusReads,omitempty"`
	Unchanged   int64                         `json:"unchanged"`
	CacheHits   int64                         `json:"cacheHits"`
	Documents   int64                         `json:"documents"`
	Deleted     int64                         `json:"deleted"`
	Chunks      int64                         `json:"chunks"`
	Tokens      int64                         `json:"tokens"`
	OCRPages    int64                         `json:"ocrPages"`
	// CPUS is WorkerCPUS + ScanCPUS + OperatorCPUS: the worker pods' (build, sync or copy)
	// and the Corpus scan pods' process CPU from the shim's wait4, the manager's from /proc.
	CPUS         float64 `json:"cpuS"`
	WorkerCPUS   float64 `json:"workerCpuS"`
	ScanCPUS     float64 `json:"scanCpuS"`
	OperatorCPUS float64 `json:"operatorCpuS"`
	// ClusterCPUS is the control plane's and the local node's own CPU, WeaviateCPUS
	// Weaviate's (neither counted in CPUS).
	ClusterCPUS  float64 `json:"clusterCpuS"`
	WeaviateCPUS float64 `json:"weaviateCpuS,omitempty"`
	// PeakRSSMiB is the largest worker or scan pod's peak RSS.
	PeakRSSMiB float64 `json:"peakRssMiB"`
	Pods       int     `json:"pods"`
	// Unmeasured counts pods whose exit files were gone before they were read (their CPU is
	// missing from the sums).
	Unmeasured int `json:"unmeasured,omitempty"`
	// Revision and CorpusRevision the served revision holds after the step.
	Revision       string `json:"revision"`
	CorpusRevision string `json:"corpusRevision"`
	Collection     string `json:"collection"`
	StatusChunks   int64  `json:"statusChunks"`
	CopyFrom       string `json:"copyFrom,omitempty"`
}

// watch notes the pods of the owners (Index and Corpus names) as they come and go, so that
// pods a Job's TTL deletes are still measured; done pods are measured once.
type watch struct {
	e        *env
	owners   []string
	seen     map[string]corev1.Pod
	measured map[string]bool
	// used holds each ended pod's CPU seconds and peak RSS MiB, read when first seen ended.
	used map[string][2]float64
}

func (e *env) watch(owners ...string) *watch {
	return &watch{e: e, owners: owners, seen: map[string]corev1.Pod{}, measured: map[string]bool{},
		used: map[string][2]float64{}}
}

func (w *watch) poll(ctx context.Context) error {
	for _, o := range w.owners {
		var pods corev1.PodList
		if err := w.e.c.List(ctx, &pods, client.InNamespace(w.e.namespace),
			client.MatchingLabels{workload.LabelOwner: workload.LabelValue(o)}); err != nil {
			return err
		}
		for _, p := range pods.Items {
			uid := string(p.UID)
			w.seen[uid] = p
			if _, ok := w.used[uid]; !ok && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
				cpu, rss, found, err := w.usage(uid, p)
				if err != nil {
					return err
				}
				if found {
					w.used[uid] = [2]float64{cpu, rss}
				}
			}
		}
	}
	return nil
}

// ended says every pod seen (an Evaluation's aside) has ended.
func (w *watch) ended() bool {
	for _, p := range w.seen {
		if p.Labels[workload.LabelComponent] != workload.ComponentEvaluate &&
			p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return false
		}
	}
	return true
}

// usage is a pod's process CPU seconds and peak RSS from the shim's exit files; ok is false
// when the pod has none (yet, or any more: the node removes a deleted pod's folder).
func (w *watch) usage(uid string, p corev1.Pod) (cpu, rss float64, ok bool, err error) {
	for _, cs := range p.Spec.Containers {
		exits, _ := filepath.Glob(filepath.Join(w.e.nodeState, "pods", uid, "containers", cs.Name, "exit-*.json"))
		for _, f := range exits {
			var st struct {
				Usage *struct {
					UserSeconds   float64 `json:"userSeconds"`
					SystemSeconds float64 `json:"systemSeconds"`
					MaxRSSKiB     int64   `json:"maxRssKiB"`
				} `json:"usage"`
			}
			raw, err := os.ReadFile(f)
			if err != nil {
				return 0, 0, false, err
			}
			if err := json.Unmarshal(raw, &st); err != nil {
				return 0, 0, false, fmt.Errorf("%s: %w", f, err)
			}
			if st.Usage == nil {
				return 0, 0, false, fmt.Errorf("%s has no usage: a local node from before the shim recorded rusage", f)
			}
			cpu += st.Usage.UserSeconds + st.Usage.SystemSeconds
			rss = max(rss, float64(st.Usage.MaxRSSKiB)/1024)
			ok = true
		}
	}
	return cpu, rss, ok, nil
}

// measure adds the pods seen since the last measure to s: CPU and peak RSS from the exit
// files (read when the pod was first seen ended, before a Job's deletion removes them),
// BuildResults from the worker pods' termination messages.
func (w *watch) measure(s *step) error {
	for uid, p := range w.seen {
		if w.measured[uid] {
			continue
		}
		w.measured[uid] = true
		u, ok := w.used[uid]
		if !ok {
			cpu, rss, found, err := w.usage(uid, p)
			if err != nil {
				return err
			}
			if !found && p.Labels[workload.LabelComponent] != workload.ComponentEvaluate {
				s.Unmeasured++
			}
			u = [2]float64{cpu, rss}
		}
		cpu, rss := u[0], u[1]
		s.Pods++
		s.PeakRSSMiB = max(s.PeakRSSMiB, rss)
		switch p.Labels[workload.LabelComponent] {
		case workload.ComponentScan:
			s.ScanCPUS += cpu
			continue
		case workload.ComponentEvaluate:
			continue // an Evaluation's pod is not part of a build or sync
		}
		s.WorkerCPUS += cpu
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.State.Terminated
			if t == nil || t.ExitCode != 0 {
				continue
			}
			var br plan.BuildResult
			if json.Unmarshal([]byte(t.Message), &br) != nil {
				continue
			}
			s.Documents += br.Documents
			s.Chunks += br.Chunks
			s.Tokens += br.Tokens
			s.Deleted += br.Deleted
			s.Unchanged += br.Unchanged
			if br.OCR != nil {
				s.OCRPages += br.OCR.Pages
			}
			if br.Reads != nil {
				s.ReaderCalls += br.Reads.Extracted
				s.CacheHits += br.Reads.CacheHits
			}
		}
	}
	return nil
}

// until polls every 500 ms (noting pods) until done says the Index is where the step
// wants it; Stalled or the timeout end the wait.
func (w *watch) until(ctx context.Context, index string, done func(*ragopsv1alpha1.Index) (bool, error)) (*ragopsv1alpha1.Index, error) {
	end := time.Now().Add(w.e.timeout)
	for time.Now().Before(end) {
		if err := w.poll(ctx); err != nil {
			return nil, err
		}
		var idx ragopsv1alpha1.Index
		if err := w.e.c.Get(ctx, client.ObjectKey{Namespace: w.e.namespace, Name: index}, &idx); err != nil {
			return nil, err
		}
		if s := apimeta.FindStatusCondition(idx.Status.Conditions, "Stalled"); s != nil && s.Status == metav1.ConditionTrue {
			return nil, fmt.Errorf("index %s is Stalled: %s: %s", index, s.Reason, s.Message)
		}
		ok, err := done(&idx)
		if err != nil {
			return nil, err
		}
		if ok {
			return &idx, nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil, fmt.Errorf("index %s: step not done within %s", index, w.e.timeout)
}

// active returns the Index's served revision's status (nil when none).
func active(idx *ragopsv1alpha1.Index) *ragopsv1alpha1.RevisionStatus {
	for i := range idx.Status.Revisions {
		if idx.Status.Revisions[i].Name == idx.Status.ActiveRevision {
			return &idx.Status.Revisions[i]
		}
	}
	return nil
}

// settled says the Index is Ready for its generation, builds nothing, and serves a revision
// holding corpusRevision (any when empty).
func settled(idx *ragopsv1alpha1.Index, corpusRevision string) bool {
	rev := active(idx)
	return rev != nil && idx.Status.ObservedGeneration == idx.Generation && idx.Status.Build == nil &&
		apimeta.IsStatusConditionTrue(idx.Status.Conditions, "Ready") &&
		(corpusRevision == "" || rev.CorpusRevision == corpusRevision)
}

// scan asks the Corpus for a scan now (ragops.dev/scan-requested) and returns its content
// revision once it handled the request.
func (e *env) scan(ctx context.Context, w *watch, corpus, request string) (string, error) {
	var c ragopsv1alpha1.Corpus
	key := client.ObjectKey{Namespace: e.namespace, Name: corpus}
	if err := e.c.Get(ctx, key, &c); err != nil {
		return "", err
	}
	asked := time.Now().Truncate(time.Second)
	patch := client.MergeFrom(c.DeepCopy())
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations["ragops.dev/scan-requested"] = request
	if err := e.c.Patch(ctx, &c, patch); err != nil {
		return "", err
	}
	for end := time.Now().Add(e.timeout); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if err := w.poll(ctx); err != nil {
			return "", err
		}
		if err := e.c.Get(ctx, key, &c); err != nil {
			return "", err
		}
		if c.Status.LastHandledScanRequest == request && c.Status.ObservedGeneration == c.Generation &&
			c.Status.LastSyncTime != nil && !c.Status.LastSyncTime.Time.Before(asked) &&
			apimeta.IsStatusConditionTrue(c.Status.Conditions, "Ready") {
			return c.Status.Revision, nil
		}
	}
	return "", fmt.Errorf("corpus %s did not handle scan request %s within %s", corpus, request, e.timeout)
}

// meter takes the manager's and the control plane's CPU at a step's start; finish fills the
// step from the served revision and the pods measured.
type meter struct {
	e          *env
	start      time.Time
	m0, c0, w0 float64
	part       int
	name, idx  string
}

func (e *env) meter(part int, name, index string) *meter {
	m0, _ := procCPU(e.managerPID)
	w0, _ := procCPU(e.weaviatePID)
	return &meter{e: e, start: time.Now(), m0: m0, c0: clusterCPU(e.clusterPIDs), w0: w0, part: part, name: name, idx: index}
}

func (m *meter) finish(w *watch, idx *ragopsv1alpha1.Index) (step, error) {
	s := step{Part: m.part, Step: m.name, Index: m.idx, WallS: round(time.Since(m.start).Seconds(), 1)}
	m1, err := procCPU(m.e.managerPID)
	if err != nil {
		return s, fmt.Errorf("operator: %w", err)
	}
	s.OperatorCPUS = m1 - m.m0
	s.ClusterCPUS = clusterCPU(m.e.clusterPIDs) - m.c0
	if w1, err := procCPU(m.e.weaviatePID); err == nil {
		s.WeaviateCPUS = w1 - m.w0
	}
	// The last pods' exit files and termination messages: wait (30 s at most) until every
	// pod seen, Evaluations' aside, has ended.
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if err := w.poll(context.Background()); err != nil {
			return s, err
		}
		if w.ended() || time.Now().After(end) {
			break
		}
	}
	if err := w.measure(&s); err != nil {
		return s, err
	}
	s.CPUS = s.WorkerCPUS + s.ScanCPUS + s.OperatorCPUS
	for _, p := range []*float64{&s.CPUS, &s.WorkerCPUS, &s.ScanCPUS, &s.OperatorCPUS, &s.ClusterCPUS, &s.WeaviateCPUS, &s.PeakRSSMiB} {
		*p = round(*p, 2)
	}
	if rev := active(idx); rev != nil {
		s.Revision, s.CorpusRevision, s.Collection, s.StatusReads = rev.Name, rev.CorpusRevision, rev.Collection, rev.Reads
		s.StatusChunks, s.CopyFrom = rev.Chunks, rev.CopyFrom
	}
	return s, nil
}

func round(v float64, d int) float64 {
	p := 1.0
	for ; d > 0; d-- {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

// procCPU is a process's user + system CPU seconds (procfs, /proc/PID/stat; 0 for pid 0).
func procCPU(pid int) (float64, error) {
	if pid == 0 {
		return 0, nil
	}
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	st, err := p.Stat()
	if err != nil {
		return 0, err
	}
	return st.CPUTime(), nil
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
