// Package jaegertest runs a real Jaeger (the all-in-one binary of hack/prepare.d/jaeger.sh,
// in-memory storage) for a test and reads the traces it received back through its query API.
package jaegertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ragops/ragops/internal/testenv"
)

// EnvBinary names the Jaeger binary (printed by hack/prepare.d/jaeger.sh).
const EnvBinary = "RAGOPS_JAEGER"

// Server is a running Jaeger.
type Server struct {
	// OTLPHTTP is the OTLP/HTTP receiver's base URL (an OTEL_EXPORTER_OTLP_ENDPOINT value).
	OTLPHTTP string
	// OTLPGRPC is the OTLP/gRPC receiver's URL.
	OTLPGRPC string
	// Query is the query API's base URL (GET /api/traces/<id>).
	Query string
}

// Start runs Jaeger on free loopback ports until the test ends, and waits until its query
// API answers. Without RAGOPS_JAEGER the test skips (fails under RAGOPS_REQUIRE_ALL=1).
func Start(t testing.TB) *Server {
	t.Helper()
	bin := testenv.Need(t, EnvBinary, "run hack/prepare.d/jaeger.sh")
	ports := make([]int, 4)
	for i := range ports {
		ports[i] = freePort(t)
	}
	cfg := fmt.Sprintf(config, ports[0], ports[1], ports[2], ports[3])
	path := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", path)
	logs, err := os.Create(filepath.Join(t.TempDir(), "jaeger.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = logs.Close()
	})
	s := &Server{OTLPGRPC: "http://127.0.0.1:" + strconv.Itoa(ports[0]), OTLPHTTP: "http://127.0.0.1:" + strconv.Itoa(ports[1]),
		Query: "http://127.0.0.1:" + strconv.Itoa(ports[2])}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case err := <-exited:
			out, _ := os.ReadFile(logs.Name())
			t.Fatalf("jaeger exited: %v\n%s", err, out)
		default:
		}
		if resp, err := http.Get(s.Query + "/api/services"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logs.Name())
			t.Fatalf("jaeger's query API did not answer in 2 minutes\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// config runs the OTLP receivers (gRPC, HTTP) into in-memory storage and the query API
// (HTTP, gRPC); no other listener, no self-telemetry.
const config = `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:%[3]d
    grpc:
      endpoint: 127.0.0.1:%[4]d
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%[1]d
      http:
        endpoint: 127.0.0.1:%[2]d
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Span is one span of a trace as Jaeger's query API returns it.
type Span struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	// StartTime and Duration are in microseconds.
	StartTime int64 `json:"startTime"`
	Duration  int64 `json:"duration"`
	Tags      []struct {
		Key   string `json:"key"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	} `json:"tags"`
	ProcessID string `json:"processID"`
	// Service is the span's service.name (filled from the trace's processes).
	Service string `json:"-"`
}

// Parent returns the span ID of the span's CHILD_OF parent ("" for a root).
func (s Span) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Tag returns the value of the span's tag key (nil when it has none): a string, a bool or a
// JSON number (float64).
func (s Span) Tag(key string) any {
	for _, t := range s.Tags {
		if t.Key == key {
			return t.Value
		}
	}
	return nil
}

// Int returns the integer tag key (0 when it has none).
func (s Span) Int(key string) int64 {
	switch v := s.Tag(key).(type) {
	case float64:
		return int64(v)
	case string:
		n, _ := strconv.ParseInt(v, 10, 64)
		return n
	}
	return 0
}

// Trace returns the spans Jaeger holds of the trace id (32 hex digits), none when it has not
// stored any yet.
func (s *Server) Trace(ctx context.Context, id string) ([]Span, error) {
	return s.get(ctx, "/api/traces/"+id)
}

// Search returns the spans of the traces (at most 100) that have a span of service named
// operation.
func (s *Server) Search(ctx context.Context, service, operation string) ([]Span, error) {
	return s.get(ctx, "/api/traces?limit=100&service="+url.QueryEscape(service)+"&operation="+url.QueryEscape(operation))
}

// get reads the traces of a query API path; none when it answers 404.
func (s *Server) get(ctx context.Context, path string) ([]Span, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Query+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	var body struct {
		Data []struct {
			Spans     []Span `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	var spans []Span
	for _, d := range body.Data {
		for _, sp := range d.Spans {
			sp.Service = d.Processes[sp.ProcessID].ServiceName
			spans = append(spans, sp)
		}
	}
	return spans, nil
}
