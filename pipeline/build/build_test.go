package build

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/embedder/ort"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// need returns an environment variable a test needs, skipping without it (failing under
// RAGOPS_REQUIRE_ALL=1).
func need(t *testing.T, env, how string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatalf("%s is not set: %s", env, how)
		}
		t.Skipf("%s is not set: %s", env, how)
	}
	return v
}

// fixture is a corpus folder of n short Markdown documents, a real Weaviate and a plan that
// builds them (64-token fixed chunks with the real all-MiniLM-L6-v2).
type fixture struct {
	dir   string
	plan  plan.Build
	store *vectorstore.Store
	wv    *weaviatetest.Server
}

func newFixture(t *testing.T, n int) *fixture {
	t.Helper()
	need(t, ort.EnvLibrary, "run hack/provision-onnxruntime.sh (hack/prepare.d/embedder.sh)")
	model := need(t, "RAGOPS_MODEL_DIR", "run hack/export-model/export.sh (hack/prepare.d/embedder.sh)")
	wv := weaviatetest.Start(t)
	dir := t.TempDir()
	for i := range n {
		body := fmt.Sprintf("# Besluit %d\n\nDe raad besluit over voorstel %d. ", i, i)
		for j := range i % 4 {
			body += fmt.Sprintf("Alinea %d gaat over de begroting van jaar %d en de motie die daarbij hoort. ", j, 2000+i)
		}
		writeDoc(t, dir, i, body)
	}
	collection, err := vectorstore.CollectionName("t", "besluiten", "r1")
	if err != nil {
		t.Fatal(err)
	}
	s, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{dir: dir, store: s, wv: wv, plan: plan.Build{
		Version: plan.Version, Namespace: "t", Index: "besluiten", Revision: "r1", Collection: collection, Shards: 1,
		Source:   plan.Source{Dir: dir},
		Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitTokens, Size: 24},
		ModelDir: model,
		Embedder: ragopsv1alpha1.EmbedderSpec{Device: ragopsv1alpha1.DeviceCPU, Threads: 1},
		Weaviate: plan.Weaviate{URL: "http://" + wv.HTTPAddr, GRPCAddress: wv.GRPCAddr},
	}}
}

func writeDoc(t *testing.T, dir string, i int, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, docName(i)), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func docName(i int) string { return fmt.Sprintf("besluit-%02d.md", i) }

func (f *fixture) run(t *testing.T, incremental bool) (plan.BuildResult, error) {
	t.Helper()
	p := f.plan
	p.Incremental = incremental
	return Run(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), p, Options{})
}

// objects lists the plan collection's chunks as "docId#ordinal" -> object IDs.
func (f *fixture) objects(t *testing.T) map[string][]string {
	t.Helper()
	return f.objectsOf(t, f.plan.Collection)
}

// objectsOf lists a collection's chunks as "docId#ordinal" -> object IDs, paging with a
// cursor the way DocumentHashes does.
func (f *fixture) objectsOf(t *testing.T, collection string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	after := ""
	for {
		res, err := f.store.Client().Experimental().Search().WithCollection(collection).WithLimit(100).
			WithAfter(after).WithProperties(vectorstore.PropDocID, vectorstore.PropChunkOrdinal).Do(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			key := fmt.Sprintf("%v#%v", r.Properties[vectorstore.PropDocID], r.Properties[vectorstore.PropChunkOrdinal])
			out[key] = append(out[key], r.ID)
		}
		if len(res) < 100 {
			return out
		}
		after = res[len(res)-1].ID
	}
}

// assertSame fails unless got holds exactly want's chunks, each once.
func assertSame(t *testing.T, what string, got, want map[string][]string) {
	t.Helper()
	var diff []string
	for k, ids := range got {
		if len(ids) != 1 {
			diff = append(diff, fmt.Sprintf("%s has %d objects", k, len(ids)))
		}
		if _, ok := want[k]; !ok {
			diff = append(diff, k+" is extra")
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			diff = append(diff, k+" is missing")
		}
	}
	sort.Strings(diff)
	if len(diff) > 0 || len(got) != len(want) {
		if len(diff) > 10 {
			diff = append(diff[:10], fmt.Sprintf("... %d more", len(diff)-10))
		}
		t.Fatalf("%s: %d chunks, want %d: %v", what, len(got), len(want), diff)
	}
}

// Defect 1 of issue 16: a document that fails to read during a sync keeps its previous
// chunks and is counted; the others sync as usual.
func TestSyncKeepsChunksOfADocumentThatBecameUnreadable(t *testing.T) {
	f := newFixture(t, 24)
	full, err := f.run(t, false)
	if err != nil {
		t.Fatal(err)
	}
	clean := f.objects(t)
	if full.Documents != 24 || int(full.Chunks) != len(clean) {
		t.Fatalf("clean build: %d documents %d chunks, collection holds %d", full.Documents, full.Chunks, len(clean))
	}

	// Document 5 becomes a half-uploaded Word file (a ZIP header and no central directory):
	// the DOCX reader reports it Corrupt. Document 7 changes, document 9 is removed.
	writeDoc(t, f.dir, 5, "PK\x03\x04\x14\x00\x00\x00word/document.xml truncated")
	writeDoc(t, f.dir, 7, "# Besluit 7\n\nHet voorstel is ingetrokken.")
	if err := os.Remove(filepath.Join(f.dir, docName(9))); err != nil {
		t.Fatal(err)
	}
	res, err := f.run(t, true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Kept != 1 || res.Skipped["Corrupt"] != 1 || res.Documents != 1 || res.Deleted != 1 || res.Unchanged != 21 {
		t.Fatalf("sync result %+v: want kept 1, skipped Corrupt 1, documents 1, deleted 1, unchanged 21", res)
	}
	got := f.objects(t)
	if n, want := countDoc(got, 5), countDoc(clean, 5); n != want || n == 0 {
		t.Errorf("the unreadable document has %d chunks, want its previous %d", n, want)
	}
	// Exactly the clean build's chunks, minus document 9, with document 7 re-chunked.
	want := map[string][]string{}
	for k, v := range clean {
		if !hasDoc(k, 7) && !hasDoc(k, 9) {
			want[k] = v
		}
	}
	for k, v := range got {
		if hasDoc(k, 7) {
			want[k] = v
		}
	}
	assertSame(t, "after the sync", got, want)
	if n := countDoc(got, 7); n != 1 {
		t.Errorf("changed document 7 has %d chunks, want 1", n)
	}
}

// Defect 1 of issue 16: readers that cannot start (PDFium's cache folder is not writable,
// as in a pod without a writable /tmp) fail the shard instead of reporting every document
// unreadable, and the serving collection is untouched.
func TestReadersThatCannotStartFailTheShard(t *testing.T) {
	f := newFixture(t, 12)
	if _, err := f.run(t, false); err != nil {
		t.Fatal(err)
	}
	clean := f.objects(t)
	writeDoc(t, f.dir, 3, "# Besluit 3\n\nGewijzigd.")
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", notADir)
	res, err := f.run(t, true)
	var re *ReadersError
	if !errors.As(err, &re) {
		t.Fatalf("sync with readers that cannot start: result %+v, error %v; want a *ReadersError", res, err)
	}
	if res.Deleted != 0 || res.Documents != 0 {
		t.Fatalf("failed shard wrote: %+v", res)
	}
	assertSame(t, "after the failed sync", f.objects(t), clean)

	// The same on a full build: no empty revision is reported as built.
	if _, err := f.run(t, false); err == nil {
		t.Fatal("full build with readers that cannot start succeeded")
	}
}

func hasDoc(key string, i int) bool {
	n := docName(i)
	return len(key) > len(n) && key[:len(n)+1] == n+"#"
}

func countDoc(objs map[string][]string, i int) int {
	n := 0
	for k := range objs {
		if hasDoc(k, i) {
			n++
		}
	}
	return n
}

// TestMain lets the test binary play the `ragops embed` worker process: with
// RAGOPS_TEST_EMBED_PLAN set it runs that plan's shard 0, writes its result to
// $RAGOPS_TEST_EMBED_RESULT (when set) and exits (0 on success).
func TestMain(m *testing.M) {
	if path := os.Getenv("RAGOPS_TEST_EMBED_PLAN"); path != "" {
		var p plan.Build
		if err := plan.Read(path, &p); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		res, err := Run(context.Background(), slog.New(slog.NewTextHandler(os.Stderr, nil)), p, Options{})
		if out := os.Getenv("RAGOPS_TEST_EMBED_RESULT"); out != "" {
			if werr := plan.WriteResult(out, res); werr != nil {
				fmt.Fprintln(os.Stderr, werr)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Fault injection: the worker process is SIGKILLed mid-shard (after its first batch is in
// Weaviate) and run again, as the Job's retry does. The retry resumes: it embeds exactly the
// documents that were not complete in the collection when the first run died (partial ones
// are rewritten whole) and skips the others. The collection ends with exactly the chunks of a
// clean build of the same plan, each once, under the same object IDs.
func TestKilledShardRetriedEqualsACleanBuild(t *testing.T) {
	f := newFixture(t, 160)
	ctx := context.Background()
	// The clean build, into its own collection.
	clean := f.plan
	clean.Collection += "_clean"
	cleanRes, err := Run(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), clean, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := f.objectsOf(t, clean.Collection)

	raw, err := json.Marshal(f.plan)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), plan.File)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	resultPath := filepath.Join(t.TempDir(), "result.json")
	worker := func() *exec.Cmd {
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), "RAGOPS_TEST_EMBED_PLAN="+path, "RAGOPS_TEST_EMBED_RESULT="+resultPath)
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := worker()
	ended := make(chan error, 1)
	go func() { ended <- first.Wait() }()
	// Kill it once some but not all chunks are written.
	var at int
	for at == 0 {
		select {
		case err := <-ended:
			t.Fatalf("the worker ended (%v) before it could be killed", err)
		case <-time.After(20 * time.Millisecond):
		}
		if n, err := f.store.Count(ctx, f.plan.Collection); err == nil && n > 0 {
			at = n
		}
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-ended
	if ws, ok := first.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("the worker was not killed (%v): it finished before the fault", first.ProcessState)
	}
	killed, _ := f.store.Count(ctx, f.plan.Collection)
	if killed >= len(want) {
		t.Fatalf("the worker had written %d of %d chunks when killed: no fault happened mid-shard", killed, len(want))
	}
	// The documents the killed run left complete: every chunk of the clean build is there,
	// and the manifest says so (a document whose chunks were in but whose record was not yet
	// marked complete is written again).
	complete, partial := completeDocuments(t, f, want)
	if recorded := completeRecords(t, f); recorded > complete {
		t.Fatalf("the manifest holds %d complete records, the collection %d complete documents", recorded, complete)
	} else {
		complete = recorded
	}
	start := time.Now()
	retry := worker()
	if err := retry.Wait(); err != nil {
		t.Fatalf("retried shard: %v", err)
	}
	took := time.Since(start)
	var res plan.BuildResult
	raw, err = os.ReadFile(resultPath)
	if err == nil {
		err = json.Unmarshal(raw, &res)
	}
	if err != nil {
		t.Fatalf("result of the retry: %v", err)
	}
	docs := int64(160)
	if res.Resumed != int64(complete) || res.Documents != docs || res.Documents-res.Resumed != docs-int64(complete) {
		t.Errorf("retry result: %d documents, %d resumed; want %d documents of which the %d complete at the kill resumed and %d embedded",
			res.Documents, res.Resumed, docs, complete, docs-int64(complete))
	}
	if res.Chunks != int64(len(want)) || res.ShardChunks == nil || *res.ShardChunks != int64(len(want)) {
		t.Errorf("retry result: %d chunks, %v shard chunks; want %d", res.Chunks, res.ShardChunks, len(want))
	}
	// Tokens cover the resumed documents too (tokenized, not embedded): the clean build's count.
	if res.Tokens != cleanRes.Tokens || (complete > 0) != (res.ResumedTokens > 0) || res.ResumedTokens >= res.Tokens {
		t.Errorf("retry result: %d tokens of which %d resumed; want the clean build's %d, resumed ones > 0 iff documents were resumed (%d)",
			res.Tokens, res.ResumedTokens, cleanRes.Tokens, complete)
	}
	// Stored bytes cover the resumed documents too: the clean build's, which are its chunks'
	// text and float32 vectors as the collection holds them.
	if held := f.storedBytes(t, clean.Collection); cleanRes.StoredBytes != held || res.StoredBytes != cleanRes.StoredBytes {
		t.Errorf("stored bytes: retry %d, clean build %d, the clean collection's text and vectors %d; want all three equal",
			res.StoredBytes, cleanRes.StoredBytes, held)
	}
	got := f.objectsOf(t, f.plan.Collection)
	assertSame(t, "after kill and retry", got, want)
	assertSameIDs(t, got, want, f.plan.Revision, clean.Revision)
	t.Logf("killed with %d (first seen %d) of %d chunks written, %d documents complete and %d partial; the retry embedded %d of %d documents (resumed %d), took %s and left %d chunks, each once",
		killed, at, len(want), complete, partial, res.Documents-res.Resumed, docs, res.Resumed, took.Round(time.Millisecond), len(got))
}

// storedBytes sums a collection's chunk texts (UTF-8 bytes) and float32 vectors (4 bytes per
// dimension), paging with a cursor.
func (f *fixture) storedBytes(t *testing.T, collection string) int64 {
	t.Helper()
	var n int64
	after := ""
	for {
		res, err := f.store.Client().Experimental().Search().WithCollection(collection).WithLimit(100).
			WithAfter(after).WithProperties(vectorstore.PropText).WithMetadata(&graphql.Metadata{ID: true, Vector: true}).Do(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			text, _ := r.Properties[vectorstore.PropText].(string)
			n += int64(len(text) + 4*len(r.Vector))
		}
		if len(res) < 100 {
			return n
		}
		after = res[len(res)-1].ID
	}
}

// completeDocuments counts the documents whose chunks in the plan collection are exactly those
// of the clean build (want), and the documents with some but not all of them.
func completeDocuments(t *testing.T, f *fixture, want map[string][]string) (complete, partial int) {
	t.Helper()
	got := f.objects(t)
	perDoc := map[string][2]int{} // document -> {chunks in want, of them present}
	for k := range want {
		doc := k[:strings.LastIndexByte(k, '#')]
		c := perDoc[doc]
		c[0]++
		if len(got[k]) > 0 {
			c[1]++
		}
		perDoc[doc] = c
	}
	for _, c := range perDoc {
		switch {
		case c[1] == c[0]:
			complete++
		case c[1] > 0:
			partial++
		}
	}
	return complete, partial
}

// completeRecords counts the plan collection's manifest records marked complete.
func completeRecords(t *testing.T, f *fixture) int {
	t.Helper()
	read, err := f.store.ManifestRecords(context.Background(), f.plan.Collection, 0, 1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range read.Records {
		if r.Complete {
			n++
		}
	}
	return n
}

// assertSameIDs fails unless each chunk's object ID is the deterministic ChunkID of its
// revision, document and ordinal (the clean build's, with the clean build's revision).
func assertSameIDs(t *testing.T, got, want map[string][]string, rev, cleanRev string) {
	t.Helper()
	for k, ids := range got {
		i := strings.LastIndexByte(k, '#')
		ord, _ := strconv.Atoi(k[i+1:])
		if id := vectorstore.ChunkID(rev, k[:i], ord).String(); ids[0] != id {
			t.Fatalf("%s has object ID %s, want %s", k, ids[0], id)
		}
		if id := vectorstore.ChunkID(cleanRev, k[:i], ord).String(); want[k][0] != id {
			t.Fatalf("clean build: %s has object ID %s, want %s", k, want[k][0], id)
		}
	}
}

// The result says where the shard's time went: every stage of a build from Markdown files
// took some time, and the stages, timed one after another on one goroutine, add up to at
// most the shard's Seconds.
func TestResultStagesCoverTheShard(t *testing.T) {
	f := newFixture(t, 40)
	res, err := f.run(t, false)
	if err != nil {
		t.Fatal(err)
	}
	st := res.Stages
	if st == nil {
		t.Fatal("no stages in the result")
	}
	for name, s := range map[string]float64{"read": st.Read, "chunk": st.Chunk, "tokenize": st.Tokenize, "inference": st.Inference, "write": st.Write} {
		if s <= 0 {
			t.Errorf("stage %s took %v s, want > 0", name, s)
		}
	}
	// Each stage is rounded to the millisecond: allow half of one per stage.
	if sum := st.Read + st.Chunk + st.Tokenize + st.Inference + st.Write; sum > res.Seconds+0.0025 {
		t.Errorf("stages sum to %.3f s, more than the shard's %.3f s: %+v", sum, res.Seconds, *st)
	}
	t.Logf("%d chunks in %.3f s: %+v", res.Chunks, res.Seconds, *st)
}
