package corpus

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
)

// fakeSTS is an STS endpoint that answers AssumeRoleWithWebIdentity: it issues the fake S3's
// access key (testAccessKey) with a session token only for the expected web identity token
// and role, and refuses anything else with AccessDenied.
type fakeSTS struct {
	server       *httptest.Server
	token, role  string
	sessionToken string

	mu       sync.Mutex
	requests []string // "<Action> <RoleArn> <WebIdentityToken>" per request
}

func newFakeSTS(t *testing.T, token, role string) *fakeSTS {
	t.Helper()
	f := &fakeSTS{token: token, role: role, sessionToken: "session-" + token[:8]}
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		action, gotRole, gotToken := r.PostForm.Get("Action"), r.PostForm.Get("RoleArn"), r.PostForm.Get("WebIdentityToken")
		f.mu.Lock()
		f.requests = append(f.requests, action+" "+gotRole+" "+gotToken)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/xml")
		if r.Method != http.MethodPost || action != "AssumeRoleWithWebIdentity" || gotToken != f.token || gotRole != f.role {
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>Not authorized to perform sts:AssumeRoleWithWebIdentity</Message></Error><RequestId>1</RequestId></ErrorResponse>`)
			return
		}
		fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials><SubjectFromWebIdentityToken>system:serviceaccount:ns:default</SubjectFromWebIdentityToken></AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>2</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>`,
			testAccessKey, testSecretKey, f.sessionToken, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	}))
	t.Cleanup(f.server.Close)
	return f
}

func (f *fakeSTS) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

// writeToken writes a projected-token stand-in and points the worker at it.
func writeToken(t *testing.T, token string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(plan.EnvS3WebIdentityTokenFile, file)
	return file
}

// Web identity: the worker reads the projected token, exchanges it at the STS endpoint for
// the role, and signs every S3 request with the temporary keys and session token; no static
// key is in the environment.
func TestS3WebIdentityExchangesTheProjectedToken(t *testing.T) {
	t.Setenv(plan.EnvS3AccessKey, "")
	t.Setenv(plan.EnvS3SecretKey, "")
	const token = "eyJhbGciOiJSUzI1NiJ9.projected-token-for-ragops.signature"
	const role = "arn:aws:iam::123456789012:role/ragops-reader"
	sts := newFakeSTS(t, token, role)
	f := newFakeS3(t, "docs", map[string]string{"a.md": "# A\nalpha\n", "b.md": "# B\nbeta\n"})
	tokenFile := writeToken(t, token)
	src := plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: f.endpoint(t), Bucket: "docs", Insecure: true,
		Identity: &ragopsv1alpha1.S3Identity{Type: ragopsv1alpha1.S3IdentityWebIdentity,
			WebIdentity: &ragopsv1alpha1.S3WebIdentity{STSEndpoint: sts.server.URL, RoleARN: role}}}}
	s, err := Open(context.Background(), src, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(s.Root(), "b.md")); err != nil || string(b) != "# B\nbeta\n" {
		t.Fatalf("b.md: %q %v", b, err)
	}
	if got := sts.calls(); len(got) != 1 || got[0] != "AssumeRoleWithWebIdentity "+role+" "+token {
		t.Errorf("STS requests %q, want one exchange of the projected token for %s", got, role)
	}
	f.mu.Lock()
	tokens := append([]string(nil), f.tokens...)
	f.mu.Unlock()
	if len(tokens) < 3 { // list + two downloads
		t.Fatalf("S3 saw %d requests, want at least 3", len(tokens))
	}
	for i, tok := range tokens {
		if tok != sts.sessionToken {
			t.Errorf("S3 request %d carried session token %q, want %q", i, tok, sts.sessionToken)
		}
	}

	// A token the STS does not accept: the sync fails naming the refusal, no S3 request is made.
	n := len(tokens)
	if err := os.WriteFile(tokenFile, []byte("some-other-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), src, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "AssumeRoleWithWebIdentity") && !strings.Contains(err.Error(), "AccessDenied") && !strings.Contains(err.Error(), "Not authorized") {
		t.Errorf("refused token: err %v, want the STS refusal", err)
	}
	f.mu.Lock()
	after := len(f.tokens)
	f.mu.Unlock()
	if after != n {
		t.Errorf("S3 saw %d requests with a refused identity, want 0", after-n)
	}
	if got := sts.calls(); len(got) != 2 || !strings.HasSuffix(got[1], " some-other-token") {
		t.Errorf("STS requests %q, want a second exchange with the new token", got)
	}

	// Without the token file variable the worker fails before any request.
	t.Setenv(plan.EnvS3WebIdentityTokenFile, "")
	if _, err := Open(context.Background(), src, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), plan.EnvS3WebIdentityTokenFile) {
		t.Errorf("no token file: err %v, want it to name %s", err, plan.EnvS3WebIdentityTokenFile)
	}
}

// IAM chain: with AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN as an EKS webhook sets them,
// minio-go's IAM provider exchanges that token at the STS endpoint the Corpus names.
func TestS3IAMChainUsesTheWebIdentityEnvironment(t *testing.T) {
	t.Setenv(plan.EnvS3AccessKey, "")
	t.Setenv(plan.EnvS3SecretKey, "")
	const token = "eks-webhook-token-0123456789"
	const role = "arn:aws:iam::123456789012:role/ragops-iam"
	sts := newFakeSTS(t, token, role)
	f := newFakeS3(t, "docs", map[string]string{"a.md": "# A\nalpha\n"})
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", file)
	t.Setenv("AWS_ROLE_ARN", role)
	src := plan.Source{S3: &ragopsv1alpha1.S3Source{Endpoint: f.endpoint(t), Bucket: "docs", Insecure: true,
		Identity: &ragopsv1alpha1.S3Identity{Type: ragopsv1alpha1.S3IdentityIAM, STSEndpoint: sts.server.URL}}}
	s, err := Open(context.Background(), src, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Root(), "a.md")); err != nil {
		t.Fatal(err)
	}
	if got := sts.calls(); len(got) != 1 || got[0] != "AssumeRoleWithWebIdentity "+role+" "+token {
		t.Errorf("STS requests %q, want one exchange of the webhook token", got)
	}
}
