package vectorstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/fault"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestNamesFollowWeaviateRulesAndStayDistinct(t *testing.T) {
	long := strings.Repeat("a", 63)
	longIndex := strings.Repeat("b.c-", 63) + "d" // 253 characters
	cases := [][3]string{
		{"default", "docs", "abc123"},
		{"a-b", "c", "r1"},
		{"a", "b-c", "r1"}, // sanitises like the one above
		{"a", "b.c", "r1"}, // and like this one
		{"team-a", "council.resolutions", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
		{long, longIndex, strings.Repeat("f", 128)},
		{long, longIndex + "", strings.Repeat("f", 127) + "e"},
	}
	seen := map[string]string{}
	for _, c := range cases {
		alias, err := AliasName(c[0], c[1])
		if err != nil {
			t.Fatalf("AliasName(%q, %q): %v", c[0], c[1], err)
		}
		coll, err := CollectionName(c[0], c[1], c[2])
		if err != nil {
			t.Fatalf("CollectionName(%q, %q, %q): %v", c[0], c[1], c[2], err)
		}
		for _, n := range []string{alias, coll} {
			if err := ValidateName(n); err != nil {
				t.Errorf("%v", err)
			}
			if len(n) > MaxNameLength {
				t.Errorf("%s: %d bytes", n, len(n))
			}
		}
		if !strings.HasPrefix(alias, "Rag_") || !strings.HasPrefix(coll, "Rag_") {
			t.Errorf("names %s, %s lack the Rag_ prefix", alias, coll)
		}
		key := strings.Join(c[:], "/")
		if prev, dup := seen[strings.ToLower(coll)]; dup {
			t.Errorf("collection %s for %s collides with %s", coll, key, prev)
		}
		seen[strings.ToLower(coll)] = key
		if prev, dup := seen[strings.ToLower(alias)]; dup && prev != c[0]+"/"+c[1] {
			t.Errorf("alias %s for %s/%s collides with %s", alias, c[0], c[1], prev)
		}
		seen[strings.ToLower(alias)] = c[0] + "/" + c[1]
	}
	a, _ := CollectionName("team-a", "docs", "r1")
	if !strings.HasPrefix(a, "Rag_team_a_docs_") || !strings.HasSuffix(a, "_r1") {
		t.Errorf("CollectionName(team-a, docs, r1) = %s, want readable Rag_team_a_docs_<hash>_r1", a)
	}
	b, _ := CollectionName("team-a", "docs", "r1")
	if a != b {
		t.Errorf("CollectionName not deterministic: %s vs %s", a, b)
	}
}

func TestNamesRejectBadInput(t *testing.T) {
	for _, c := range [][3]string{
		{"", "docs", "r"}, {"Team", "docs", "r"}, {"a", "docs_x", "r"}, {"a", "-docs", "r"},
		{"a", "docs", ""}, {"a", "docs", "r/1"}, {"a", "docs", strings.Repeat("x", 129)},
	} {
		if n, err := CollectionName(c[0], c[1], c[2]); err == nil {
			t.Errorf("CollectionName(%q, %q, %q) = %s, want an error", c[0], c[1], c[2], n)
		}
	}
	for _, n := range []string{"", "rag_x", "Rag-x", "Rag x", "R" + strings.Repeat("a", 255)} {
		if ValidateName(n) == nil {
			t.Errorf("ValidateName(%q) accepted", n)
		}
	}
}

func TestChunkIDDeterministicAndDistinct(t *testing.T) {
	if ChunkID("r1", "doc", 3) != ChunkID("r1", "doc", 3) {
		t.Fatal("ChunkID not deterministic")
	}
	if v := ChunkID("r1", "doc", 3).Version(); v != 5 {
		t.Fatalf("ChunkID version %d, want 5", v)
	}
	ids := map[string]string{}
	for _, rev := range []string{"r1", "r2", "r"} {
		for _, doc := range []string{"doc", "doc1", "1", ""} {
			for ord := 0; ord < 12; ord++ {
				id := ChunkID(rev, doc, ord).String()
				key := fmt.Sprintf("%s|%s|%d", rev, doc, ord)
				if prev, ok := ids[id]; ok {
					t.Fatalf("ChunkID collision: %s and %s", prev, key)
				}
				ids[id] = key
			}
		}
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		err       error
		retryable bool
		check     func(error) bool
	}{
		{status.Error(codes.Unavailable, "connection refused"), true, nil},
		{status.Error(codes.DeadlineExceeded, "deadline"), true, nil},
		{&fault.WeaviateClientError{StatusCode: 503, Msg: "busy"}, true, nil},
		{&fault.WeaviateClientError{StatusCode: -1, Msg: "x", DerivedFromError: errors.New("dial tcp: connection refused")}, true, nil},
		{context.DeadlineExceeded, true, nil},
		{&fault.WeaviateClientError{StatusCode: 422, Msg: "invalid property"}, false, func(e error) bool {
			var se *ServerError
			return errors.As(e, &se) && se.Status == 422
		}},
		{status.Error(codes.Unknown, "could not find class Rag_x in schema"), false, func(e error) bool {
			var nf *CollectionNotFoundError
			return errors.As(e, &nf) && nf.Collection == "C"
		}},
		{errors.New("insert: new node has a vector with length 3. Existing nodes have vectors with length 384"), false, func(e error) bool {
			var de *DimensionError
			return errors.As(e, &de) && de.Expected == 384 && de.Actual == 3 && de.Collection == "C"
		}},
		{context.Canceled, false, func(e error) bool { return errors.Is(e, context.Canceled) }},
		// A reply above the receive limit fails the same way again: not retryable.
		{status.Error(codes.ResourceExhausted, "grpc: received message larger than max (5435958 vs. 4194304)"), false, func(e error) bool {
			var se *ServerError
			return errors.As(e, &se)
		}},
		{status.Error(codes.ResourceExhausted, "too many requests"), true, nil},
	}
	for _, c := range cases {
		got := classify("op", "C", c.err)
		if IsRetryable(got) != c.retryable {
			t.Errorf("classify(%v) = %v: retryable %v, want %v", c.err, got, IsRetryable(got), c.retryable)
		}
		if c.check != nil && !c.check(got) {
			t.Errorf("classify(%v) = %#v: wrong type or fields", c.err, got)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Setenv(EnvHTTPHost, "127.0.0.1:1")
	t.Setenv(EnvGRPCHost, "")
	if _, err := ConfigFromEnv(); err == nil || !strings.Contains(err.Error(), EnvGRPCHost) {
		t.Fatalf("missing gRPC host: got %v, want an error naming %s", err, EnvGRPCHost)
	}
	t.Setenv(EnvGRPCHost, "127.0.0.1:2")
	t.Setenv(EnvAPIKey, "k")
	cfg, err := ConfigFromEnv()
	if err != nil || cfg.HTTPHost != "127.0.0.1:1" || cfg.GRPCHost != "127.0.0.1:2" || cfg.APIKey != "k" {
		t.Fatalf("ConfigFromEnv = %+v, %v", cfg, err)
	}
}
