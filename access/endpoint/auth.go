// Package endpoint is the access-enforcing query endpoint (`ragops access-endpoint`): it
// authenticates every request (Kubernetes ServiceAccount tokens through TokenReview, OIDC
// bearer tokens against configured issuers), turns the identity into groups, and runs the
// search (dense, BM25, hybrid) through the Index's alias with an access filter on the chunks'
// groups. It fails closed: a request without an identity is 401, and any error while
// authenticating, resolving groups or building the filter is an error response, never an
// unfiltered result; the search function takes a [Grant], which only [Authorizer] makes
// (docs/security.md).
package endpoint

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/coreos/go-oidc/v3/oidc"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
)

// Identity is an authenticated caller.
type Identity struct {
	// User is the username: system:serviceaccount:<ns>:<name> for a ServiceAccount, the
	// issuer's username claim for OIDC.
	User string
	// Groups are the groups the token states (TokenReview's user groups, the OIDC groups claim).
	Groups []string
}

// Authenticator turns a bearer token into an Identity.
type Authenticator interface {
	// Authenticate returns the token's identity. Errors: *UnauthenticatedError for a token
	// that is not valid (the response is 401); any other error when the token could not be
	// checked (an API server or issuer that does not answer; the response is 503).
	Authenticate(ctx context.Context, token string) (Identity, error)
}

// UnauthenticatedError is a request without a valid identity: no token, an expired or
// malformed one, an unknown issuer, a bad signature, a token the API server rejects.
type UnauthenticatedError struct{ Reason string }

func (e *UnauthenticatedError) Error() string { return "unauthenticated: " + e.Reason }

// TokenReviewer authenticates Kubernetes tokens (ServiceAccount tokens, and whatever else the
// API server accepts) with the TokenReview API. The endpoint's ServiceAccount needs create on
// tokenreviews (ClusterRole system:auth-delegator).
type TokenReviewer struct {
	Client authenticationv1client.TokenReviewInterface
	// Audiences, when set, are the audiences the token must be valid for (TokenRequest's
	// audiences); empty accepts the API server's own.
	Audiences []string
}

// Authenticate implements Authenticator.
func (t *TokenReviewer) Authenticate(ctx context.Context, token string) (Identity, error) {
	tr, err := t.Client.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token, Audiences: t.Audiences}}, metav1.CreateOptions{})
	if err != nil {
		return Identity{}, &BackendError{Op: "token review", Err: err}
	}
	if !tr.Status.Authenticated {
		reason := tr.Status.Error
		if reason == "" {
			reason = "the API server does not accept the token"
		}
		return Identity{}, &UnauthenticatedError{Reason: reason}
	}
	return Identity{User: tr.Status.User.Username, Groups: tr.Status.User.Groups}, nil
}

// OIDCIssuer is one trusted OIDC issuer.
type OIDCIssuer struct {
	// URL is the issuer (the iss claim); its keys come from URL/.well-known/openid-configuration.
	URL string `json:"url"`
	// ClientID is the audience (aud claim) tokens must carry.
	ClientID string `json:"clientID"`
	// UsernameClaim names the username claim; default "sub".
	UsernameClaim string `json:"usernameClaim,omitempty"`
	// GroupsClaim names the groups claim (a list or one string); default "groups".
	GroupsClaim string `json:"groupsClaim,omitempty"`
	// UsernamePrefix and GroupsPrefix are prepended to the username and each group, so that
	// an issuer cannot name groups of another (default: none).
	UsernamePrefix string `json:"usernamePrefix,omitempty"`
	GroupsPrefix   string `json:"groupsPrefix,omitempty"`
}

// OIDC authenticates tokens of one issuer: signature against the issuer's keys (discovery
// and JWKS, fetched on first use and refreshed on an unknown key ID), issuer, audience and
// expiry (go-oidc's IDTokenVerifier).
type OIDC struct {
	Issuer OIDCIssuer
	// Client fetches discovery and keys; nil is http.DefaultClient.
	Client *http.Client

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
}

func (o *OIDC) ctx(ctx context.Context) context.Context {
	if o.Client != nil {
		return oidc.ClientContext(ctx, o.Client)
	}
	return ctx
}

// verifierFor returns the verifier, running discovery the first time (retried on each call
// until it succeeds).
func (o *OIDC) verifierFor(ctx context.Context) (*oidc.IDTokenVerifier, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.verifier != nil {
		return o.verifier, nil
	}
	// The key set outlives this request: it is fetched with a context of its own.
	p, err := oidc.NewProvider(o.ctx(ctx), o.Issuer.URL)
	if err != nil {
		return nil, &BackendError{Op: "oidc discovery of " + o.Issuer.URL, Err: err}
	}
	o.verifier = p.VerifierContext(o.ctx(context.WithoutCancel(ctx)), &oidc.Config{ClientID: o.Issuer.ClientID})
	return o.verifier, nil
}

// Authenticate implements Authenticator.
func (o *OIDC) Authenticate(ctx context.Context, token string) (Identity, error) {
	v, err := o.verifierFor(ctx)
	if err != nil {
		return Identity{}, err
	}
	idt, err := v.Verify(o.ctx(ctx), token)
	if err != nil {
		if ctx.Err() != nil {
			return Identity{}, ctx.Err()
		}
		return Identity{}, &UnauthenticatedError{Reason: err.Error()}
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, &UnauthenticatedError{Reason: "claims: " + err.Error()}
	}
	uc, gc := o.Issuer.UsernameClaim, o.Issuer.GroupsClaim
	if uc == "" {
		uc = "sub"
	}
	if gc == "" {
		gc = "groups"
	}
	user, _ := claims[uc].(string)
	if user == "" {
		return Identity{}, &UnauthenticatedError{Reason: fmt.Sprintf("token has no %s claim", uc)}
	}
	id := Identity{User: o.Issuer.UsernamePrefix + user}
	switch g := claims[gc].(type) {
	case nil:
	case string:
		id.Groups = []string{o.Issuer.GroupsPrefix + g}
	case []any:
		for _, e := range g {
			s, ok := e.(string)
			if !ok {
				return Identity{}, &UnauthenticatedError{Reason: fmt.Sprintf("claim %s holds a non-string item", gc)}
			}
			id.Groups = append(id.Groups, o.Issuer.GroupsPrefix+s)
		}
	default:
		return Identity{}, &UnauthenticatedError{Reason: fmt.Sprintf("claim %s is neither a string nor a list", gc)}
	}
	return id, nil
}

// Chain routes a token to the OIDC issuer its (unverified) iss claim names, and every other
// token (a ServiceAccount token, an opaque token, an unknown issuer's) to Kubernetes, which
// rejects what it does not know. Without Kubernetes such a token is unauthenticated.
type Chain struct {
	OIDC       []*OIDC
	Kubernetes Authenticator
}

// Authenticate implements Authenticator.
func (c *Chain) Authenticate(ctx context.Context, token string) (Identity, error) {
	if iss := unverifiedIssuer(token); iss != "" {
		for _, o := range c.OIDC {
			if o.Issuer.URL == iss {
				return o.Authenticate(ctx, token)
			}
		}
	}
	if c.Kubernetes == nil {
		return Identity{}, &UnauthenticatedError{Reason: "token of no configured issuer"}
	}
	return c.Kubernetes.Authenticate(ctx, token)
}

// unverifiedIssuer returns the iss claim of a JWT without checking anything ("" when token
// is not a JWT): it only picks the verifier.
func unverifiedIssuer(token string) string {
	var c struct {
		Iss string `json:"iss"`
	}
	if !unverifiedClaims(token, &c) {
		return ""
	}
	return c.Iss
}

// unverifiedClaims decodes the payload of a JWT into v without checking its signature; false
// when token is not a JWT.
func unverifiedClaims(token string, v any) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	return json.Unmarshal(raw, v) == nil
}

// bearer returns the bearer token of r's Authorization header.
func bearer(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", &UnauthenticatedError{Reason: "no Authorization header"}
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", &UnauthenticatedError{Reason: "Authorization is not a bearer token"}
	}
	return strings.TrimSpace(tok), nil
}

// BackendError is an authenticator that could not check a token (the API server or the
// issuer did not answer): the request fails with 503.
type BackendError struct {
	Op  string
	Err error
}

func (e *BackendError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *BackendError) Unwrap() error { return e.Err }

var errNoGrant = errors.New("endpoint: search without a grant (no groups): refused")
