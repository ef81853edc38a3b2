package vectorstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ragops/ragops/internal/testpki"
)

// A real Weaviate behind TLS-terminating proxies (REST and gRPC, certificates from a CA the
// test makes): with the CA bundle every call goes over verified TLS, gRPC with ALPN h2; with
// another CA's bundle both REST and gRPC refuse the server before any byte of a request
// leaves (weaviate-go-client alone would have accepted the gRPC server: it skips
// verification).
func TestTLSWithPrivateCAForRESTAndGRPC(t *testing.T) {
	srv := sharedServer(t)
	ca := testpki.NewCA(t, "ragops-test-ca")
	cert := ca.Serving(t)
	rest := testpki.NewProxy(t, srv.HTTPAddr, cert, "http/1.1")
	grpc := testpki.NewProxy(t, srv.GRPCAddr, cert, "h2")
	ctx := context.Background()
	fast := wait.Backoff{Duration: 50 * time.Millisecond, Factor: 2, Steps: 2}

	s, err := New(Config{HTTPHost: rest.Addr, GRPCHost: grpc.Addr, Scheme: "https", CABundle: ca.PEM, Timeout: 20 * time.Second, Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	const coll = "Rag_tls_0123456789ab"
	if err := s.EnsureCollection(ctx, CollectionSpec{Name: coll, Revision: "0123456789ab", Dimensions: 4}); err != nil {
		t.Fatalf("create collection over REST/TLS: %v", err)
	}
	t.Cleanup(func() { _ = s.DeleteCollection(context.Background(), coll) })
	chunks := []Chunk{
		{DocID: "a", Ordinal: 0, End: 5, Text: "alpha", Vector: []float32{1, 0, 0, 0}},
		{DocID: "b", Ordinal: 0, End: 4, Text: "beta", Vector: []float32{0, 1, 0, 0}},
	}
	if err := s.Upsert(ctx, coll, chunks); err != nil {
		t.Fatalf("gRPC batch over TLS: %v", err)
	}
	hits, err := s.Search(ctx, coll, Query{Mode: ModeDense, Vector: []float32{0, 1, 0, 0}, Limit: 2})
	if err != nil || len(hits) != 2 || hits[0].DocID != "b" {
		t.Fatalf("gRPC nearVector over TLS: hits %+v err %v, want b first of 2", hits, err)
	}
	if n, err := s.Count(ctx, coll); err != nil || n != 2 {
		t.Fatalf("count %d err %v, want 2", n, err)
	}
	grpcProtos, grpcFailed := grpc.Handshakes()
	restProtos, restFailed := rest.Handshakes()
	if len(grpcProtos) == 0 || grpcFailed != 0 || len(restProtos) == 0 || restFailed != 0 {
		t.Fatalf("handshakes: gRPC %v (%d failed), REST %v (%d failed)", grpcProtos, grpcFailed, restProtos, restFailed)
	}
	for _, p := range grpcProtos {
		if p != "h2" {
			t.Errorf("gRPC connection negotiated ALPN %q, want h2", p)
		}
	}

	// A bundle of another CA: the server is refused on both protocols.
	other := testpki.NewCA(t, "someone-else")
	bad, err := New(Config{HTTPHost: rest.Addr, GRPCHost: grpc.Addr, Scheme: "https", CABundle: other.PEM, Timeout: 5 * time.Second, Retry: fast})
	if err != nil {
		t.Fatal(err)
	}
	grpcBefore := len(grpcProtos)
	if _, err := bad.CollectionExists(ctx, coll); err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
		t.Errorf("REST with an untrusted server certificate: err %v, want unknown authority", err)
	}
	if err := bad.Upsert(ctx, coll, chunks[:1]); err == nil {
		t.Error("gRPC batch with an untrusted server certificate succeeded")
	}
	if _, err := bad.Search(ctx, coll, Query{Mode: ModeDense, Vector: []float32{1, 0, 0, 0}, Limit: 1}); err == nil {
		t.Error("gRPC search with an untrusted server certificate succeeded")
	}
	// The proxy records a refused handshake when it reads the client's alert: wait for it.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if grpcProtos, grpcFailed = grpc.Handshakes(); grpcFailed > 0 {
			break
		}
	}
	if len(grpcProtos) != grpcBefore || grpcFailed == 0 {
		t.Errorf("gRPC proxy: %d completed handshakes after the bad store (before %d), %d failed; want none completed, some failed", len(grpcProtos), grpcBefore, grpcFailed)
	}
	if n, err := s.Count(ctx, coll); err != nil || n != 2 {
		t.Errorf("after the refused writes the collection holds %d (err %v), want 2", n, err)
	}

	// A bundle without certificates is a configuration error, not the system roots.
	if _, err := New(Config{HTTPHost: rest.Addr, GRPCHost: grpc.Addr, Scheme: "https", CABundle: []byte("not pem")}); err == nil {
		t.Error("a CA bundle without a certificate was accepted")
	}
	if _, err := New(Config{HTTPHost: rest.Addr, GRPCHost: grpc.Addr, CABundle: ca.PEM}); err == nil {
		t.Error("a CA bundle with scheme http was accepted")
	}
}
