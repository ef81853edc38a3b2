package servingcert

import (
	"crypto/x509"
	"testing"
	"time"
)

func TestGenerateCoversHosts(t *testing.T) {
	c, err := Generate([]string{"127.0.0.1", "localnode"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"127.0.0.1", "localnode"} {
		if err := cert.VerifyHostname(h); err != nil {
			t.Errorf("certificate does not cover %s: %v", h, err)
		}
	}
	if err := cert.VerifyHostname("example.com"); err == nil {
		t.Error("certificate covers example.com, which it was not asked for")
	}
}
