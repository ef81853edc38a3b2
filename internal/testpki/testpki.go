// Package testpki makes throw-away certificate authorities and serving certificates for
// tests (ECDSA P-256, valid for one day), and TLS-terminating TCP proxies that put a
// plaintext server behind them.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"
)

// CA is a certificate authority.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, PEM-encoded (what a CA bundle holds).
	PEM []byte
}

// NewCA makes a self-signed CA named cn.
func NewCA(t testing.TB, cn string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Serving issues a server certificate for 127.0.0.1 and localhost.
func (ca *CA) Serving(t testing.TB) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: "weaviate"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Proxy is a TLS-terminating TCP proxy: it serves TLS with a certificate and copies the
// decrypted bytes to a plaintext target.
type Proxy struct {
	// Addr is the proxy's host:port.
	Addr string

	mu        sync.Mutex
	protocols []string // ALPN protocol of each completed handshake ("" when none)
	failed    int      // handshakes that failed (the client refused the certificate, say)
}

// NewProxy listens on 127.0.0.1 with cert, offering ALPN protocols protos (h2 for gRPC), and
// forwards each connection to target until the test ends.
func NewProxy(t testing.TB, target string, cert tls.Certificate, protos ...string) *Proxy {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: protos, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String()}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c.(*tls.Conn), target)
		}
	}()
	return p
}

func (p *Proxy) forward(c *tls.Conn, target string) {
	defer c.Close()
	if err := c.Handshake(); err != nil {
		p.mu.Lock()
		p.failed++
		p.mu.Unlock()
		return
	}
	p.mu.Lock()
	p.protocols = append(p.protocols, c.ConnectionState().NegotiatedProtocol)
	p.mu.Unlock()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); _ = up.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); _ = c.CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

// Handshakes returns the ALPN protocols of the completed handshakes, in order, and the number
// of failed ones.
func (p *Proxy) Handshakes() (protocols []string, failed int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.protocols...), p.failed
}
