package endpoint

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Config is the endpoint's configuration file (JSON; the access-endpoint ConfigMap's
// config.json): which tokens it accepts and how identities map to groups.
type Config struct {
	// ServiceAccounts accepts Kubernetes tokens through TokenReview (default true).
	ServiceAccounts *bool `json:"serviceAccounts,omitempty"`
	// Audiences a Kubernetes token must be valid for; empty accepts the API server's own.
	Audiences []string `json:"audiences,omitempty"`
	// OIDC lists the trusted OIDC issuers.
	OIDC []OIDCIssuer `json:"oidc,omitempty"`
	// Users maps usernames to extra groups (TokenGroups.Users).
	Users map[string][]string `json:"users,omitempty"`
}

// LoadConfig reads a Config from path; "" is the default (ServiceAccounts only).
//
// Errors: an unreadable or malformed file; an issuer that is not an http(s) URL or has no
// clientID.
func LoadConfig(path string) (Config, error) {
	var c Config
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return c, err
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return c, fmt.Errorf("access endpoint config %s: %w", path, err)
		}
	}
	for _, is := range c.OIDC {
		u, err := url.Parse(is.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || is.ClientID == "" {
			return c, fmt.Errorf("access endpoint config: oidc issuer %q: want an http(s) URL and a clientID", is.URL)
		}
	}
	return c, nil
}

// NewServer returns the endpoint for the Indexes of namespace: Kubernetes tokens reviewed by
// the API server kube reaches (unless disabled; reviews cached, CachedAuthenticator), c's OIDC issuers, c's user mapping, and
// Indexes resolved through reader.
func NewServer(c Config, kube *rest.Config, reader client.Reader, namespace string, log *slog.Logger) (*Server, error) {
	chain := &Chain{}
	for _, is := range c.OIDC {
		chain.OIDC = append(chain.OIDC, &OIDC{Issuer: is})
	}
	if c.ServiceAccounts == nil || *c.ServiceAccounts {
		cs, err := kubernetes.NewForConfig(kube)
		if err != nil {
			return nil, err
		}
		chain.Kubernetes = &CachedAuthenticator{Next: &TokenReviewer{Client: cs.AuthenticationV1().TokenReviews(), Audiences: c.Audiences}}
	}
	return &Server{
		Authorizer: &Authorizer{Authn: chain, Groups: TokenGroups{Users: c.Users}},
		Resolver:   &KubeResolver{Client: reader, Namespace: namespace},
		Log:        log,
	}, nil
}
