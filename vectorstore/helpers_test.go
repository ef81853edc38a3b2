package vectorstore

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// One server for the package's tests (each test uses its own collections); tests that stop a
// server start their own.
var shared struct {
	once sync.Once
	srv  *weaviatetest.Server
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.srv != nil {
		shared.srv.Stop()
	}
	if sharedCluster.c != nil {
		sharedCluster.c.Stop()
	}
	os.Exit(code)
}

func sharedServer(t *testing.T) *weaviatetest.Server {
	t.Helper()
	bin := weaviatetest.Require(t)
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.srv, shared.err = weaviatetest.Launch(ctx, weaviatetest.Options{Binary: bin})
	})
	if shared.err != nil {
		t.Fatalf("start weaviate: %v", shared.err)
	}
	return shared.srv
}

func storeFor(t *testing.T, srv *weaviatetest.Server, cfg Config) *Store {
	t.Helper()
	cfg.HTTPHost, cfg.GRPCHost = srv.HTTPAddr, srv.GRPCAddr
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// scifactDocs returns the first n SciFact documents (title and abstract joined by a blank line)
// with their ids. The folder is $RAGOPS_DATASETS/scifact, else ../shared/datasets/scifact beside
// the repository root.
func scifactDocs(t testing.TB, n int) (ids, texts []string) {
	t.Helper()
	f := openDatasetCorpus(t, "scifact")
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() && len(ids) < n {
		var d struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
		texts = append(texts, d.Title+"\n\n"+d.Text)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ids, texts
}

// unitVector is a deterministic pseudo-random unit vector seeded by key.
func unitVector(key string, dims int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(key))
	r := rand.New(rand.NewPCG(h.Sum64(), 0x9e3779b97f4a7c15))
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		x := r.NormFloat64()
		v[i] = float32(x)
		norm += x * x
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

// chunkDocs cuts documents into 48-word chunks with 8 words overlap and gives each chunk a
// deterministic vector of its text.
func chunkDocs(t testing.TB, ids, texts []string, dims int) []Chunk {
	t.Helper()
	ch, err := chunkers.NewFixed(chunkers.WordSizer{}, 48, 8)
	if err != nil {
		t.Fatal(err)
	}
	var out []Chunk
	for i, text := range texts {
		cs, err := ch.Chunk(context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			body := text[c.Start:c.End]
			out = append(out, Chunk{
				DocID: ids[i], Ordinal: c.Ordinal, Start: c.Start, End: c.End, Text: body,
				HeadingPath: []string{strings.SplitN(text, "\n", 2)[0]},
				DocHash:     hashOf(text), Vector: unitVector(body, dims),
			})
		}
	}
	return out
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// openDatasetCorpus opens a data set's corpus.jsonl: $RAGOPS_DATASETS/<name>, else
// ../shared/datasets/<name> beside the repository root. Without it the test skips, or fails
// under RAGOPS_REQUIRE_ALL=1.
func openDatasetCorpus(t testing.TB, name string) *os.File {
	t.Helper()
	base := os.Getenv("RAGOPS_DATASETS")
	if base == "" {
		root, err := weaviatetest.FindModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		base = filepath.Join(root, "..", "shared", "datasets")
	}
	f, err := os.Open(filepath.Join(base, name, "corpus.jsonl"))
	if err != nil {
		msg := name + " corpus missing: " + err.Error() + " (set RAGOPS_DATASETS to the folder holding " + name + "/)"
		if os.Getenv(weaviatetest.EnvRequireAll) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return f
}
