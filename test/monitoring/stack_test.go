package monitoring

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/ragops/ragops/cmd"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// runAsEnv, set to "1" in the environment of the test binary, makes it run the ragops command
// its arguments name (main.go's cmd.NewRoot) instead of the tests: how the tests start the
// real manager without building another binary.
const runAsEnv = "RAGOPS_MONITORING_RUN_RAGOPS"

// systemNS is the release namespace the chart is rendered into (and the manager's).
const systemNS = "ragops-system"

// demoNS is the namespace of the demo workload's objects and of its model server.
const demoNS = "shop"

// modelServerJob is the job label a PodMonitor named ragops-serve in demoNS gives the model
// server's series (prometheus-operator: namespace/name).
const modelServerJob = demoNS + "/ragops-serve"

var root = testenv.ModuleRoot()

// cleanups run after every test (the shared stack outlives each one).
var (
	cleanupMu sync.Mutex
	cleanups  []func()
)

func atExit(f func()) {
	cleanupMu.Lock()
	defer cleanupMu.Unlock()
	cleanups = append(cleanups, f)
}

func TestMain(m *testing.M) {
	if os.Getenv(runAsEnv) == "1" {
		c := cmd.NewRoot()
		c.SetArgs(os.Args[1:])
		if err := c.Execute(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	for i := len(cleanups) - 1; i >= 0; i-- {
		cleanups[i]()
	}
	os.Exit(code)
}

// need skips the test (or fails it under RAGOPS_REQUIRE_ALL=1).
func need(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// chartValues are the values the tests render the chart with: the PrometheusRule and the
// ServiceMonitor on, scraped every second, and the alerts' durations and thresholds shortened
// through the chart's own values so that a test minutes long sees them fire. notReadyFor
// keeps its default (2h): the Stalled Index is not Ready, and RagopsIndexNotReady must stay
// pending rather than fire. reconcileErrorsFor keeps its default (15m) too: a reconcile that
// meets an optimistic-concurrency conflict returns an error and is retried, which is normal
// and must not page; shortened to seconds, one such conflict under load would fire it. And
// weaviateUnreachableFor keeps its default (5m): a few Weaviate calls that time out on a loaded
// machine raise the error ratio for seconds, which must not page either.
var chartValues = []string{
	"prometheusRule.enabled=true",
	"serviceMonitor.enabled=true",
	"serviceMonitor.interval=1s",
	"prometheusRule.for=2s",
	"prometheusRule.staleAfterSeconds=5",
	"prometheusRule.buildFailuresPerHour=1",
}

// helmTemplate renders the chart as release "ragops" in systemNS with chartValues and returns
// its objects.
func helmTemplate(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	helm := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		need(t, "bin/helm is missing: run hack/build-tools.sh helm (make test does)")
	}
	args := []string{"template", "ragops", filepath.Join(root, "charts", "ragops"), "--namespace", systemNS}
	for _, v := range chartValues {
		args = append(args, "--set", v)
	}
	c := exec.Command(helm, args...)
	c.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("helm template: %v\n%s", err, stderr.Bytes())
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	var objs []*unstructured.Unstructured
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("helm template output: %v", err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	return objs
}

// rendered returns the one rendered object of kind.
func rendered(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind {
			return o
		}
	}
	t.Fatalf("the chart renders no %s", kind)
	return nil
}

// process is a server the tests started, with its output in a log file.
type process struct {
	name, log string
	cmd       *exec.Cmd
	done      chan struct{} // closed once it has ended
}

// start runs bin with args and env (added to a minimal environment), its output in dir.
func start(t *testing.T, name, dir, bin string, args, env []string) *process {
	t.Helper()
	p := &process{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir}, env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); f.Close(); close(p.done) }()
	atExit(func() {
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tail returns the last n bytes of the process's log.
func (p *process) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// waitHTTP waits until GET url answers 2xx.
func waitHTTP(t *testing.T, p *process, u string) {
	t.Helper()
	testenv.Eventually(t, 90*time.Second, p.name+" "+u, func() (bool, error) {
		if p.exited() {
			t.Fatalf("%s exited:\n%s", p.name, p.tail(8192))
		}
		resp, err := http.Get(u)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode/100 == 2, fmt.Errorf("%s", resp.Status)
	})
}

// stack is the running system the tests watch: a control plane, Weaviate, the manager, a
// model server and a Prometheus that scrapes both and evaluates the chart's rules.
type stack struct {
	cp          *testenv.Env
	weaviate    *weaviatetest.Server
	manager     *process
	metricsAddr string
	// modelServer is `ragops serve` with a real model, at modelServerURL.
	modelServer    *process
	modelServerURL string
	prometheus     *process
	promURL        string
	// scrapeInterval is the ServiceMonitor's interval, Prometheus's scrape and rule
	// evaluation interval.
	scrapeInterval time.Duration
	// started is when Prometheus started scraping.
	started time.Time
}

// startStack starts the control plane, Weaviate, the manager with the chart Deployment's
// arguments, a model server, and Prometheus with the chart's ServiceMonitor as its scrape
// configuration of the manager (and a PodMonitor's of the model server) and the chart's
// PrometheusRule as its rule file.
func startStack(t *testing.T) *stack {
	t.Helper()
	promBin := testenv.Need(t, "RAGOPS_PROMETHEUS", "run hack/prepare.d/promtool.sh (Debian's prometheus package)")
	modelDir := testenv.Need(t, "RAGOPS_MODEL_DIR", "run hack/prepare.d/embedder.sh (an exported model folder)")
	ortLib := testenv.Need(t, "RAGOPS_ONNXRUNTIME_LIB", "run hack/provision-onnxruntime.sh")
	wvBin, err := weaviatetest.BinaryPath()
	if err != nil {
		need(t, err.Error())
	}
	objs := helmTemplate(t)
	dir, err := os.MkdirTemp("", "ragops-monitoring-")
	if err != nil {
		t.Fatal(err)
	}
	atExit(func() { _ = os.RemoveAll(dir) })

	s := &stack{}
	cp, err := testenv.Start()
	if errors.Is(err, testenv.ErrNoAssets) {
		need(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	atExit(func() { _ = cp.Stop() })
	s.cp = cp
	wv, err := weaviatetest.Launch(context.Background(), weaviatetest.Options{Binary: wvBin,
		// The module the Indexes' model servers are wired through (ServingReady needs it).
		Modules: []string{weaviatetest.ModuleTransformers}})
	if err != nil {
		t.Fatal(err)
	}
	atExit(func() { _ = wv.Stop() })
	s.weaviate = wv

	s.startManager(t, dir, objs)
	s.startModelServer(t, dir, modelDir, ortLib)
	s.startPrometheus(t, promBin, dir, objs)
	return s
}

// startManager runs `ragops manager` (this test binary, as main.go) with the rendered
// Deployment's arguments, its listen addresses moved to free loopback ports and the Lease in
// systemNS, as an administrator.
func (s *stack) startManager(t *testing.T, dir string, objs []*unstructured.Unstructured) {
	t.Helper()
	var dep appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(rendered(t, objs, "Deployment").Object, &dep); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.cp.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNS}}); err != nil {
		t.Fatal(err)
	}
	s.metricsAddr = testenv.FreeAddr(t)
	probeAddr := testenv.FreeAddr(t)
	var args []string
	for _, a := range dep.Spec.Template.Spec.Containers[0].Args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address"):
			a = "--metrics-bind-address=" + s.metricsAddr
		case strings.HasPrefix(a, "--health-probe-bind-address"):
			a = "--health-probe-bind-address=" + probeAddr
		case a == "--leader-elect":
			args = append(args, "--leader-election-namespace="+systemNS)
		}
		args = append(args, a)
	}
	// Build progress refreshed every second rather than every 10 (the dashboard's
	// documents panels follow it).
	args = append(args, "--progress-interval=1s")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s.manager = start(t, "manager", dir, self, args, []string{
		runAsEnv + "=1", "KUBECONFIG=" + s.cp.Kubeconfig(t, ""), "POD_NAMESPACE=" + systemNS,
		"RAGOPS_WORKER_IMAGE=ragops:monitoring-test",
	})
	waitHTTP(t, s.manager, "http://"+probeAddr+"/readyz")
}

// startModelServer runs `ragops serve` (this test binary, as main.go) on a model folder, one
// inference thread.
func (s *stack) startModelServer(t *testing.T, dir, modelDir, ortLib string) {
	t.Helper()
	addr := testenv.FreeAddr(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s.modelServerURL = "http://" + addr
	s.modelServer = start(t, "serve", dir, self, []string{"serve", "--model-dir=" + modelDir, "--listen=" + addr,
		"--onnxruntime-lib=" + ortLib, "--threads=1"}, []string{runAsEnv + "=1"})
	waitHTTP(t, s.modelServer, s.modelServerURL+"/.well-known/ready")
}

// startPrometheus writes the rendered PrometheusRule's spec as a rule file and a scrape
// configuration that scrapes the manager as the rendered ServiceMonitor says, with the labels
// prometheus-operator gives such a target, and starts Prometheus.
func (s *stack) startPrometheus(t *testing.T, bin, dir string, objs []*unstructured.Unstructured) {
	t.Helper()
	spec, _, _ := unstructured.NestedMap(rendered(t, objs, "PrometheusRule").Object, "spec")
	rules, err := yaml.Marshal(spec) // spec.groups is a Prometheus rule file
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	endpoints, _, _ := unstructured.NestedSlice(rendered(t, objs, "ServiceMonitor").Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want one", endpoints)
	}
	ep := endpoints[0].(map[string]any)
	honor, _, _ := unstructured.NestedBool(ep, "honorLabels")
	interval, _, _ := unstructured.NestedString(ep, "interval")
	path, _, _ := unstructured.NestedString(ep, "path")
	scheme, _, _ := unstructured.NestedString(ep, "scheme")
	port, _, _ := unstructured.NestedString(ep, "port")
	if s.scrapeInterval, err = time.ParseDuration(interval); err != nil {
		t.Fatalf("ServiceMonitor interval %q: %v", interval, err)
	}
	const service = "ragops-controller-manager-metrics-service"
	config := map[string]any{
		"global":     map[string]any{"scrape_interval": interval, "evaluation_interval": interval},
		"rule_files": []string{"rules.yaml"},
		"scrape_configs": []any{map[string]any{
			"job_name":     service, // prometheus-operator: the Service's name
			"honor_labels": honor,
			"metrics_path": path,
			"scheme":       scheme,
			"static_configs": []any{map[string]any{
				"targets": []string{s.metricsAddr},
				"labels": map[string]string{"namespace": systemNS, "service": service, "endpoint": port,
					"pod": "ragops-controller-manager-0", "container": "manager"},
			}},
		}, map[string]any{
			// What a PodMonitor on the model server pods gives: the pod's namespace.
			"job_name": modelServerJob,
			"static_configs": []any{map[string]any{
				"targets": []string{strings.TrimPrefix(s.modelServerURL, "http://")},
				"labels":  map[string]string{"namespace": demoNS, "pod": "ragops-serve-0", "container": "serve", "endpoint": "http"},
			}},
		}},
	}
	b, err := yaml.Marshal(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := testenv.FreeAddr(t)
	s.promURL = "http://" + addr
	s.prometheus = start(t, "prometheus", dir, bin, []string{
		"--config.file=" + filepath.Join(dir, "prometheus.yaml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "tsdb"),
		"--web.listen-address=" + addr,
	}, nil)
	waitHTTP(t, s.prometheus, s.promURL+"/-/ready")
	s.started = time.Now()
	// The rule file loaded as written: every group of the PrometheusRule is there.
	var groups struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Name string `json:"name"`
			} `json:"rules"`
		} `json:"groups"`
	}
	s.api(t, "/api/v1/rules", nil, &groups)
	specGroups, _, _ := unstructured.NestedSlice(spec, "groups")
	if len(groups.Groups) != len(specGroups) || len(specGroups) == 0 {
		t.Fatalf("Prometheus loaded %d rule groups, the PrometheusRule has %d:\n%s", len(groups.Groups), len(specGroups), s.prometheus.tail(4096))
	}
	testenv.Eventually(t, 60*time.Second, "Prometheus scraping the manager and the model server", func() (bool, error) {
		var r queryResult
		s.api(t, "/api/v1/query", url.Values{"query": {`up == 1`}}, &r)
		return len(r.Result) == 2, fmt.Errorf("up: %+v", r.Result)
	})
}

// apiError is Prometheus's answer to a request it refuses (a query that does not parse:
// errorType bad_data).
type apiError struct {
	Status, ErrorType, Error string
}

// api GETs a Prometheus HTTP API path with query parameters and decodes its data into out;
// it fails the test on any error.
func (s *stack) api(t *testing.T, path string, params url.Values, out any) {
	t.Helper()
	if e := s.tryAPI(path, params, out); e != nil {
		t.Fatalf("GET %s %v: %+v", path, params, *e)
	}
}

// tryAPI is api returning Prometheus's error instead.
func (s *stack) tryAPI(path string, params url.Values, out any) *apiError {
	u := s.promURL + path
	if params != nil {
		u += "?" + params.Encode()
	}
	resp, err := http.Get(u)
	if err != nil {
		return &apiError{Status: "error", Error: err.Error()}
	}
	defer resp.Body.Close()
	var env struct {
		Status    string          `json:"status"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return &apiError{Status: resp.Status, Error: err.Error()}
	}
	if env.Status != "success" {
		return &apiError{Status: env.Status, ErrorType: env.ErrorType, Error: env.Error}
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return &apiError{Status: "decode", Error: err.Error()}
	}
	return nil
}

// sample is a [time, "value"] pair of the Prometheus API.
type sample [2]any

func (p sample) float() float64 {
	s, _ := p[1].(string)
	f, err := strconv.ParseFloat(s, 64) // also "NaN", "+Inf", "-Inf"
	if err != nil {
		return math.NaN()
	}
	return f
}

// queryResult is the data of /api/v1/query and /api/v1/query_range.
type queryResult struct {
	ResultType string `json:"resultType"`
	Result     []struct {
		Metric map[string]string `json:"metric"`
		Value  sample            `json:"value"`  // an instant query's
		Values []sample          `json:"values"` // a range query's
	} `json:"result"`
}
