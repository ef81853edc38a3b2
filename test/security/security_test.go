package security

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/workload"
	"github.com/ragops/ragops/pipeline/scan"
	"github.com/ragops/ragops/vectorstore"
)

// workerLog holds every line the in-process workers logged.
var workerLog syncBuffer

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

// restrictedNamespace creates a namespace that enforces Pod Security "restricted".
func restrictedNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "restricted-", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// s3Server is an S3 endpoint (gofakes3, in memory) that refuses requests not signed with the
// planted access key.
type s3Server struct {
	backend *s3mem.Backend
	host    string
}

func newS3(t *testing.T, objects map[string]string) *s3Server {
	t.Helper()
	s := &s3Server{backend: s3mem.New()}
	if err := s.backend.CreateBucket("docs"); err != nil {
		t.Fatal(err)
	}
	for k, v := range objects {
		s.put(t, k, v)
	}
	h := gofakes3.New(s.backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Authorization"), "Credential="+plantedS3Access+"/") {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	s.host = u.Host
	return s
}

func (s *s3Server) put(t *testing.T, key, body string) {
	t.Helper()
	if _, err := s.backend.PutObject("docs", key, map[string]string{"Last-Modified": time.Now().UTC().Format(http.TimeFormat)}, strings.NewReader(body), int64(len(body)), nil); err != nil {
		t.Fatal(err)
	}
}

// waitJob returns the newest Job in ns whose name starts with prefix and that is not in skip.
func waitJob(t *testing.T, ns, prefix string, skip ...string) *batchv1.Job {
	t.Helper()
	var found *batchv1.Job
	eventually(t, 30*time.Second, "Job "+prefix+"*", func() (bool, error) {
		var jobs batchv1.JobList
		if err := env.Client.List(context.Background(), &jobs, client.InNamespace(ns)); err != nil {
			return false, err
		}
		sort.Slice(jobs.Items, func(i, j int) bool { return jobs.Items[i].Name > jobs.Items[j].Name })
		for i, j := range jobs.Items {
			if strings.HasPrefix(j.Name, prefix) && !contains(skip, j.Name) {
				found = &jobs.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// runPod plays the kubelet for a Job: it creates the Job's pod from its template (Pod
// Security admission decides here), records a terminated container with result as its
// termination message, and marks the Job Complete as the Job controller would.
func runPod(t *testing.T, job *batchv1.Job, result string) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"batch.kubernetes.io/job-name": job.Name}
	for k, v := range job.Spec.Template.Labels {
		labels[k] = v
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-0",
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))},
			Annotations:     map[string]string{batchv1.JobCompletionIndexAnnotation: "0"}},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatalf("pod of Job %s refused: %v", job.Name, err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: job.Spec.Template.Spec.Containers[0].Name, Image: "ragops:test",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: result, Reason: "Completed"}},
	}}}
	if err := env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	start := metav1.NewTime(now.Add(-time.Second))
	job.Status = batchv1.JobStatus{StartTime: &start, CompletionTime: &now, Succeeded: 1, Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "CompletionsReached"},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: "CompletionsReached"},
	}}
	if job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion {
		job.Status.CompletedIndexes = "0"
	}
	if err := env.Client.Status().Update(ctx, job); err != nil {
		t.Fatalf("update Job status: %v", err)
	}
}

// runScan runs the real scan worker (cmd.Scan) on a scan Job's plan, with the environment
// the kubelet would give its container (Secret key references resolved), logging into
// workerLog. It returns the termination message.
func runScan(t *testing.T, job *batchv1.Job) string {
	t.Helper()
	ctx := context.Background()
	var cm corev1.ConfigMap
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: job.Name}, &cm); err != nil {
		t.Fatal(err)
	}
	var p plan.Scan
	if err := json.Unmarshal([]byte(cm.Data[plan.File]), &p); err != nil {
		t.Fatal(err)
	}
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		v := e.Value
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
			var sec corev1.Secret
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: ref.SecretKeyRef.Name}, &sec); err != nil {
				t.Fatal(err)
			}
			v = string(sec.Data[ref.SecretKeyRef.Key])
		}
		t.Setenv(e.Name, v)
	}
	log := slog.New(slog.NewTextHandler(&workerLog, &slog.HandlerOptions{Level: slog.LevelDebug}))
	res, err := scan.Run(ctx, log, p.Source, t.TempDir())
	if err != nil {
		t.Fatalf("scan worker: %v", err)
	}
	raw, _ := json.Marshal(res)
	return string(raw)
}

// checkRestricted asserts the settings Pod Security "restricted" checks, plus the absent
// ServiceAccount token, on a Job's pod template.
func checkRestricted(t *testing.T, job *batchv1.Job) {
	t.Helper()
	spec := job.Spec.Template.Spec
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("Job %s mounts a ServiceAccount token", job.Name)
	}
	psc := spec.SecurityContext
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("Job %s pod securityContext %+v", job.Name, psc)
	}
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil ||
			len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("Job %s container %s securityContext %+v", job.Name, c.Name, sc)
		}
	}
}

// leaks searches every object of the namespace the controllers or the test's kubelet wrote
// (Corpora, ChunkingStrategies, Indexes, Evaluations with their status, Events of both APIs,
// ConfigMaps, Jobs, Pods) and every manager and worker log line for each planted value, as
// is and base64-encoded. It returns where each value was found and how many places it searched.
func leaks(t *testing.T, ns string) (hits map[string][]string, searched int) {
	t.Helper()
	ctx := context.Background()
	places := map[string]string{"manager log": managerLog.String(), "worker log": workerLog.String()}
	lists := []client.ObjectList{&ragopsv1alpha1.CorpusList{}, &ragopsv1alpha1.ChunkingStrategyList{}, &ragopsv1alpha1.IndexList{},
		&ragopsv1alpha1.EvaluationList{}, &corev1.EventList{}, &eventsv1.EventList{}, &corev1.ConfigMapList{}, &batchv1.JobList{}, &corev1.PodList{}}
	for _, l := range lists {
		if err := env.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			o := it.(client.Object)
			raw, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			places[fmt.Sprintf("%T %s", o, o.GetName())] = string(raw)
		}
	}
	hits = map[string][]string{}
	for where, text := range places {
		for _, v := range planted {
			if strings.Contains(text, v) || strings.Contains(text, base64.StdEncoding.EncodeToString([]byte(v))) {
				hits[v] = append(hits[v], where)
			}
		}
	}
	return hits, len(places)
}

// TestRestrictedWorkersAndNoSecretLeak runs a Corpus scan (the real scan worker against an S3
// endpoint that needs the planted keys), a Git Corpus scan, an Index build with a model
// fetched by an init container, an incremental sync and an Evaluation in a namespace that
// enforces Pod Security "restricted", against a Weaviate that needs the planted API key.
// Every worker pod is admitted (a pod without the restricted settings is refused there
// first, so admission really runs), and no planted secret value appears in any object or
// log line afterwards; a value logged on purpose is found, so the search can fail.
func TestRestrictedWorkersAndNoSecretLeak(t *testing.T) {
	ctx := context.Background()
	ns := restrictedNamespace(t)

	// Pod Security admission is enforced: the worker container as it was before (no seccomp
	// profile, a ServiceAccount token) is refused.
	legacy := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy-worker"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "embed", Image: "ragops:test", SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}}},
	}}
	if err := env.Client.Create(ctx, legacy); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "violates PodSecurity") || !strings.Contains(err.Error(), "seccompProfile") {
		t.Fatalf("a pod without a seccomp profile in a restricted namespace: %v; want Forbidden by PodSecurity naming seccompProfile", err)
	}

	for name, data := range map[string]map[string]string{
		"s3-keys":      {"accesskey": plantedS3Access, "secretkey": plantedS3Secret},
		"git-creds":    {"username": "ragops", "password": plantedGitPass},
		"weaviate-key": {"api-key": plantedWeaviate},
		"http-headers": {"Authorization": plantedHTTPHeader},
	} {
		if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}); err != nil {
			t.Fatal(err)
		}
	}
	s3 := newS3(t, map[string]string{
		"a.md": "# Beslispunt\nDe raad besluit het voorstel aan te nemen.\n",
		"b.md": "# Motivering\nHet voorstel past binnen de begroting.\n",
		"c.md": "# Stemverhouding\n21 voor, 8 tegen.\n",
	})
	objs := []client.Object{
		&ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "docs"}, Spec: ragopsv1alpha1.CorpusSpec{
			S3: &ragopsv1alpha1.S3Source{Endpoint: s3.host, Bucket: "docs", Insecure: true, SecretRef: &ragopsv1alpha1.LocalObjectReference{Name: "s3-keys"}}}},
		&ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repo"}, Spec: ragopsv1alpha1.CorpusSpec{
			Git: &ragopsv1alpha1.GitSource{URL: "https://git.example.org/gemeente/besluiten.git", Ref: "main", SecretRef: &ragopsv1alpha1.LocalObjectReference{Name: "git-creds"}}}},
		&ragopsv1alpha1.ChunkingStrategy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fixed"},
			Spec: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitCharacters, Size: 64}},
		&ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "besluiten"}, Spec: ragopsv1alpha1.IndexSpec{
			CorpusRef:   ragopsv1alpha1.LocalObjectReference{Name: "docs"},
			StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: "fixed"},
			Model: ragopsv1alpha1.ModelSpec{Name: "all-minilm-l6-v2", HTTP: &ragopsv1alpha1.HTTPSource{
				URL: "https://models.example.org/all-minilm-l6-v2.tar.gz", SHA256: strings.Repeat("ab", 32)}},
			Weaviate: ragopsv1alpha1.WeaviateSpec{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr,
				APIKeySecretRef: &ragopsv1alpha1.SecretKeySelector{Name: "weaviate-key", Key: "api-key"}},
		}},
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %T: %v", o, err)
		}
	}

	// Scans: the S3 one by the real worker with the planted keys, the Git one played.
	scan := waitJob(t, ns, "docs-scan-")
	checkRestricted(t, scan)
	res := runScan(t, scan)
	if !strings.Contains(res, `"documents":3`) {
		t.Fatalf("scan worker result %s, want 3 documents", res)
	}
	runPod(t, scan, res)
	repoScan := waitJob(t, ns, "repo-scan-")
	checkRestricted(t, repoScan)
	runPod(t, repoScan, `{"documents":1,"bytes":12,"revision":"0c0ffee0","commit":"3f9c2b7e0d41a8c6b5e2f1a09d8c7b6a5f4e3d2c"}`)

	// The build: its pod (with the model fetch init container) is admitted; the chunks go into
	// Weaviate with the planted API key as the embedder would write them.
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr, APIKey: plantedWeaviate})
	if err != nil {
		t.Fatal(err)
	}
	var idx ragopsv1alpha1.Index
	eventually(t, 30*time.Second, "a building revision", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &idx)
		return err == nil && idx.Status.Revision != "" && len(idx.Status.Revisions) > 0, err
	})
	rev := idx.Status.Revision
	build := waitJob(t, ns, "besluiten-"+rev+"-build")
	checkRestricted(t, build)
	if n := len(build.Spec.Template.Spec.InitContainers); n != 1 {
		t.Fatalf("build Job has %d init containers, want the model fetch", n)
	}
	var bp plan.Build
	if err := json.Unmarshal([]byte(planOf(t, ns, build.Name)), &bp); err != nil {
		t.Fatal(err)
	}
	if err := store.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: bp.Collection, Revision: rev, Dimensions: 4}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = store.DeleteAlias(context.Background(), idx.Status.Alias)
		_ = store.DeleteCollection(context.Background(), bp.Collection)
	})
	chunks := func(docs ...string) []vectorstore.Chunk {
		var out []vectorstore.Chunk
		for d, doc := range docs {
			for o := range 2 {
				v := make([]float32, 4)
				v[(d+o)%4] = 1
				out = append(out, vectorstore.Chunk{DocID: doc, Ordinal: o, Start: o * 10, End: o*10 + 10, Text: doc, Vector: v})
			}
		}
		return out
	}
	if err := store.Upsert(ctx, bp.Collection, chunks("a.md", "b.md", "c.md")); err != nil {
		t.Fatal(err)
	}
	runPod(t, build, mustJSON(plan.BuildResult{Documents: 3, Chunks: 6, Tokens: 600, Seconds: 2}))
	eventually(t, 30*time.Second, "the revision active (the manager moved the alias with the API key)", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &idx)
		c := meta.FindStatusCondition(idx.Status.Conditions, ragopsv1alpha1.ConditionReady)
		return err == nil && idx.Status.ActiveRevision == rev && c != nil && c.Status == metav1.ConditionTrue, err
	})

	// An incremental sync: a new object, a rescan by the real worker, the sync Job admitted.
	s3.put(t, "d.md", "# Besluit\nHet college voert het besluit uit.\n")
	var corpus ragopsv1alpha1.Corpus
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs"}, &corpus); err != nil {
		t.Fatal(err)
	}
	before := corpus.Status.Revision
	corpus.Spec.Include = []string{"*.md"}
	if err := env.Client.Update(ctx, &corpus); err != nil {
		t.Fatal(err)
	}
	rescan := waitJob(t, ns, "docs-scan-", scan.Name)
	runPod(t, rescan, runScan(t, rescan))
	eventually(t, 30*time.Second, "the new corpus revision", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "docs"}, &corpus)
		return err == nil && corpus.Status.Revision != before && corpus.Status.Documents == 4, err
	})
	// One scan Job per generation, however the reconciles of the spec change interleaved.
	var scanJobs batchv1.JobList
	if err := env.Client.List(ctx, &scanJobs, client.InNamespace(ns), client.MatchingLabels{workload.LabelComponent: "scan"}); err != nil {
		t.Fatal(err)
	}
	perGeneration := map[string][]string{}
	for _, j := range scanJobs.Items {
		if strings.HasPrefix(j.Name, "docs-scan-") {
			perGeneration[j.Labels[workload.LabelRevision]] = append(perGeneration[j.Labels[workload.LabelRevision]], j.Name)
		}
	}
	if len(perGeneration) != 2 || len(perGeneration["1"]) != 1 || len(perGeneration[strconv.FormatInt(corpus.Generation, 10)]) != 1 {
		t.Errorf("docs scan Jobs by Corpus generation %v, want one for generation 1 and one for %d", perGeneration, corpus.Generation)
	}
	sync := waitJob(t, ns, "besluiten-"+rev+"-sync-")
	checkRestricted(t, sync)
	if err := store.Upsert(ctx, bp.Collection, chunks("d.md")[:2]); err != nil {
		t.Fatal(err)
	}
	runPod(t, sync, mustJSON(plan.BuildResult{Documents: 1, Unchanged: 3, Chunks: 2}))
	eventually(t, 30*time.Second, "the sync recorded", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "besluiten"}, &idx)
		return err == nil && len(idx.Status.Revisions) > 0 && idx.Status.Revisions[0].CorpusRevision == corpus.Status.Revision, err
	})

	// An Evaluation whose data set is fetched with a header from a Secret.
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bm25"}, Spec: ragopsv1alpha1.EvaluationSpec{
		IndexRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"},
		EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeBM25, K: []int32{10},
			Dataset: ragopsv1alpha1.DatasetSource{Split: "test", HTTP: &ragopsv1alpha1.HTTPSource{URL: "https://data.example.org/besluiten-beir.tar.gz",
				HeadersSecretRef: &ragopsv1alpha1.LocalObjectReference{Name: "http-headers"}}}},
	}}
	if err := env.Client.Create(ctx, ev); err != nil {
		t.Fatal(err)
	}
	evJob := waitJob(t, ns, "bm25-")
	checkRestricted(t, evJob)
	runPod(t, evJob, mustJSON(plan.EvaluateResult{Queries: 5, Metrics: []plan.MetricsAtK{{K: 10, Recall: 0.8, NDCG: 0.7, MRR: 0.6}}}))
	eventually(t, 30*time.Second, "the Evaluation Ready", func() (bool, error) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(ev), ev)
		c := meta.FindStatusCondition(ev.Status.Conditions, ragopsv1alpha1.ConditionReady)
		return err == nil && c != nil && c.Status == metav1.ConditionTrue && ev.Status.RecallAt10 != nil, err
	})

	// Every Job still there has restricted pods (finished build and scan Jobs may already be
	// pruned); the six pods played above (two scans, build, rescan, sync, evaluation) were all
	// admitted under restricted and carry the settings.
	var jobs batchv1.JobList
	if err := env.Client.List(ctx, &jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range jobs.Items {
		checkRestricted(t, &jobs.Items[i])
	}
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	components := map[string]int{}
	for _, p := range pods.Items {
		components[p.Labels[workload.LabelComponent]]++
		checkRestricted(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: p.Spec}}})
	}
	if len(pods.Items) != 6 || components["scan"] != 3 || components["embed"] != 2 || components["evaluate"] != 1 {
		t.Errorf("pods admitted by component %v, want scan 3, embed 2 (build and sync), evaluate 1", components)
	}
	t.Logf("pods admitted under restricted by component: %v", components)

	// No planted value anywhere.
	time.Sleep(2 * time.Second) // let in-flight reconciles log what they log
	hits, searched := leaks(t, ns)
	if len(hits) != 0 {
		t.Errorf("planted secrets found: %v", hits)
	}
	lines := strings.Count(managerLog.String(), "\n")
	t.Logf("searched %d objects and logs (%d manager log lines, %d worker log lines)", searched, lines, strings.Count(workerLog.String(), "\n"))
	if searched < 20 || lines < 50 || !strings.Contains(workerLog.String(), "scanned") {
		t.Errorf("the search covered %d places and %d manager lines, and the worker log %q: too little to mean anything", searched, lines, workerLog.String())
	}

	// The search can fail: a value logged on purpose at a debug level, and one written into a
	// ConfigMap base64-encoded, are found where they were put.
	ctrl.Log.WithName("leak-check").V(4).Info("deliberate leak", "value", plantedGitPass)
	if err := env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "leak-check"},
		BinaryData: map[string][]byte{"k": []byte(plantedS3Secret)}}); err != nil {
		t.Fatal(err)
	}
	hits, _ = leaks(t, ns)
	if got := hits[plantedGitPass]; len(got) != 1 || got[0] != "manager log" {
		t.Errorf("a Git password logged on purpose was found in %v, want the manager log", got)
	}
	if got := hits[plantedS3Secret]; len(got) != 1 || got[0] != "*v1.ConfigMap leak-check" {
		t.Errorf("an S3 secret key put in a ConfigMap was found in %v, want ConfigMap leak-check", got)
	}
	if len(hits) != 2 {
		t.Errorf("hits %v, want exactly the two deliberate ones", hits)
	}
}

func planOf(t *testing.T, ns, name string) string {
	t.Helper()
	var cm corev1.ConfigMap
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data[plan.File]
}

func mustJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(raw)
}
