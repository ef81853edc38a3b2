package workload

import (
	"encoding/json"
	"path"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

var (
	defaults = Defaults{Image: "ragops:test", Deadline: time.Hour}
	planPath = path.Join(plan.Dir, plan.File)
)

func corpus() *ragopsv1alpha1.Corpus {
	return &ragopsv1alpha1.Corpus{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "docs", Generation: 3},
		Spec:       ragopsv1alpha1.CorpusSpec{Format: "beir", PVC: &ragopsv1alpha1.PVCSource{ClaimName: "data", Path: "scifact"}},
		Status:     ragopsv1alpha1.CorpusStatus{Revision: "0123456789abcdef"},
	}
}

func index() (*ragopsv1alpha1.Index, *ragopsv1alpha1.RevisionStatus) {
	idx := &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "scifact"},
		Spec: ragopsv1alpha1.IndexSpec{Weaviate: ragopsv1alpha1.WeaviateSpec{URL: "http://weaviate:8080",
			APIKeySecretRef: &ragopsv1alpha1.SecretKeySelector{Name: "wv", Key: "key"},
			CABundle:        &ragopsv1alpha1.CABundleSource{ConfigMapKeyRef: &ragopsv1alpha1.SecretKeySelector{Name: "ca", Key: "bundle.pem"}}}}}
	return idx, &ragopsv1alpha1.RevisionStatus{Name: "r1a2b3c4", Collection: "Scifact_r1a2b3c4", Attempt: 1}
}

func planOf[T any](t *testing.T, w *Workload) T {
	t.Helper()
	cm, sum, err := w.PlanConfigMap()
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels[LabelPlanHash] != sum[:16] || cm.Name != w.Name || cm.Namespace != w.Owner.GetNamespace() {
		t.Errorf("plan ConfigMap %s/%s labels %v; want the Job's name and plan hash %s", cm.Namespace, cm.Name, cm.Labels, sum[:16])
	}
	var p T
	if err := json.Unmarshal([]byte(cm.Data[plan.File]), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func volume(job *batchv1.Job, name string) *corev1.Volume {
	for i, v := range job.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return &job.Spec.Template.Spec.Volumes[i]
		}
	}
	return nil
}

func envNames(c corev1.Container) []string {
	var out []string
	for _, e := range c.Env {
		out = append(out, e.Name)
	}
	return out
}

// experiment is an Experiment named sweep with algorithm seed 7.
func experiment() *ragopsv1alpha1.Experiment {
	return &ragopsv1alpha1.Experiment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sweep", UID: "u-exp"},
		Spec: ragopsv1alpha1.ExperimentSpec{Algorithm: ragopsv1alpha1.ExperimentAlgorithm{Seed: 7}}}
}

// Every workload kind renders the Job its worker expects: command, plan, mounts, labels and
// the kind's own settings.
func TestWorkloadKinds(t *testing.T) {
	idx, rev := index()
	c := corpus()
	minilm := ragopsv1alpha1.ModelSpec{Name: "minilm", PVC: &ragopsv1alpha1.PVCSource{ClaimName: "models", Path: "minilm"}}
	cuda := ragopsv1alpha1.EmbedderSpec{Device: ragopsv1alpha1.DeviceCUDA, Shards: 3}
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hybrid", Generation: 2, UID: "u-1"},
		Spec: ragopsv1alpha1.EvaluationSpec{EvaluationParameters: ragopsv1alpha1.EvaluationParameters{
			Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "qrels"}},
			Mode:    ragopsv1alpha1.ModeHybrid, K: []int32{3, 10, 1, 3}}}}
	bm25 := ev.DeepCopy()
	bm25.Spec.Mode = ragopsv1alpha1.ModeBM25
	served := ev.DeepCopy()
	served.Spec.QueryEmbedding = ragopsv1alpha1.QueryEmbeddingWeaviate
	synced := rev.DeepCopy()
	synced.SyncAttempt = 2
	for _, tc := range []struct {
		name        string
		w           *Workload
		args        string
		component   string
		completions int32
		indexed     bool
		gpu         bool
		volumes     []string
		env         []string
		check       func(t *testing.T, w *Workload)
	}{{
		name: "scan", w: Scan(c, "generation", defaults), args: "scan --plan " + planPath, component: ComponentScan,
		completions: 1, volumes: []string{"plan", "tmp", "corpus"},
		check: func(t *testing.T, w *Workload) {
			p := planOf[plan.Scan](t, w)
			if p.Corpus != "docs" || p.Source.Dir != path.Join(plan.CorpusDir, "scifact") || p.Source.Format != "beir" {
				t.Errorf("scan plan %+v", p)
			}
			if w.Revision != "3" || !strings.HasPrefix(w.Name, "docs-scan-") || w.Name != ScanJobName(c, "generation") || w.Name == ScanJobName(c, "interval") {
				t.Errorf("scan Job %s revision %s", w.Name, w.Revision)
			}
		},
	}, {
		name: "estimate", w: Estimate(EstimateInputs{Experiment: experiment(), Corpus: c, Fraction: 0.05, MinDocuments: 32, Trials: []EstimateTrial{
			{Name: "fixed-128", Revision: "r1", Model: minilm, Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Size: 128}},
			{Name: "fixed-256", Revision: "r2", Model: minilm, Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Size: 256}},
			{Name: "e5", Revision: "r3", Model: ragopsv1alpha1.ModelSpec{Name: "e5", ImagePath: "/models/e5"}, Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Size: 128}},
		}}, defaults),
		args: "estimate --plan " + planPath, component: ComponentEstimate, completions: 1,
		volumes: []string{"plan", "tmp", "corpus", "model-0"},
		check: func(t *testing.T, w *Workload) {
			p := planOf[plan.Estimate](t, w)
			if p.Experiment != "sweep" || p.Seed != 7 || p.Fraction != 0.05 || p.MinDocuments != 32 || p.Source.Dir != path.Join(plan.CorpusDir, "scifact") || len(p.Trials) != 3 ||
				p.Trials[0].ModelDir != path.Join(plan.ModelDir+"-0", "minilm") || p.Trials[1].ModelDir != p.Trials[0].ModelDir || p.Trials[2].ModelDir != "/models/e5" || p.Trials[1].Strategy.Size != 256 {
				t.Errorf("estimate plan %+v", p)
			}
			other := EstimateJobName(experiment(), []EstimateTrial{{Name: "fixed-128", Revision: "r1"}})
			if !strings.HasPrefix(w.Name, "sweep-estimate-") || w.Revision != c.Status.Revision || w.Name == other {
				t.Errorf("estimate Job %s revision %s (other trials: %s)", w.Name, w.Revision, other)
			}
		},
	}, {
		name: "build", w: Embed(EmbedInputs{Index: idx, Revision: rev, Corpus: c, Model: minilm, Embedder: cuda,
			Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed}, OutageWait: time.Minute}, defaults),
		args: "embed --plan " + planPath, component: ComponentEmbed, completions: 3, indexed: true, gpu: true,
		volumes: []string{"plan", "tmp", "corpus", "model", "weaviate-ca"}, env: []string{plan.EnvWeaviateAPIKey, "RAGOPS_WEAVIATE_CA_FILE"},
		check: func(t *testing.T, w *Workload) {
			p := planOf[plan.Build](t, w)
			if p.Incremental || p.Shards != 3 || p.ModelDir != path.Join(plan.ModelDir, "minilm") || p.Strategy.Type != ragopsv1alpha1.StrategyFixed || p.OutageSeconds != 60 {
				t.Errorf("build plan %+v", p)
			}
			if w.Name != "scifact-r1a2b3c4-build" || w.Kind != JobKindBuild || len(w.Annotations) != 0 {
				t.Errorf("build Job %s kind %s annotations %v", w.Name, w.Kind, w.Annotations)
			}
		},
	}, {
		name: "sync", w: Embed(EmbedInputs{Index: idx, Revision: synced, Corpus: c, Model: minilm, Incremental: true}, defaults),
		args: "embed --plan " + planPath, component: ComponentEmbed, completions: 1, indexed: true,
		volumes: []string{"plan", "tmp", "corpus", "model", "weaviate-ca"}, env: []string{plan.EnvWeaviateAPIKey, "RAGOPS_WEAVIATE_CA_FILE"},
		check: func(t *testing.T, w *Workload) {
			if p := planOf[plan.Build](t, w); !p.Incremental {
				t.Errorf("sync plan not incremental")
			}
			if w.Kind != JobKindSync || w.Annotations[AnnotationCorpusRevision] != c.Status.Revision || w.Annotations[AnnotationSyncAttempt] != "2" ||
				w.Name != "scifact-r1a2b3c4-sync-01234567-a2" {
				t.Errorf("sync Job %s kind %s annotations %v", w.Name, w.Kind, w.Annotations)
			}
		},
	}, {
		name: "evaluate hybrid", w: Evaluate(EvaluateInputs{Evaluation: ev, Index: idx, Revision: rev, Model: minilm}, defaults),
		args: "evaluate --plan " + planPath, component: ComponentEvaluate, completions: 1,
		volumes: []string{"plan", "tmp", "dataset", "model", "weaviate-ca"}, env: []string{plan.EnvWeaviateAPIKey, "RAGOPS_WEAVIATE_CA_FILE"},
		check: func(t *testing.T, w *Workload) {
			p := planOf[plan.Evaluate](t, w)
			if !slices.Equal(p.K, []int{1, 3, 10}) || p.Split != "test" || p.Alpha != DefaultHybridAlpha || p.Fusion != ragopsv1alpha1.FusionRelativeScore ||
				p.ModelDir != path.Join(plan.ModelDir, "minilm") || p.Dataset.Dir != plan.DatasetDir || p.UID != "u-1" {
				t.Errorf("evaluate plan %+v", p)
			}
			if w.Name != EvaluationJobName(ev, rev.Name, "") || w.Name == EvaluationJobName(ev, rev.Name, "again") {
				t.Errorf("evaluate Job %s does not follow the retry", w.Name)
			}
		},
	}, {
		name: "evaluate bm25", w: Evaluate(EvaluateInputs{Evaluation: bm25, Index: idx, Revision: rev, Model: minilm}, defaults),
		args: "evaluate --plan " + planPath, component: ComponentEvaluate, completions: 1,
		volumes: []string{"plan", "tmp", "dataset", "weaviate-ca"}, env: []string{plan.EnvWeaviateAPIKey, "RAGOPS_WEAVIATE_CA_FILE"},
		check: func(t *testing.T, w *Workload) {
			if p := planOf[plan.Evaluate](t, w); p.ModelDir != "" || p.Alpha != 0 || p.QueryEmbedding != "" {
				t.Errorf("a BM25 evaluation loads a model, fuses or embeds: %+v", p)
			}
		},
	}, {
		name: "evaluate hybrid through Weaviate", w: Evaluate(EvaluateInputs{Evaluation: served, Index: idx, Revision: rev, Model: minilm}, defaults),
		args: "evaluate --plan " + planPath, component: ComponentEvaluate, completions: 1,
		volumes: []string{"plan", "tmp", "dataset", "weaviate-ca"}, env: []string{plan.EnvWeaviateAPIKey, "RAGOPS_WEAVIATE_CA_FILE"},
		check: func(t *testing.T, w *Workload) {
			p := planOf[plan.Evaluate](t, w)
			if p.ModelDir != "" || p.QueryEmbedding != ragopsv1alpha1.QueryEmbeddingWeaviate || p.Alpha != DefaultHybridAlpha {
				t.Errorf("queryEmbedding Weaviate: plan %+v, want no model folder, queryEmbedding Weaviate, alpha %v", p, DefaultHybridAlpha)
			}
			if p := planOf[plan.Evaluate](t, Evaluate(EvaluateInputs{Evaluation: ev, Index: idx, Revision: rev, Model: minilm}, defaults)); p.QueryEmbedding != "" {
				t.Errorf("default queryEmbedding: plan says %q, want empty (Job)", p.QueryEmbedding)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.w.Job()
			spec := job.Spec.Template.Spec
			ctr := spec.Containers[0]
			if got := strings.Join(append([]string{}, ctr.Args...), " "); got != tc.args || ctr.Name != tc.component || ctr.Image != "ragops:test" {
				t.Errorf("container %s image %s args %q; want %s, %q", ctr.Name, ctr.Image, got, tc.component, tc.args)
			}
			if *job.Spec.Completions != tc.completions || *job.Spec.Parallelism != tc.completions {
				t.Errorf("completions %d parallelism %d; want %d", *job.Spec.Completions, *job.Spec.Parallelism, tc.completions)
			}
			if indexed := job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion; indexed != tc.indexed {
				t.Errorf("indexed completion %v; want %v", indexed, tc.indexed)
			}
			_, gpu := ctr.Resources.Limits["nvidia.com/gpu"]
			if gpu != tc.gpu {
				t.Errorf("GPU limit %v; want %v", gpu, tc.gpu)
			}
			var volumes []string
			for _, v := range spec.Volumes {
				volumes = append(volumes, v.Name)
			}
			if !slices.Equal(volumes, tc.volumes) {
				t.Errorf("volumes %v; want %v", volumes, tc.volumes)
			}
			if got, want := envNames(ctr), append(slices.Clone(tc.env), plan.EnvScratchBytes); !slices.Equal(got, want) {
				t.Errorf("env %v; want %v", got, want)
			}
			if retries(job) != DefaultBackoffLimit || *job.Spec.ActiveDeadlineSeconds != 3600 {
				t.Errorf("backoffLimit %d activeDeadlineSeconds %d", retries(job), *job.Spec.ActiveDeadlineSeconds)
			}
			l := job.Spec.Template.Labels
			if l[LabelManagedBy] != ManagedBy || l[LabelComponent] != tc.component || l[LabelOwner] != tc.w.Owner.GetName() || l[LabelJobKind] != tc.w.Kind {
				t.Errorf("pod labels %v", l)
			}
			if *spec.AutomountServiceAccountToken || len(job.Spec.Template.Spec.InitContainers) != 0 {
				t.Errorf("automount %v, init containers %d", *spec.AutomountServiceAccountToken, len(spec.InitContainers))
			}
			tc.check(t, tc.w)
		})
	}
}

// A template's image, resources, limits and deadline win over the operator's defaults; a GPU
// count the template names is kept.
func TestTemplateOverridesDefaults(t *testing.T) {
	idx, rev := index()
	e := ragopsv1alpha1.EmbedderSpec{Device: ragopsv1alpha1.DeviceCUDA, Template: ragopsv1alpha1.JobTemplate{
		Image: "own:1", BackoffLimit: ptr.To[int32](0), ActiveDeadlineSeconds: ptr.To[int64](60), ServiceAccountName: "embedder",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2")}}}}
	job := Embed(EmbedInputs{Index: idx, Revision: rev, Corpus: corpus(), Embedder: e}, defaults).Job()
	ctr := job.Spec.Template.Spec.Containers[0]
	gpus := ctr.Resources.Limits["nvidia.com/gpu"]
	if ctr.Image != "own:1" || retries(job) != 0 || *job.Spec.ActiveDeadlineSeconds != 60 || gpus.Value() != 2 ||
		job.Spec.Template.Spec.ServiceAccountName != "embedder" {
		t.Errorf("image %s backoff %d deadline %d gpus %s sa %s", ctr.Image, retries(job), *job.Spec.ActiveDeadlineSeconds,
			gpus.String(), job.Spec.Template.Spec.ServiceAccountName)
	}
	if d := (&Workload{Owner: idx, Name: "x"}).Job().Spec.ActiveDeadlineSeconds; d != nil {
		t.Errorf("no default deadline gave activeDeadlineSeconds %d", *d)
	}
}

// The sources a worker fetches itself mount nothing but their credentials; a model fetched
// over HTTP gets an init container that checks its SHA-256.
func TestCorpusAndModelSources(t *testing.T) {
	c := corpus()
	c.Spec.PVC = nil
	c.Spec.S3 = &ragopsv1alpha1.S3Source{Endpoint: "s3:9000", Bucket: "b", SecretRef: &ragopsv1alpha1.LocalObjectReference{Name: "s3"},
		Identity: &ragopsv1alpha1.S3Identity{Type: ragopsv1alpha1.S3IdentityWebIdentity, WebIdentity: &ragopsv1alpha1.S3WebIdentity{RoleARN: "arn"}}}
	w := Scan(c, "t", defaults)
	job := w.Job()
	p := planOf[plan.Scan](t, w)
	if p.Source.Dir != "" || p.Source.S3 == nil {
		t.Errorf("an S3 corpus's plan source %+v", p.Source)
	}
	tok := volume(job, "s3-identity")
	if tok == nil || tok.Projected.Sources[0].ServiceAccountToken.Audience != "sts.amazonaws.com" || *tok.Projected.Sources[0].ServiceAccountToken.ExpirationSeconds != 3600 {
		t.Fatalf("S3 web identity volume %+v", tok)
	}
	if job.Spec.Template.Spec.ServiceAccountName != "default" {
		t.Errorf("a projected token without a ServiceAccount name: %q", job.Spec.Template.Spec.ServiceAccountName)
	}
	if got := envNames(job.Spec.Template.Spec.Containers[0]); !slices.Equal(got, []string{plan.EnvS3WebIdentityTokenFile, plan.EnvS3AccessKey, plan.EnvS3SecretKey, plan.EnvScratchBytes}) {
		t.Errorf("env %v", got)
	}

	m := &Workload{Owner: c, Name: "m"}
	dir := m.MountModel("model", plan.ModelDir, ragopsv1alpha1.ModelSpec{HTTP: &ragopsv1alpha1.HTTPSource{URL: "https://m/x.tar.gz", SHA256: "ab"}}, "img")
	if dir != plan.ModelDir || len(m.Init) != 1 || !slices.Contains(m.Init[0].Args, "--sha256") || m.Volumes[0].EmptyDir == nil ||
		m.Volumes[0].EmptyDir.SizeLimit == nil || m.Volumes[0].EmptyDir.SizeLimit.Value() != 32<<30 {
		t.Errorf("HTTP model: dir %s init %+v volumes %+v", dir, m.Init, m.Volumes)
	}
	if got := m.MountModel("baked", "/b", ragopsv1alpha1.ModelSpec{ImagePath: "/models/minilm"}, "img"); got != "/models/minilm" || len(m.Volumes) != 1 {
		t.Errorf("image model: dir %s, %d volumes", got, len(m.Volumes))
	}
	j := m.Job()
	if ic := j.Spec.Template.Spec.InitContainers; len(ic) != 1 || !*ic[0].SecurityContext.ReadOnlyRootFilesystem || *ic[0].SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("the fetch init container is not restricted: %+v", ic)
	}
}

// Long names are cut with a hash suffix: two names sharing their first bytes stay apart and
// a Job name stays a valid label value.
func TestNamesFitTheirLimits(t *testing.T) {
	long := strings.Repeat("a", 70)
	a, b := ObjectName(long+"-x", 40), ObjectName(long+"-y", 40)
	if len(a) != 40 || a == b || ObjectName("short", 40) != "short" {
		t.Errorf("ObjectName: %q %q", a, b)
	}
	idx, rev := index()
	idx.Name = long
	rev.Attempt = 12
	if n := BuildJobName(idx, rev); len(n) > MaxNameLength || !strings.HasSuffix(n, "-12") && len(n) < MaxNameLength {
		t.Errorf("build Job name %q (%d)", n, len(n))
	}
	rev.SyncAttempt, rev.IncompleteRuns = 9, 4
	idx.Status.LastHandledRetry = "now"
	if n := SyncJobName(idx, rev, "fedcba9876543210"); len(n) > MaxNameLength {
		t.Errorf("sync Job name %q is %d long", n, len(n))
	}
	if v := LabelValue(long); len(v) > 63 {
		t.Errorf("label value %q", v)
	}
}

func terminated(name, index string, created int64, code int32, msg string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.Unix(created, 0),
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: index}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: msg, Reason: "Error"}}}}},
	}
}

// Results come per completion index, the newest pod of an index winning; failures keep the
// worker's typed reason, oldest first.
func TestPodResults(t *testing.T) {
	pods := []corev1.Pod{
		terminated("b-1", "1", 20, 0, `{"documents":2}`),
		terminated("a-0", "0", 10, 1, `{"error":"ModelLimitExceeded: 800 > 512","reason":"ModelLimitExceeded"}`),
		terminated("a-1", "1", 5, 0, `{"documents":1}`),
		terminated("c-0", "0", 30, 2, ""),
	}
	ok, failed := PodResults(pods)
	if len(ok) != 1 || ok["1"] != `{"documents":2}` {
		t.Errorf("succeeded %v; want shard 1 from the newer pod", ok)
	}
	if len(failed) != 2 || failed[0].Reason != plan.FailureModelLimitExceeded || !strings.Contains(failed[0].Text, "pod a-0 exited with code 1: ModelLimitExceeded") ||
		failed[1].Reason != "" || failed[1].Text != "pod c-0 exited with code 2: Error" {
		t.Errorf("failed %+v", failed)
	}
	saved := SavedResults(&corev1.ConfigMap{Data: map[string]string{plan.File: "{}", ResultKey("0"): "r0", ResultKey("2"): "r2"}})
	if len(saved) != 2 || saved["0"] != "r0" || saved["2"] != "r2" {
		t.Errorf("saved results %v", saved)
	}
}

func TestStateOf(t *testing.T) {
	for _, tc := range []struct {
		cond  []batchv1.JobCondition
		state State
		msg   string
	}{
		{nil, Running, ""},
		{[]batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionFalse}}, Running, ""},
		{[]batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}, Succeeded, ""},
		{[]batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "3 pods"}}, Failed, "BackoffLimitExceeded: 3 pods"},
	} {
		s, msg := StateOf(&batchv1.Job{Status: batchv1.JobStatus{Conditions: tc.cond}})
		if s != tc.state || msg != tc.msg {
			t.Errorf("StateOf(%v) = %d %q; want %d %q", tc.cond, s, msg, tc.state, tc.msg)
		}
	}
}

// A sampled Index's embed Job mounts the judged dataset read-only where the plan's sample
// points, with the split (default test), fraction and seed; an unsampled one has neither.
func TestEmbedOfASampledIndex(t *testing.T) {
	idx, rev := index()
	in := EmbedInputs{Index: idx, Revision: rev, Corpus: corpus(), Model: ragopsv1alpha1.ModelSpec{ImagePath: "/models/m"}}
	if p := planOf[plan.Build](t, Embed(in, defaults)); p.Sample != nil {
		t.Errorf("an unsampled Index's plan has sample %+v", p.Sample)
	}
	idx.Spec.Sample = &ragopsv1alpha1.DocumentSample{Fraction: 0.2, Seed: 5,
		Judged: &ragopsv1alpha1.DatasetSource{PVC: &ragopsv1alpha1.PVCSource{ClaimName: "eval", Path: "scifact"}}}
	w := Embed(in, defaults)
	p := planOf[plan.Build](t, w)
	if s := p.Sample; s == nil || s.Fraction != 0.2 || s.Seed != 5 || s.Split != "test" || s.Judged == nil || s.Judged.Dir != path.Join(plan.DatasetDir, "scifact") {
		t.Fatalf("sampled plan %+v", s)
	}
	job := w.Job()
	v := volume(job, "judged")
	if v == nil || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "eval" || !v.PersistentVolumeClaim.ReadOnly {
		t.Fatalf("judged dataset volume %+v", v)
	}
	mounted := false
	for _, m := range job.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounted = mounted || (m.Name == "judged" && m.MountPath == plan.DatasetDir && m.ReadOnly)
	}
	if !mounted {
		t.Errorf("the judged dataset is not mounted read-only at %s: %+v", plan.DatasetDir, job.Spec.Template.Spec.Containers[0].VolumeMounts)
	}
}

// Issue 51, extraction cache: a build, a sync and an Experiment's estimate of one Corpus
// name the same extraction cache (the Corpus's, in their Weaviate), with its credentials.
func TestBuildsAndEstimatesShareTheCorpusExtractionCache(t *testing.T) {
	idx, rev := index()
	c := corpus()
	minilm := ragopsv1alpha1.ModelSpec{Name: "minilm", PVC: &ragopsv1alpha1.PVCSource{ClaimName: "models", Path: "minilm"}}
	want := "RagExtract_ns_docs_"
	build := planOf[plan.Build](t, Embed(EmbedInputs{Index: idx, Revision: rev, Corpus: c, Model: minilm}, defaults))
	sync := planOf[plan.Build](t, Embed(EmbedInputs{Index: idx, Revision: rev, Corpus: c, Model: minilm, Incremental: true}, defaults))
	if !strings.HasPrefix(build.ExtractionCache, want) || sync.ExtractionCache != build.ExtractionCache {
		t.Errorf("build cache %q, sync cache %q; want one %s... name", build.ExtractionCache, sync.ExtractionCache, want)
	}
	exp := experiment()
	exp.Spec.IndexTemplate.Weaviate = idx.Spec.Weaviate
	w := Estimate(EstimateInputs{Experiment: exp, Corpus: c, Fraction: 0.05, MinDocuments: 8, Trials: []EstimateTrial{
		{Name: "fixed-128", Revision: "r1", Model: minilm, Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Size: 128}}}}, defaults)
	est := planOf[plan.Estimate](t, w)
	if est.ExtractionCache != build.ExtractionCache || est.Weaviate == nil || est.Weaviate.URL != idx.Spec.Weaviate.URL {
		t.Errorf("estimate cache %q at %+v; want %q at %s", est.ExtractionCache, est.Weaviate, build.ExtractionCache, idx.Spec.Weaviate.URL)
	}
	if env := envNames(w.Job().Spec.Template.Spec.Containers[0]); !slices.Contains(env, plan.EnvWeaviateAPIKey) {
		t.Errorf("estimate env %v: no Weaviate API key", env)
	}
}

// Every worker's /tmp emptyDir has a size limit, in the container's environment too (the
// worker names it when a fetch would exceed it): 2 GiB for a mounted corpus, plus 3 times
// the Corpus's status.bytes for a remote one, plus a download and its unpacked files at the
// fetch cap for a source of unknown size (a Corpus not scanned yet, an HTTP dataset).
func TestScratchVolumesHaveSizeLimits(t *testing.T) {
	s3 := corpus()
	s3.Spec.PVC = nil
	s3.Spec.S3 = &ragopsv1alpha1.S3Source{Endpoint: "s3:9000", Bucket: "b"}
	s3.Status.Bytes = 1 << 30
	unscanned := s3.DeepCopy()
	unscanned.Status = ragopsv1alpha1.CorpusStatus{}
	http := corpus()
	http.Spec.PVC = nil
	http.Spec.HTTP = &ragopsv1alpha1.HTTPSource{URL: "https://example.org/archief.tar.gz"}
	http.Status.Bytes = 3 << 30
	idx, rev := index()
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ev"}}
	ev.Spec.Dataset.HTTP = &ragopsv1alpha1.HTTPSource{URL: "https://example.org/scifact.zip"}
	const gi = int64(1) << 30
	for _, tc := range []struct {
		name string
		w    *Workload
		want int64
	}{
		{"scan of a PVC corpus", Scan(corpus(), "t", defaults), 2 * gi},
		{"scan of a scanned S3 corpus", Scan(s3, "t", defaults), 2*gi + 3*gi},
		{"scan of an S3 corpus never scanned", Scan(unscanned, "t", defaults), 2*gi + 32*gi},
		{"build of an HTTP corpus", Embed(EmbedInputs{Index: idx, Revision: rev, Corpus: http}, defaults), 2*gi + 9*gi},
		{"sync of an S3 corpus", Embed(EmbedInputs{Index: idx, Revision: rev, Corpus: s3, Incremental: true}, defaults), 2*gi + 3*gi},
		{"evaluation of an HTTP dataset", Evaluate(EvaluateInputs{Evaluation: ev, Index: idx, Revision: rev}, defaults), 2*gi + 32*gi},
	} {
		job := tc.w.Job()
		tmp := volume(job, plan.ScratchVolume)
		if tmp == nil || tmp.EmptyDir == nil || tmp.EmptyDir.SizeLimit == nil {
			t.Errorf("%s: scratch volume %+v, want an emptyDir with a sizeLimit", tc.name, tmp)
			continue
		}
		if got := tmp.EmptyDir.SizeLimit.Value(); got != tc.want {
			t.Errorf("%s: scratch sizeLimit %s (%d bytes), want %d bytes", tc.name, tmp.EmptyDir.SizeLimit, got, tc.want)
		}
		var env string
		for _, e := range job.Spec.Template.Spec.Containers[0].Env {
			if e.Name == plan.EnvScratchBytes {
				env = e.Value
			}
		}
		if env != strconv.FormatInt(tc.want, 10) {
			t.Errorf("%s: %s=%q, want the limit %d", tc.name, plan.EnvScratchBytes, env, tc.want)
		}
	}
}

// retries returns a Job's retry budget: per shard for an Indexed Job, else for the Job.
func retries(job *batchv1.Job) int32 {
	if job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion {
		return *job.Spec.BackoffLimitPerIndex
	}
	return *job.Spec.BackoffLimit
}

// Issue 56, one Job-wide retry budget: an Indexed Job gives each shard its own budget
// (backoffLimitPerIndex, no Job-wide backoffLimit), so one failing shard fails alone; more
// than half the shards failing stops the Job. A Job of one non-indexed pod keeps backoffLimit.
func TestShardsHaveTheirOwnRetryBudget(t *testing.T) {
	idx, _ := index()
	for _, tc := range []struct {
		shards            int32
		component         string
		perIndex, maxFail *int32
		jobWide           *int32
	}{
		{shards: 40, component: ComponentEmbed, perIndex: ptr.To(DefaultBackoffLimit), maxFail: ptr.To[int32](20)},
		{shards: 3, component: ComponentScan, perIndex: ptr.To(DefaultBackoffLimit), maxFail: ptr.To[int32](1)},
		{shards: 1, component: ComponentEmbed, perIndex: ptr.To(DefaultBackoffLimit), maxFail: ptr.To[int32](0)},
		{shards: 1, component: ComponentEvaluate, jobWide: ptr.To(DefaultBackoffLimit)},
	} {
		job := (&Workload{Owner: idx, Name: "x", Component: tc.component, Shards: tc.shards}).Job()
		s := job.Spec
		if !reflect.DeepEqual(s.BackoffLimitPerIndex, tc.perIndex) || !reflect.DeepEqual(s.MaxFailedIndexes, tc.maxFail) || !reflect.DeepEqual(s.BackoffLimit, tc.jobWide) {
			t.Errorf("%d %s shards: backoffLimitPerIndex %v maxFailedIndexes %v backoffLimit %v; want %v %v %v", tc.shards, tc.component,
				ptr.Deref(s.BackoffLimitPerIndex, -1), ptr.Deref(s.MaxFailedIndexes, -1), ptr.Deref(s.BackoffLimit, -1),
				ptr.Deref(tc.perIndex, -1), ptr.Deref(tc.maxFail, -1), ptr.Deref(tc.jobWide, -1))
		}
	}
}

func TestIndexes(t *testing.T) {
	for in, want := range map[string][]int{"": nil, "0": {0}, "1,3-5,7": {1, 3, 4, 5, 7}, "0-2": {0, 1, 2}} {
		if got, err := Indexes(in); err != nil || !slices.Equal(got, want) {
			t.Errorf("Indexes(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"a", "3-1", "1,", "-1"} {
		if _, err := Indexes(in); err == nil {
			t.Errorf("Indexes(%q): no error", in)
		}
	}
}

// Issue 52, access: a build and a sync of a Corpus with spec.access carry its rules in the
// plan (every chunk is written with its document's groups); without rules, none.
func TestEmbedCarriesTheCorpusAccessRules(t *testing.T) {
	idx, rev := index()
	c := corpus()
	minilm := ragopsv1alpha1.ModelSpec{Name: "minilm", PVC: &ragopsv1alpha1.PVCSource{ClaimName: "models", Path: "minilm"}}
	if p := planOf[plan.Build](t, Embed(EmbedInputs{Index: idx, Revision: rev, Corpus: c, Model: minilm}, defaults)); p.Access != nil {
		t.Errorf("a Corpus without access rules: plan access %+v", p.Access)
	}
	c.Spec.Access = &ragopsv1alpha1.AccessSpec{Default: ragopsv1alpha1.AccessDeny,
		Rules: []ragopsv1alpha1.AccessRule{{Path: "besloten/**", Groups: []string{"raad"}}}}
	for _, incremental := range []bool{false, true} {
		p := planOf[plan.Build](t, Embed(EmbedInputs{Index: idx, Revision: rev, Corpus: c, Model: minilm, Incremental: incremental}, defaults))
		if p.Access == nil || p.Access.Default != ragopsv1alpha1.AccessDeny || len(p.Access.Rules) != 1 || p.Access.Rules[0].Groups[0] != "raad" {
			t.Errorf("incremental %v: plan access %+v, want the Corpus's", incremental, p.Access)
		}
	}
}

// Issue 52, Evaluations as a persona: spec.as's groups reach the evaluate plan.
func TestEvaluateCarriesThePersona(t *testing.T) {
	idx, rev := index()
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "as-raad", UID: "u-2"},
		Spec: ragopsv1alpha1.EvaluationSpec{EvaluationParameters: ragopsv1alpha1.EvaluationParameters{
			Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "qrels"}},
			Mode:    ragopsv1alpha1.ModeBM25, K: []int32{10}}}}
	ev.Spec.As = &ragopsv1alpha1.EvaluationPersona{Groups: []string{"raad", "griffie"}}
	p := planOf[plan.Evaluate](t, Evaluate(EvaluateInputs{Evaluation: ev, Index: idx, Revision: rev}, defaults))
	if !slices.Equal(p.As, []string{"raad", "griffie"}) {
		t.Errorf("plan as %v, want [raad griffie]", p.As)
	}
	ev.Spec.As = nil
	if p := planOf[plan.Evaluate](t, Evaluate(EvaluateInputs{Evaluation: ev, Index: idx, Revision: rev}, defaults)); p.As != nil {
		t.Errorf("no persona: plan as %v", p.As)
	}
}

// Issue 52, small-to-big: spec.expand reaches the plan with its sizes defaulted by mode
// (Neighbours 1, Section 8); it is part of the measurement (a change reruns the Evaluation),
// and an Evaluation without it keeps the measurement it had.
func TestEvaluateCarriesTheExpansion(t *testing.T) {
	idx, rev := index()
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "small-to-big", UID: "u-3"},
		Spec: ragopsv1alpha1.EvaluationSpec{EvaluationParameters: ragopsv1alpha1.EvaluationParameters{
			Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "qrels"}},
			Mode:    ragopsv1alpha1.ModeBM25, K: []int32{10}}}}
	plain := EvaluationMeasurement(ev)
	if p := planOf[plan.Evaluate](t, Evaluate(EvaluateInputs{Evaluation: ev, Index: idx, Revision: rev}, defaults)); p.Expand != nil {
		t.Errorf("no spec.expand: plan expand %+v", p.Expand)
	}
	seen := map[string]bool{plain: true}
	for _, c := range []struct {
		in   ragopsv1alpha1.EvaluationExpansion
		want plan.Expand
	}{
		{ragopsv1alpha1.EvaluationExpansion{Mode: ragopsv1alpha1.ExpandNeighbours}, plan.Expand{Mode: ragopsv1alpha1.ExpandNeighbours, Size: 1, K: 10}},
		{ragopsv1alpha1.EvaluationExpansion{Mode: ragopsv1alpha1.ExpandSection}, plan.Expand{Mode: ragopsv1alpha1.ExpandSection, Size: 8, K: 10}},
		{ragopsv1alpha1.EvaluationExpansion{Mode: ragopsv1alpha1.ExpandSection, Size: 3, K: 5}, plan.Expand{Mode: ragopsv1alpha1.ExpandSection, Size: 3, K: 5}},
	} {
		ev.Spec.Expand = &c.in
		p := planOf[plan.Evaluate](t, Evaluate(EvaluateInputs{Evaluation: ev, Index: idx, Revision: rev}, defaults))
		if p.Expand == nil || *p.Expand != c.want {
			t.Errorf("spec.expand %+v: plan %+v, want %+v", c.in, p.Expand, c.want)
		}
		if m := EvaluationMeasurement(ev); seen[m] {
			t.Errorf("spec.expand %+v: measurement %s seen before", c.in, m)
		} else {
			seen[m] = true
		}
	}
	ev.Spec.Expand = nil
	if m := EvaluationMeasurement(ev); m != plain {
		t.Errorf("measurement without spec.expand %s, was %s", m, plain)
	}
}

// Issue 52, Evaluations as a persona: spec.as is part of the measurement, so a change of
// persona reruns the Evaluation (the figures are that persona's); the groups are a set, so
// their order does not count, and an Evaluation without spec.as keeps its measurement.
func TestEvaluationMeasurementCountsThePersona(t *testing.T) {
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "persona", UID: "u-4"},
		Spec: ragopsv1alpha1.EvaluationSpec{EvaluationParameters: ragopsv1alpha1.EvaluationParameters{
			Dataset: ragopsv1alpha1.DatasetSource{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "qrels"}},
			Mode:    ragopsv1alpha1.ModeBM25, K: []int32{10}}}}
	plain := EvaluationMeasurement(ev)
	ev.Spec.As = &ragopsv1alpha1.EvaluationPersona{Groups: []string{"raad", "ragops:public"}}
	raad := EvaluationMeasurement(ev)
	if raad == plain {
		t.Errorf("spec.as set: measurement %s unchanged", raad)
	}
	ev.Spec.As.Groups = []string{"ragops:public", "raad"}
	if m := EvaluationMeasurement(ev); m != raad {
		t.Errorf("same groups in another order: measurement %s, want %s", m, raad)
	}
	ev.Spec.As.Groups = []string{"ragops:public"}
	if m := EvaluationMeasurement(ev); m == raad || m == plain {
		t.Errorf("another persona: measurement %s, same as before", m)
	}
	ev.Spec.As = nil
	if m := EvaluationMeasurement(ev); m != plain {
		t.Errorf("without spec.as: measurement %s, was %s", m, plain)
	}
}
