package vectorstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// EnvCAFile names a PEM file of CA certificates that workers trust for Weaviate's serving
// certificate; the controllers set it when an Index has spec.weaviate.caBundle.
const EnvCAFile = "RAGOPS_WEAVIATE_CA_FILE"

// ReadCAFile returns the PEM bundle at path, or nil when path is empty (system roots).
//
// Errors: the file cannot be read or holds no PEM certificate.
func ReadCAFile(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("vectorstore: CA bundle: %w", err)
	}
	if _, err := certPool(pem); err != nil {
		return nil, fmt.Errorf("vectorstore: CA bundle %s: %w", path, err)
	}
	return pem, nil
}

// ReadCABundle checks that pem holds at least one PEM certificate and returns it.
func ReadCABundle(pem []byte) ([]byte, error) {
	if _, err := certPool(pem); err != nil {
		return nil, err
	}
	return pem, nil
}

// certPool parses a PEM bundle; errors when it holds no certificate.
func certPool(pem []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("no PEM certificate found")
	}
	return pool, nil
}

// tlsConfig returns the client TLS settings for https: TLS 1.2 or newer, the server
// certificate verified against caBundle (PEM) or, when it is empty, the system roots.
func tlsConfig(caBundle []byte) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caBundle) > 0 {
		pool, err := certPool(caBundle)
		if err != nil {
			return nil, fmt.Errorf("vectorstore: Config.CABundle: %w", err)
		}
		c.RootCAs = pool
	}
	return c, nil
}

// httpsClient is the REST client for https: Go's default transport with tc.
func httpsClient(tc *tls.Config, timeout time.Duration) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = tc.Clone()
	return &http.Client{Transport: t, Timeout: timeout}
}

// grpcTLSBridge carries gRPC over verified TLS. weaviate-go-client v5.7.3 dials gRPC with
// InsecureSkipVerify when Secured is set (weaviate/connection/grpc.go, createClient) and takes
// no TLS settings, so a Store never lets it do TLS: it points the client at this bridge, a
// loopback listener that wraps each accepted connection in a TLS client connection to the
// real gRPC address, with the server certificate verified (CA bundle or system roots, host
// name from the address) and ALPN h2. Only the client in this process reaches the listener
// (127.0.0.1, an ephemeral port); the bytes that leave the process are TLS.
type grpcTLSBridge struct {
	ln     net.Listener
	target string
	tc     *tls.Config
}

// newGRPCTLSBridge listens on 127.0.0.1:0 and serves until the process ends (the Weaviate
// client it serves cannot be closed either).
func newGRPCTLSBridge(target string, tc *tls.Config) (*grpcTLSBridge, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("vectorstore: gRPC address %q: %w", target, err)
	}
	tc = tc.Clone()
	tc.NextProtos = []string{"h2"}
	if tc.ServerName == "" {
		tc.ServerName = host
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("vectorstore: gRPC TLS bridge: %w", err)
	}
	b := &grpcTLSBridge{ln: ln, target: target, tc: tc}
	go b.serve()
	return b, nil
}

// Addr is the loopback host:port the Weaviate client dials in plaintext.
func (b *grpcTLSBridge) Addr() string { return b.ln.Addr().String() }

func (b *grpcTLSBridge) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		go b.forward(c)
	}
}

// forward copies one plaintext connection to a new TLS connection and back. A failed
// handshake (an untrusted certificate, say) closes the plaintext side, so the gRPC call fails
// as Unavailable with the connection error.
func (b *grpcTLSBridge) forward(plain net.Conn) {
	defer plain.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	d := tls.Dialer{NetDialer: &net.Dialer{}, Config: b.tc}
	remote, err := d.DialContext(ctx, "tcp", b.target)
	cancel()
	if err != nil {
		return
	}
	defer remote.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(remote, plain)
	go pipe(plain, remote)
	<-done
	<-done
}
