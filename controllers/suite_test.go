package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/cmd"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

var (
	env *testenv.Env
	k8s client.Client
	wv  *weaviatetest.Server
	// weaviateDown makes every store the controllers open point at a closed port.
	weaviateDown atomic.Bool
	// falseMissing makes the next n CollectionExists calls of the controllers' stores answer
	// "missing" whatever Weaviate holds (a 404 from a lagging or restarting node).
	falseMissing atomic.Int32
)

// flakyStore is a real store whose CollectionExists answers "missing" while falseMissing
// counts down, and whose Modules fails while its Weaviate URL is in modulesDown.
type flakyStore struct {
	*vectorstore.Store
	url string
}

// modulesDown holds the Weaviate URLs whose module list cannot be read (a /v1/meta error).
var modulesDown sync.Map // URL -> struct{}

func (s flakyStore) Modules(ctx context.Context) ([]string, error) {
	if _, down := modulesDown.Load(s.url); down {
		return nil, fmt.Errorf("GET %s/v1/meta: 503 Service Unavailable (test)", s.url)
	}
	return s.Store.Modules(ctx)
}

func (s flakyStore) CollectionExists(ctx context.Context, collection string) (bool, error) {
	for {
		n := falseMissing.Load()
		if n <= 0 {
			return s.Store.CollectionExists(ctx, collection)
		}
		if falseMissing.CompareAndSwap(n, n-1) {
			return false, nil
		}
	}
}

const dims = 8

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Println(err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	bin, err := weaviatetest.BinaryPath()
	if err != nil {
		fmt.Println(err)
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			return 1
		}
		fmt.Println("SKIP: controller tests need Weaviate")
		return 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if wv, err = weaviatetest.Launch(ctx, weaviatetest.Options{Binary: bin}); err != nil {
		fmt.Println(err)
		return 1
	}
	defer func() { _ = wv.Stop() }()

	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(zapcore.Level(zapLevel()))))
	if err := startManager(); err != nil {
		fmt.Println(err)
		return 1
	}
	defer func() { stopManager() }()
	return m.Run()
}

// workerImage is the WorkerImage of the managers startManagerWith starts (a test that plays
// an operator upgrade changes it and restarts the manager).
var workerImage = "ragops:test"

// modelServerURLs is the ModelServerURLs of the managers startManagerWith starts.
var modelServerURLs = ""

// stopManager is set by startManager: it cancels the running manager and waits until its
// Start has returned.
var stopManager func()

// startManager starts a manager with all four controllers, as cmd does, waits for its cache and
// points k8s at its client. A test that restarts the manager calls stopManager first.
func startManager() error { return startManagerWith(nil) }

// restartManagerWith replaces the running manager with one whose client wrap wraps, and
// puts a plain one back when the test ends.
func restartManagerWith(t *testing.T, wrap func(client.Client) client.Client) {
	t.Helper()
	stopManager()
	if err := startManagerWith(wrap); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopManager()
		if err := startManager(); err != nil {
			t.Errorf("restart the manager for the next tests: %v", err)
		}
	})
}

// restartManagerWithOptions replaces the running manager with one whose controller options
// mutate changes, and puts a plain one back when the test ends.
func restartManagerWithOptions(t *testing.T, mutate func(*controllers.Options)) {
	t.Helper()
	stopManager()
	if err := startManagerWithOptions(nil, mutate); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopManager()
		if err := startManager(); err != nil {
			t.Errorf("restart the manager for the next tests: %v", err)
		}
	})
}

// startManagerWith is startManager with the manager's client wrapped by wrap (nil: as is), to
// inject API faults into the controllers' writes.
func startManagerWith(wrap func(client.Client) client.Client) error {
	return startManagerWithOptions(wrap, nil)
}

// startManagerWithOptions is startManagerWith with the controller options changed by mutate
// (nil: as startManager sets them).
func startManagerWithOptions(wrap func(client.Client) client.Client, mutate func(*controllers.Options)) error {
	ctx, cancel := context.WithCancel(context.Background())
	mopts := ctrl.Options{Scheme: cmd.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}}
	if wrap != nil {
		mopts.NewClient = func(cfg *rest.Config, o client.Options) (client.Client, error) {
			c, err := client.New(cfg, o)
			if err != nil {
				return nil, err
			}
			return wrap(c), nil
		}
	}
	controllers.ScopeCache(&mopts)
	// A restarted manager registers the same controller names again in this process.
	mopts.Controller.SkipNameValidation = ptr.To(true)
	mgr, err := ctrl.NewManager(env.Config, mopts)
	if err != nil {
		cancel()
		return err
	}
	opts := controllers.Options{
		WorkerImage:      workerImage,
		ProgressInterval: time.Second,
		DriftInterval:    2 * time.Second,
		FinalizerTimeout: 10 * time.Minute,
		PodStartTimeout:  3 * time.Second,
		JobStopTimeout:   8 * time.Second,
		NewStore:         controllers.InstrumentStores(testStore), // as the manager wraps its stores
		ModelServers:     testModelServers{},
		ModelServerURLs:  modelServerURLs,
		ModelServerGrace: time.Second,
	}
	if mutate != nil {
		mutate(&opts)
	}
	if err := controllers.SetupWithManager(ctx, mgr, opts); err != nil {
		cancel()
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Println("manager:", err)
		}
	}()
	stopManager = func() { cancel(); <-done }
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		stopManager()
		return fmt.Errorf("cache did not sync")
	}
	k8s = mgr.GetClient()
	return nil
}

func zapLevel() int8 {
	if os.Getenv("RAGOPS_TEST_VERBOSE") != "" {
		return -2
	}
	return 1 // errors only
}

// testStore opens a real vectorstore.Store; while weaviateDown is set it points at a closed
// port, so the controllers see a real connection failure.
func testStore(spec ragopsv1alpha1.WeaviateSpec, apiKey string, caBundle []byte) (controllers.Store, error) {
	cfg, err := controllers.StoreConfig(spec, apiKey, caBundle)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 5 * time.Second
	cfg.Retry = wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Steps: 2}
	if weaviateDown.Load() {
		cfg.HTTPHost, cfg.GRPCHost = "127.0.0.1:1", "127.0.0.1:1"
	}
	s, err := vectorstore.New(cfg)
	if err != nil {
		return nil, err
	}
	return flakyStore{Store: s, url: spec.URL}, nil
}

func directStore(t *testing.T) *vectorstore.Store {
	t.Helper()
	s, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// eventually polls cond every 100 ms until it returns true or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var lastErr error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		lastErr = err
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, lastErr)
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// fixture creates a ConfigMap corpus of three documents, a Fixed strategy and an Index.
func fixture(t *testing.T, ns string, mutate func(*ragopsv1alpha1.Index)) *ragopsv1alpha1.Index {
	t.Helper()
	ctx := context.Background()
	docs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs"}, Data: map[string]string{
		"a.md": "# Beslispunt\nDe raad besluit het voorstel aan te nemen.",
		"b.md": "# Motivering\nHet voorstel past binnen de begroting.",
		"c.md": "# Stemverhouding\n21 voor, 8 tegen.",
	}}
	corpus := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"},
		Spec: ragopsv1alpha1.CorpusSpec{ConfigMap: &ragopsv1alpha1.LocalObjectReference{Name: "docs"}}}
	strategy, idx := strategyAndIndex(ns)
	if mutate != nil {
		mutate(idx)
	}
	for _, o := range []client.Object{docs, corpus, strategy, idx} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
	return idx
}

// strategyAndIndex returns fixture's ChunkingStrategy "fixed" (64 characters) and Index
// "besluiten" on Corpus "besluiten" and the test Weaviate.
func strategyAndIndex(ns string) (*ragopsv1alpha1.ChunkingStrategy, *ragopsv1alpha1.Index) {
	strategy := &ragopsv1alpha1.ChunkingStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fixed"},
		Spec: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitCharacters, Size: 64}}
	idx := &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"},
		Spec: ragopsv1alpha1.IndexSpec{
			CorpusRef:   ragopsv1alpha1.LocalObjectReference{Name: "besluiten"},
			StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: "fixed"},
			Model:       ragopsv1alpha1.ModelSpec{Name: "all-minilm-l6-v2", ImagePath: "/models/all-minilm-l6-v2"},
			Weaviate:    ragopsv1alpha1.WeaviateSpec{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr},
		}}
	return strategy, idx
}

// fixtureIndexOnly creates fixture's strategy and Index for a Corpus "besluiten" the test made.
func fixtureIndexOnly(t *testing.T, ns string) {
	t.Helper()
	strategy, idx := strategyAndIndex(ns)
	for _, o := range []client.Object{strategy, idx} {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}
}

func getIndex(t *testing.T, ns, name string) *ragopsv1alpha1.Index {
	t.Helper()
	var idx ragopsv1alpha1.Index
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &idx); err != nil {
		t.Fatal(err)
	}
	return &idx
}

func condition(obj interface{ GetConditions() *[]metav1.Condition }, typ string) *metav1.Condition {
	return meta.FindStatusCondition(*obj.GetConditions(), typ)
}

// waitJob waits for a Job to exist.
func waitJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	var job batchv1.Job
	eventually(t, 30*time.Second, "Job "+name, func() (bool, error) {
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &job)
		return err == nil, err
	})
	return &job
}

// finishJob plays the kubelet and the Job controller: it creates one pod per completion
// index with the given termination message and exit code, then marks the Job Complete or
// Failed the way the Job controller does.
func finishJob(t *testing.T, job *batchv1.Job, exitCode int32, messages ...string) {
	t.Helper()
	finishJobAt(t, job, metav1.Now(), exitCode, messages...)
}

// finishJobAt is finishJob with the Job finished (completion or failure time) at now. The
// apiserver refuses to change a Job's completionTime once set, so a test that needs a given
// one sets it here, in the first status write.
func finishJobAt(t *testing.T, job *batchv1.Job, now metav1.Time, exitCode int32, messages ...string) {
	t.Helper()
	playPods(t, job, "", exitCode, messages...)
	markJobFinished(t, job, now, exitCode, len(messages))
}

// playPods creates one finished pod per message (completion index i), bound to node when
// not empty, as finishJob does.
func playPods(t *testing.T, job *batchv1.Job, node string, exitCode int32, messages ...string) {
	t.Helper()
	for i, msg := range messages {
		playPod(t, job, fmt.Sprintf("%s-%d", job.Name, i), i, node, exitCode, msg)
	}
}

// playPod creates the finished pod name of completion index index of job, controlled by the
// Job and bound to node when not empty: succeeded with exit code 0, failed otherwise, with
// msg as its termination message, as the kubelet leaves it.
func playPod(t *testing.T, job *batchv1.Job, name string, index int, node string, exitCode int32, msg string) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: name,
			Labels: podLabels(job), OwnerReferences: controlledBy(job),
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: fmt.Sprint(index)}},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = node
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	phase, reason := corev1.PodSucceeded, "Completed"
	if exitCode != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	pod.Status = corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
		Name: job.Spec.Template.Spec.Containers[0].Name, Image: "ragops:test",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Message: msg, Reason: reason}},
	}}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

// markJobFinished marks the Job Complete (exitCode 0) or Failed with n pods, the way the Job
// controller does, finished at now.
func markJobFinished(t *testing.T, job *batchv1.Job, now metav1.Time, exitCode int32, pods int) {
	t.Helper()
	ctx := context.Background()
	start := metav1.NewTime(now.Add(-time.Second))
	n := int32(pods)
	if exitCode == 0 {
		job.Status = batchv1.JobStatus{StartTime: &start, CompletionTime: &now, Succeeded: n, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "CompletionsReached"},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "CompletionsReached"},
		}}
		if job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion {
			job.Status.CompletedIndexes = fmt.Sprintf("0-%d", n-1)
			if n == 1 {
				job.Status.CompletedIndexes = "0"
			}
		}
	} else {
		job.Status = batchv1.JobStatus{StartTime: &start, Failed: n, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"},
		}}
	}
	if err := env.Client.Status().Update(ctx, job); err != nil {
		t.Fatalf("update Job status: %v", err)
	}
}

// buildRevision waits for the build Job of the Index's current revision, writes chunks into
// its collection in the real Weaviate (what the embedder pods do), and completes the Job.
func buildRevision(t *testing.T, ns, name string) (rev, collection string) {
	t.Helper()
	return buildAttempt(t, ns, name, 1)
}

// firstBuild waits for the Index "besluiten" in ns to record its first revision and for that
// revision's build Job, and returns the Index as then read, the revision and the Job.
func firstBuild(t *testing.T, ns string) (*ragopsv1alpha1.Index, ragopsv1alpha1.RevisionStatus, *batchv1.Job) {
	t.Helper()
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "building revision", func() (bool, error) {
		idx = getIndex(t, ns, "besluiten")
		return len(idx.Status.Revisions) == 1, nil
	})
	rev := idx.Status.Revisions[0]
	return idx, rev, waitJob(t, ns, fmt.Sprintf("besluiten-%s-build", rev.Name))
}

// buildAttempt plays the build Job of attempt n (1 for the first build) of the desired revision:
// it writes six chunks of three documents into the collection the plan names and finishes the
// Job with 600 tokens and 9,600 stored bytes in 2 s; from attempt 2 on, 200 of them are a resumed document's.
func buildAttempt(t *testing.T, ns, name string, n int) (rev, collection string) {
	t.Helper()
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "a building revision", func() (bool, error) {
		idx = getIndex(t, ns, name)
		for _, r := range idx.Status.Revisions {
			if r.Name == idx.Status.Revision && r.Phase == ragopsv1alpha1.RevisionBuilding {
				return true, nil
			}
		}
		return false, nil
	})
	rev = idx.Status.Revision
	collection, err := vectorstore.CollectionName(ns, name, rev)
	if err != nil {
		t.Fatal(err)
	}
	jobName := fmt.Sprintf("%s-%s-build", name, rev)
	if n > 1 {
		jobName += fmt.Sprintf("-%d", n)
	}
	job := waitJob(t, ns, jobName)
	var p plan.Build
	if err := json.Unmarshal([]byte(planOf(t, ns, job.Name)), &p); err != nil {
		t.Fatal(err)
	}
	if p.Collection != collection || p.Revision != rev {
		t.Fatalf("plan names collection %s revision %s, want %s %s", p.Collection, p.Revision, collection, rev)
	}
	chunks := writeChunks(t, collection, rev)
	res := plan.BuildResult{Shard: 0, Documents: 3, Chunks: int64(chunks), Tokens: 600, StoredBytes: 9600, Seconds: 2}
	if n > 1 {
		// A retry resumes one document the failed attempt wrote whole: 200 of its 600 tokens.
		res.Resumed, res.ResumedTokens = 1, 200
	}
	msg, _ := json.Marshal(res)
	finishJob(t, job, 0, string(msg))
	return rev, collection
}

// writeChunks does what an embedder pod does for fixture's corpus: it creates the revision's
// collection in the real Weaviate and writes two chunks of each of its three documents. It
// returns the number of chunks written (6).
func writeChunks(t *testing.T, collection, rev string) int {
	t.Helper()
	ctx := context.Background()
	s := directStore(t)
	if err := s.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: collection, Revision: rev, Dimensions: dims}); err != nil {
		t.Fatal(err)
	}
	var chunks []vectorstore.Chunk
	for d, doc := range []string{"a.md", "b.md", "c.md"} {
		for o := 0; o < 2; o++ {
			v := make([]float32, dims)
			v[(d+o)%dims] = 1
			chunks = append(chunks, vectorstore.Chunk{DocID: doc, Ordinal: o, Start: o * 10, End: o*10 + 10, Text: doc, Vector: v})
		}
	}
	if err := s.Upsert(ctx, collection, chunks); err != nil {
		t.Fatal(err)
	}
	return len(chunks)
}

func planOf(t *testing.T, ns, name string) string {
	t.Helper()
	var cm corev1.ConfigMap
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data[plan.File]
}

func aliasTarget(t *testing.T, ns, name string) string {
	t.Helper()
	alias, _ := vectorstore.AliasName(ns, name)
	target, found, err := directStore(t).GetAlias(context.Background(), alias)
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		return ""
	}
	return target
}

func waitActive(t *testing.T, ns, name, rev string) *ragopsv1alpha1.Index {
	t.Helper()
	var idx *ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "active revision "+rev, func() (bool, error) {
		idx = getIndex(t, ns, name)
		c := condition(idx, ragopsv1alpha1.ConditionReady)
		return idx.Status.ActiveRevision == rev && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == idx.Generation, nil
	})
	return idx
}

func setStrategySize(t *testing.T, ns string, size int32) {
	t.Helper()
	var cs ragopsv1alpha1.ChunkingStrategy
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "fixed"}, &cs); err != nil {
		t.Fatal(err)
	}
	cs.Spec.Size = size
	if err := env.Client.Update(context.Background(), &cs); err != nil {
		t.Fatal(err)
	}
}

// controlledBy is the owner reference the Job controller gives a Job's pods: the Job, as
// their controller.
func controlledBy(job *batchv1.Job) []metav1.OwnerReference {
	return []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
}

// podLabels are the labels the Job controller gives a Job's pods: the template's and the
// job-name label.
func podLabels(job *batchv1.Job) map[string]string {
	l := map[string]string{"batch.kubernetes.io/job-name": job.Name}
	for k, v := range job.Spec.Template.Labels {
		l[k] = v
	}
	return l
}
