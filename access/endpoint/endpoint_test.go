package endpoint

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/testenv"
	"github.com/ragops/ragops/pipeline/build"
	"github.com/ragops/ragops/serving"
	"github.com/ragops/ragops/serving/servingtest"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// issuer is a test OIDC issuer: discovery and JWKS over HTTP, RS256 tokens signed with key.
type issuer struct {
	srv *httptest.Server
	key *rsa.PrivateKey
}

func startIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(crand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key}
	mux := http.NewServeMux()
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks",
			"authorization_endpoint": is.srv.URL + "/auth", "token_endpoint": is.srv.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"}})
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	return is
}

// sign returns a compact JWT of claims signed with key under key ID kid.
func sign(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(claims)
	jws, err := sig.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (is *issuer) token(t *testing.T, sub string, groups []string, exp time.Time) string {
	return sign(t, is.key, "k1", map[string]any{"iss": is.srv.URL, "aud": "ragops", "sub": sub, "groups": groups,
		"iat": time.Now().Add(-time.Minute).Unix(), "exp": exp.Unix()})
}

// Document classes of the fixture corpus, by folder. Three access classes and the documents
// no rule matches (default Deny: nobody reads them).
const (
	classPublic  = "openbaar"
	classCouncil = "besloten"
	classLegal   = "advies"
	classDenied  = "intern"
)

var topics = []string{"windenergie", "begroting", "woningbouw", "verkeer", "onderwijs", "jeugdzorg", "cultuur", "sport", "afval", "parkeren"}

// writeCorpus writes n documents of each class: Markdown, the legal ones with front matter
// classification vertrouwelijk, the denied ones in intern/ without any.
func writeCorpus(t *testing.T, dir string, n int) {
	t.Helper()
	for _, class := range []string{classPublic, classCouncil, classLegal, classDenied} {
		if err := os.MkdirAll(filepath.Join(dir, class), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			topic := topics[i%len(topics)]
			body := fmt.Sprintf("# %s %s %d\n\nDe raad bespreekt %s in vergadering %d van het %s dossier. Het %s voorstel over %s wordt %s behandeld.\n",
				class, topic, i, topic, i, class, class, topic, class)
			if class == classLegal {
				body = "---\nclassification: vertrouwelijk\n---\n" + body
			}
			if err := os.WriteFile(filepath.Join(dir, class, fmt.Sprintf("%s-%02d.md", topic, i)), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func accessSpec(councilGroup string) *ragopsv1alpha1.AccessSpec {
	return &ragopsv1alpha1.AccessSpec{Default: ragopsv1alpha1.AccessDeny, Rules: []ragopsv1alpha1.AccessRule{
		{Path: classPublic + "/**", Groups: []string{ragopsv1alpha1.PublicGroup}},
		{Path: classCouncil + "/**", Groups: []string{councilGroup}},
		{Field: "frontmatter.classification", Values: []string{"vertrouwelijk"}, Groups: []string{"juridisch"}},
	}}
}

func classOf(docID string) string { c, _, _ := strings.Cut(docID, "/"); return c }

type persona struct {
	name    string
	token   string
	allowed map[string]bool
}

type fixture struct {
	url      string
	personas []persona
	store    *vectorstore.Store
	plan     plan.Build
	alias    string
}

// post sends one search and returns the status and the decoded body.
func post(t *testing.T, url, token string, req Request) (int, Response, string) {
	t.Helper()
	body, _ := json.Marshal(req)
	hr, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if token != "" {
		hr.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out Response
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
	}
	return resp.StatusCode, out, string(raw)
}

func queryFor(r *rand.Rand, i int) Request {
	modes := []string{"dense", "bm25", "hybrid"}
	classes := []string{classPublic, classCouncil, classLegal, classDenied}
	q := topics[r.IntN(len(topics))] + " " + classes[r.IntN(len(classes))]
	if r.IntN(2) == 0 {
		q += " " + topics[r.IntN(len(topics))] + " vergadering " + fmt.Sprint(r.IntN(20))
	}
	// Every other query asks for its hits' neighbours (small-to-big), in every mode.
	return Request{Query: q, Mode: modes[i%len(modes)], K: 8, Neighbours: (i / 3) % 2}
}

// Issue 52, access: a real corpus in three access classes (and a denied one) built by the
// worker with spec.access, served by the endpoint over a real Weaviate (alias, model server
// embedding dense and hybrid text) to four personas authenticated for real: two
// ServiceAccounts through TokenReview against envtest's kube-apiserver (one with a
// configured group mapping), two OIDC users of an issuer the test starts. Every query of
// every mode returns only chunks of the persona's classes (checked against the fixture's
// own classes, not against what the endpoint says), and every persona sees each of its
// classes. Tokens that are missing, expired, of an unknown issuer or badly signed are 401; a
// failing group resolver, API server or issuer is 503; never results. Then a rule change
// and one sync: the council documents vanish from the council personas' results, with
// nothing embedded.
func TestEndpointServesOnlyReadableChunksFailsClosedAndRevokes(t *testing.T) {
	env := testenv.StartTest(t)
	model := servingtest.ModelDir(t, servingtest.EnvMiniLM)
	wv := weaviatetest.StartWith(t, weaviatetest.Options{Modules: []string{weaviatetest.ModuleTransformers}})
	srv := servingtest.Start(t, model, serving.Options{})
	ctx := t.Context()
	const ns = "archief"
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	saToken := func(name string) string {
		t.Helper()
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		exp := int64(3600)
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}

	// The corpus, built with its access rules by the worker, behind the Index's alias.
	dir := t.TempDir()
	const perClass = 20
	writeCorpus(t, dir, perClass)
	collection, _ := vectorstore.CollectionName(ns, "besluiten", "r1")
	alias, _ := vectorstore.AliasName(ns, "besluiten")
	p := plan.Build{Version: plan.Version, Namespace: ns, Index: "besluiten", Revision: "r1", Collection: collection, Shards: 1,
		Source:   plan.Source{Dir: dir},
		Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitTokens, Size: 16},
		ModelDir: model, ModelServer: srv.URL,
		Embedder: ragopsv1alpha1.EmbedderSpec{Device: ragopsv1alpha1.DeviceCPU, Threads: 1},
		Weaviate: plan.Weaviate{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr},
		Access:   accessSpec("raad")}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	res, err := build.Run(ctx, log, p, build.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Documents != 4*perClass {
		t.Fatalf("built %d documents, want %d", res.Documents, 4*perClass)
	}
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.SetAlias(ctx, alias, collection); err != nil {
		t.Fatal(err)
	}

	// The Corpus and Index the endpoint resolves.
	corpusObj := &ragopsv1alpha1.Corpus{ObjectMeta: metav1.ObjectMeta{Name: "besluiten", Namespace: ns}, Spec: ragopsv1alpha1.CorpusSpec{
		PVC: &ragopsv1alpha1.PVCSource{ClaimName: "docs"}, Access: p.Access}}
	if err := env.Client.Create(ctx, corpusObj); err != nil {
		t.Fatal(err)
	}
	idx := &ragopsv1alpha1.Index{ObjectMeta: metav1.ObjectMeta{Name: "besluiten", Namespace: ns}, Spec: ragopsv1alpha1.IndexSpec{
		CorpusRef: ragopsv1alpha1.LocalObjectReference{Name: "besluiten"}, StrategyRef: ragopsv1alpha1.LocalObjectReference{Name: "s"},
		Model:    ragopsv1alpha1.ModelSpec{Name: "m", PVC: &ragopsv1alpha1.PVCSource{ClaimName: "models"}},
		Weaviate: ragopsv1alpha1.WeaviateSpec{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr}}}
	if err := env.Client.Create(ctx, idx); err != nil {
		t.Fatal(err)
	}

	is := startIssuer(t)
	oidcAuth := &OIDC{Issuer: OIDCIssuer{URL: is.srv.URL, ClientID: "ragops"}}
	reviewer := &TokenReviewer{Client: cs.AuthenticationV1().TokenReviews()}
	mapping := TokenGroups{Users: map[string][]string{"system:serviceaccount:" + ns + ":griffier": {"raad", "juridisch"}}}
	resolver := &KubeResolver{Client: env.Client, Namespace: ns}
	newServer := func(a *Authorizer) string {
		hs := httptest.NewServer((&Server{Authorizer: a, Resolver: resolver}).Handler())
		t.Cleanup(hs.Close)
		return hs.URL + "/v1/indexes/besluiten/search"
	}
	url := newServer(&Authorizer{Authn: &Chain{OIDC: []*OIDC{oidcAuth}, Kubernetes: reviewer}, Groups: mapping})
	in := func(classes ...string) map[string]bool {
		m := map[string]bool{}
		for _, c := range classes {
			m[c] = true
		}
		return m
	}
	personas := []persona{
		{"burger (ServiceAccount)", saToken("burger"), in(classPublic)},
		{"griffier (ServiceAccount, mapped to raad and juridisch)", saToken("griffier"), in(classPublic, classCouncil, classLegal)},
		{"raadslid (OIDC, raad)", is.token(t, "raadslid", []string{"raad"}, time.Now().Add(time.Hour)), in(classPublic, classCouncil)},
		{"jurist (OIDC, juridisch)", is.token(t, "jurist", []string{"juridisch"}, time.Now().Add(time.Hour)), in(classPublic, classLegal)},
	}

	// Unfiltered, the queries do reach every class (else the leak check would prove nothing).
	reached := map[string]bool{}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 60 {
		q := queryFor(r, i)
		hits, err := store.Search(ctx, alias, vectorstore.Query{Mode: vectorstore.ModeBM25, Text: q.Query, Limit: q.K})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			reached[classOf(h.DocID)] = true
		}
	}
	if len(reached) != 4 {
		t.Fatalf("unfiltered queries reach classes %v, want all four", reached)
	}

	queries := 1000
	if testing.Short() {
		queries = 150
	}
	t.Run("leak", func(t *testing.T) {
		start := time.Now()
		var wg sync.WaitGroup
		for pi, pe := range personas {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(pi), 7))
				seen := map[string]int{}
				expanded := 0
				for i := range queries {
					code, out, raw := post(t, url, pe.token, queryFor(r, i))
					if code != http.StatusOK {
						t.Errorf("%s: query %d: status %d: %s", pe.name, i, code, raw)
						return
					}
					for _, h := range out.Results {
						c := classOf(h.DocID)
						seen[c]++
						if !pe.allowed[c] {
							t.Errorf("%s: query %d returned %s (class %s): a leak", pe.name, i, h.DocID, c)
						}
						if len(h.Neighbours) > 1 {
							expanded++
						}
						for _, n := range h.Neighbours {
							if n.DocID != h.DocID || !pe.allowed[classOf(n.DocID)] {
								t.Errorf("%s: query %d expanded %s#%d with %s#%d: a leak", pe.name, i, h.DocID, h.Chunk, n.DocID, n.Chunk)
							}
						}
					}
				}
				if expanded == 0 {
					t.Errorf("%s: no hit was expanded with neighbours", pe.name)
				}
				for c := range pe.allowed {
					if seen[c] == 0 {
						t.Errorf("%s: no result of its class %s in %d queries (seen %v)", pe.name, c, queries, seen)
					}
				}
				t.Logf("%s: %d queries, results by class %v", pe.name, queries, seen)
			})
		}
		wg.Wait()
		t.Logf("%d queries (%d personas x %d, dense, bm25, hybrid in turn) in %v", len(personas)*queries, len(personas), queries, time.Since(start).Round(time.Millisecond))
	})

	t.Run("fail closed", func(t *testing.T) {
		q := Request{Query: "windenergie besloten", Mode: "hybrid", K: 8}
		other, err := rsa.GenerateKey(crand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		valid := is.token(t, "raadslid", []string{"raad"}, time.Now().Add(time.Hour))
		down := httptest.NewServer(http.NotFoundHandler())
		downURL := down.URL
		down.Close()
		badAPI := rest.CopyConfig(env.Config)
		badAPI.Host = downURL
		badCS, err := kubernetes.NewForConfig(badAPI)
		if err != nil {
			t.Fatal(err)
		}
		failing := groupsFunc(func(context.Context, Identity) ([]string, error) {
			return nil, errors.New("directory unreachable")
		})
		emptyGroup := groupsFunc(func(context.Context, Identity) ([]string, error) { return []string{"raad", ""}, nil })
		cases := []struct {
			name  string
			url   string
			token string
			want  int
		}{
			{"no token", url, "", http.StatusUnauthorized},
			{"expired OIDC token", url, is.token(t, "raadslid", []string{"raad"}, time.Now().Add(-time.Minute)), http.StatusUnauthorized},
			{"unknown issuer", url, sign(t, other, "k1", map[string]any{"iss": "https://idp.example.org", "aud": "ragops", "sub": "raadslid",
				"groups": []string{"raad"}, "exp": time.Now().Add(time.Hour).Unix()}), http.StatusUnauthorized},
			{"known issuer, foreign key", url, sign(t, other, "k1", map[string]any{"iss": is.srv.URL, "aud": "ragops", "sub": "raadslid",
				"groups": []string{"raad"}, "exp": time.Now().Add(time.Hour).Unix()}), http.StatusUnauthorized},
			{"wrong audience", url, sign(t, is.key, "k1", map[string]any{"iss": is.srv.URL, "aud": "other", "sub": "raadslid",
				"groups": []string{"raad"}, "exp": time.Now().Add(time.Hour).Unix()}), http.StatusUnauthorized},
			{"not a token", url, "raad", http.StatusUnauthorized},
			{"group resolver down", newServer(&Authorizer{Authn: &Chain{OIDC: []*OIDC{oidcAuth}, Kubernetes: reviewer}, Groups: failing}), valid, http.StatusServiceUnavailable},
			{"group resolver returns an empty group", newServer(&Authorizer{Authn: &Chain{OIDC: []*OIDC{oidcAuth}, Kubernetes: reviewer}, Groups: emptyGroup}), valid, http.StatusServiceUnavailable},
			{"API server down (TokenReview)", newServer(&Authorizer{Authn: &Chain{Kubernetes: &TokenReviewer{Client: badCS.AuthenticationV1().TokenReviews()}}}), personas[0].token, http.StatusServiceUnavailable},
			{"issuer down", newServer(&Authorizer{Authn: &Chain{OIDC: []*OIDC{{Issuer: OIDCIssuer{URL: downURL, ClientID: "ragops"}}}}}),
				sign(t, is.key, "k1", map[string]any{"iss": downURL, "aud": "ragops", "sub": "raadslid", "exp": time.Now().Add(time.Hour).Unix()}), http.StatusServiceUnavailable},
		}
		for _, tc := range cases {
			code, out, raw := post(t, tc.url, tc.token, q)
			if code != tc.want || len(out.Results) != 0 || strings.Contains(raw, "results") {
				t.Errorf("%s: status %d body %s; want %d and no results", tc.name, code, raw, tc.want)
			}
		}
		// A Grant only the Authorizer makes: the zero one searches nothing.
		target, err := resolver.Resolve(ctx, "besluiten")
		if err != nil {
			t.Fatal(err)
		}
		q.Neighbours = 2
		if hits, err := (Searcher{}).Search(ctx, Grant{}, target, q); !errors.Is(err, errNoGrant) || hits != nil {
			t.Errorf("zero grant: %d hits, error %v; want errNoGrant", len(hits), err)
		}
	})

	t.Run("revocation", func(t *testing.T) {
		council := func(pe persona) int {
			n := 0
			r := rand.New(rand.NewPCG(9, 9))
			for i := range 60 {
				q := queryFor(r, i)
				q.Query = topics[i%len(topics)] + " " + classCouncil
				code, out, raw := post(t, url, pe.token, q)
				if code != http.StatusOK {
					t.Fatalf("%s: status %d: %s", pe.name, code, raw)
				}
				for _, h := range out.Results {
					if classOf(h.DocID) == classCouncil {
						n++
					}
				}
			}
			return n
		}
		raadslid, griffier := personas[2], personas[1]
		if council(raadslid) == 0 || council(griffier) == 0 {
			t.Fatal("before the change, the council personas do not see council documents")
		}
		p2 := p
		p2.Incremental, p2.Access = true, accessSpec("raad-presidium")
		start := time.Now()
		res, err := build.Run(ctx, log, p2, build.Options{})
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if res.Tokens != 0 || res.Documents != 0 || res.Regrouped != 4*perClass {
			t.Errorf("sync after the rule change: %d tokens embedded, %d documents written, %d regrouped; want 0, 0, %d", res.Tokens, res.Documents, res.Regrouped, 4*perClass)
		}
		t.Logf("rule change reached the chunks in one sync of %v: %d documents regrouped, %d tokens embedded", took.Round(time.Millisecond), res.Regrouped, res.Tokens)
		if n := council(raadslid); n != 0 {
			t.Errorf("raadslid still gets %d council chunks after the revocation", n)
		}
		if n := council(griffier); n != 0 {
			t.Errorf("griffier still gets %d council chunks after the revocation", n)
		}
		presidium := is.token(t, "voorzitter", []string{"raad-presidium"}, time.Now().Add(time.Hour))
		if council(persona{name: "voorzitter", token: presidium}) == 0 {
			t.Error("the new group raad-presidium does not see the council documents")
		}
		// A second sync finds nothing to do.
		res, err = build.Run(ctx, log, p2, build.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Regrouped != 0 || res.Unchanged != 4*perClass {
			t.Errorf("second sync: %d regrouped, %d unchanged; want 0 and %d", res.Regrouped, res.Unchanged, 4*perClass)
		}
	})
}

type groupsFunc func(context.Context, Identity) ([]string, error)

func (f groupsFunc) Groups(ctx context.Context, id Identity) ([]string, error) { return f(ctx, id) }
