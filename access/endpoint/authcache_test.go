package endpoint

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"

	"github.com/ragops/ragops/internal/testenv"
)

// countingReviews counts the TokenReviews sent to the real API server; while down is set it
// fails them as an unreachable API server would.
type countingReviews struct {
	authenticationv1client.TokenReviewInterface
	calls atomic.Int32
	down  atomic.Bool
}

func (c *countingReviews) Create(ctx context.Context, tr *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	c.calls.Add(1)
	if c.down.Load() {
		return nil, errors.New("connection refused")
	}
	return c.TokenReviewInterface.Create(ctx, tr, opts)
}

// Issue 52, TokenReview cache: against envtest's kube-apiserver, repeated requests with one
// ServiceAccount token cost one TokenReview per TTL; a rejected token and a review that
// failed (API server down) are asked again every time, never served from the cache; an
// entry does not outlive the token's exp claim; the cache holds at most Size entries.
func TestTokenReviewCacheCountsReviews(t *testing.T) {
	env := testenv.StartTest(t)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "default"
	token := func(name string, seconds int64) (string, time.Time) {
		t.Helper()
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token, tr.Status.ExpirationTimestamp.Time
	}
	reviews := &countingReviews{TokenReviewInterface: cs.AuthenticationV1().TokenReviews()}
	now := time.Now()
	cache := &CachedAuthenticator{Next: &TokenReviewer{Client: reviews}, TTL: 10 * time.Second, Size: 2, Now: func() time.Time { return now }}
	auth := func(tok string) (Identity, error) { return cache.Authenticate(ctx, tok) }
	want := func(what string, n int32) {
		t.Helper()
		if got := reviews.calls.Load(); got != n {
			t.Fatalf("%s: %d TokenReviews so far, want %d", what, got, n)
		}
	}

	burger, _ := token("burger", 3600)
	for range 5 {
		id, err := auth(burger)
		if err != nil || id.User != "system:serviceaccount:"+ns+":burger" {
			t.Fatalf("identity %+v, %v", id, err)
		}
	}
	want("5 requests with one token", 1)

	// A rejected token is reviewed every time (and stays rejected).
	for range 3 {
		var ua *UnauthenticatedError
		if _, err := auth("not-a-token"); !errors.As(err, &ua) {
			t.Fatalf("a bad token: %v, want unauthenticated", err)
		}
	}
	want("3 requests with a rejected token", 4)

	// A review that failed is not a success: the next request reviews again.
	griffier, _ := token("griffier", 3600)
	reviews.down.Store(true)
	var be *BackendError
	if _, err := auth(griffier); !errors.As(err, &be) {
		t.Fatalf("API server down: %v, want a backend error", err)
	}
	reviews.down.Store(false)
	if id, err := auth(griffier); err != nil || id.User != "system:serviceaccount:"+ns+":griffier" {
		t.Fatalf("after the API server is back: %+v, %v", id, err)
	}
	want("a failed review then a good one", 6)

	// Past the TTL the token is reviewed again.
	now = now.Add(11 * time.Second)
	if _, err := auth(burger); err != nil {
		t.Fatal(err)
	}
	want("past the TTL", 7)

	// An entry ends at the token's exp claim even when the TTL is longer.
	cache.TTL = 24 * time.Hour
	raadslid, exp := token("raadslid", 600)
	if _, err := auth(raadslid); err != nil {
		t.Fatal(err)
	}
	now = exp.Add(-time.Second)
	if _, err := auth(raadslid); err != nil {
		t.Fatal(err)
	}
	want("before the token's exp", 8)
	now = exp.Add(time.Second)
	_, _ = auth(raadslid) // envtest's clock has not reached exp: the server still accepts it
	want("past the token's exp", 9)

	if n := cache.Len(); n > 2 {
		t.Errorf("the cache holds %d entries, want at most Size 2", n)
	}
}
