package stage_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/pipeline/extractcache"
	"github.com/ragops/ragops/pipeline/stage"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// archive is the source every download writes: 12 documents, one of them larger than a
// part, and a BEIR file every shard reads.
func archive() map[string]string {
	files := map[string]string{"corpus.jsonl": `{"_id":"d1","text":"een"}` + "\n"}
	for i := range 11 {
		files[fmt.Sprintf("besluiten/b-%02d.md", i)] = fmt.Sprintf("# Besluit %d\n", i)
	}
	files["besluiten/groot.txt"] = strings.Repeat("x", stage.PartBytes+100)
	return files
}

// origin counts downloads; fail makes them fail.
type origin struct {
	downloads atomic.Int64
	fail      error
}

func (o *origin) download(_ context.Context, dir string) error {
	o.downloads.Add(1)
	if o.fail != nil {
		return o.fail
	}
	for name, body := range archive() {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

const shards = 4

func newStage(store stage.Store, run string, shard int) *stage.Stage {
	return &stage.Stage{Store: store, Run: run, Shard: shard, Wait: 10 * time.Minute, Poll: 200 * time.Millisecond,
		Owner: func(rel string) int {
			if strings.HasSuffix(rel, ".jsonl") {
				return stage.AllShards
			}
			for k := range shards {
				if corpus.Shard(rel, k, shards) {
					return k
				}
			}
			return 0
		},
		Select: func(string) bool { return true }}
}

// listing returns the files under dir, slash paths, with their sizes.
func listing(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out = append(out, fmt.Sprintf("%s=%d", filepath.ToSlash(rel), len(b)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// want lists the files shard k needs: its own and the shared BEIR file (all for the lead).
func want(k int) []string {
	var out []string
	for name, body := range archive() {
		if k == 0 || strings.HasSuffix(name, ".jsonl") || corpus.Shard(name, k, shards) {
			out = append(out, fmt.Sprintf("%s=%d", name, len(body)))
		}
	}
	sort.Strings(out)
	return out
}

func newStore(t *testing.T) (stage.Store, *vectorstore.Store, string) {
	t.Helper()
	wv := weaviatetest.Start(t)
	s, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	name, err := vectorstore.ExtractionCacheName("t", "besluiten")
	if err != nil {
		t.Fatal(err)
	}
	return extractcache.Weaviate(s, name), s, name
}

// Issue 51: the lead downloads once and every follower writes exactly its own files and the
// shared BEIR file from the stage (a file over PartBytes in two parts), verified byte for
// byte; a follower whose part is corrupt, one with no lead within its wait, and one whose
// lead failed to download each download from the origin themselves (the last at once, with
// the origin's error).
func TestFollowersReadTheirPartOrFallBackToTheOrigin(t *testing.T) {
	store, s, collection := newStore(t)
	ctx := context.Background()
	o := &origin{}
	// A follower that starts first waits for the lead.
	early := newStage(store, "job-1", 1)
	earlyDir := filepath.Join(t.TempDir(), "http")
	done := make(chan error)
	go func() {
		_, err := early.Fetch(ctx, earlyDir, o.download)
		done <- err
	}()
	lead := newStage(store, "job-1", 0)
	dir := filepath.Join(t.TempDir(), "http")
	if _, err := lead.Fetch(ctx, dir, o.download); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || early.Downloaded {
		t.Errorf("a follower started before the lead: err %v, downloaded %v; want its files from the stage", err, early.Downloaded)
	}
	if got := listing(t, earlyDir); strings.Join(got, " ") != strings.Join(want(1), " ") {
		t.Errorf("early shard 1 has %v, want %v", got, want(1))
	}
	if got := listing(t, dir); strings.Join(got, " ") != strings.Join(want(0), " ") {
		t.Errorf("lead has %v, want the whole archive", got)
	}
	for k := 2; k < shards-1; k++ {
		f := newStage(store, "job-1", k)
		dir := filepath.Join(t.TempDir(), "http")
		listed, err := f.Fetch(ctx, dir, o.download)
		if err != nil {
			t.Fatal(err)
		}
		if len(listed) != 0 {
			t.Errorf("shard %d: listed unread %v, want every file with its bytes", k, listed)
		}
		if got := listing(t, dir); strings.Join(got, " ") != strings.Join(want(k), " ") {
			t.Errorf("shard %d has %v, want %v", k, got, want(k))
		}
		if f.Downloaded || f.Staged == 0 {
			t.Errorf("shard %d: downloaded %v, staged %d files; want its files from the stage", k, f.Downloaded, f.Staged)
		}
	}
	if n := o.downloads.Load(); n != 1 {
		t.Errorf("%d downloads for the lead and %d followers, want 1", n, shards-2)
	}

	// The last follower's first part is overwritten with other bytes: it downloads.
	var corrupted int
	if _, err := s.CollectBlobs(ctx, collection, 0, func(g string) bool {
		if strings.HasSuffix(g, fmt.Sprintf("/job-1/%d", shards-1)) {
			corrupted++
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	last := shards - 1
	var key string
	for name := range archive() {
		if corpus.Shard(name, last, shards) && !strings.HasSuffix(name, ".jsonl") {
			sum := sha256Hex(archive()[name])
			key = fmt.Sprintf("stage/job-1/%d/%s/0", last, sum)
			break
		}
	}
	if corrupted == 0 || key == "" {
		t.Fatalf("nothing staged for shard %d", last)
	}
	if err := store.Put(ctx, vectorstore.Blob{Key: key, Group: "stage/0/job-1/x", Payload: []byte("forged"), Sum: sha256Hex("forged")}); err != nil {
		t.Fatal(err)
	}
	f := newStage(store, "job-1", last)
	fdir := filepath.Join(t.TempDir(), "http")
	if _, err := f.Fetch(ctx, fdir, o.download); err != nil {
		t.Fatal(err)
	}
	if !f.Downloaded || o.downloads.Load() != 2 {
		t.Errorf("a follower with a corrupt part: downloaded %v (%d downloads), want it to download itself", f.Downloaded, o.downloads.Load())
	}
	if got := listing(t, fdir); len(got) != len(archive()) {
		t.Errorf("after its own download the follower has %v", got)
	}

	// No lead: the follower waits Wait, then downloads.
	lonely := newStage(store, "job-2", 1)
	lonely.Wait = time.Second
	if _, err := lonely.Fetch(ctx, filepath.Join(t.TempDir(), "http"), o.download); err != nil || !lonely.Downloaded {
		t.Errorf("a follower without a lead: err %v, downloaded %v; want its own download", err, lonely.Downloaded)
	}

	// The lead's download fails: its followers stop waiting and meet the origin's error.
	broken := &origin{fail: errors.New("fetch https://example.org/a.tar.gz: HTTP 503")}
	if _, err := newStage(store, "job-3", 0).Fetch(ctx, filepath.Join(t.TempDir(), "http"), broken.download); err == nil {
		t.Fatal("the lead's failed download was not an error")
	}
	follower := newStage(store, "job-3", 1)
	follower.Wait = time.Hour
	_, err := follower.Fetch(ctx, filepath.Join(t.TempDir(), "http"), broken.download)
	if err == nil || !strings.Contains(err.Error(), "HTTP 503") || broken.downloads.Load() != 2 {
		t.Errorf("follower of a failed lead: err %v after %d downloads, want the origin's error from its own", err, broken.downloads.Load())
	}
}

// Old stages are collected by the next lead: a group older than MaxAge goes, a fresh one and
// the extraction cache's entries stay.
func TestTheLeadCollectsOldStages(t *testing.T) {
	store, s, collection := newStore(t)
	ctx := context.Background()
	now := time.Now()
	old := fmt.Sprintf("stage/%d/job-0/1", now.Add(-stage.MaxAge-time.Hour).Unix())
	fresh := fmt.Sprintf("stage/%d/job-9/1", now.Add(-time.Hour).Unix())
	for key, group := range map[string]string{"a": old, "b": fresh, "c": "0123456789abcdef"} {
		if err := store.Put(ctx, vectorstore.Blob{Key: key, Group: group, Payload: []byte(key), Sum: sha256Hex(key)}); err != nil {
			t.Fatal(err)
		}
	}
	o := &origin{}
	if _, err := newStage(store, "job-1", 0).Fetch(ctx, filepath.Join(t.TempDir(), "http"), o.download); err != nil {
		t.Fatal(err)
	}
	groups := map[string]bool{}
	if _, err := s.CollectBlobs(ctx, collection, 0, func(g string) bool { groups[g] = true; return true }); err != nil {
		t.Fatal(err)
	}
	if groups[old] || !groups[fresh] || !groups["0123456789abcdef"] {
		t.Errorf("groups after the lead %v; want %s gone, %s and the cache entry kept", groups, old, fresh)
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Issue 51: in a sync the lead stages only the bytes of documents their shard will read; a
// document the lead reports unchanged reaches its shard listed (ID, hash, size) without
// bytes, and shared BEIR files always come whole. The lead asks about the other shards'
// documents a batch at a time (at most Batch files an ask), each once.
func TestASyncStagesOnlyChangedDocuments(t *testing.T) {
	store, _, _ := newStore(t)
	ctx := context.Background()
	o := &origin{}
	changed := ""
	for i := range 11 { // a document of a follower
		if name := fmt.Sprintf("besluiten/b-%02d.md", i); !corpus.Shard(name, 0, shards) {
			changed = name
			break
		}
	}
	lead := newStage(store, "job-1", 0)
	lead.Batch = 3
	asked := map[string]int{}
	lead.Unchanged = func(_ context.Context, hashes map[string]string) map[string]bool {
		if len(hashes) > lead.Batch {
			t.Errorf("asked about %d files at once, want at most %d", len(hashes), lead.Batch)
		}
		out := map[string]bool{}
		for rel, hash := range hashes {
			asked[rel]++
			if hash != sha256Hex(archive()[rel])[:16] {
				t.Errorf("%s: asked with hash %s", rel, hash)
			}
			out[rel] = rel != changed
		}
		return out
	}
	if _, err := lead.Fetch(ctx, filepath.Join(t.TempDir(), "http"), o.download); err != nil {
		t.Fatal(err)
	}
	for name := range archive() {
		want := 1 // a follower's document; the lead's own and shared files are not asked about
		if strings.HasSuffix(name, ".jsonl") || corpus.Shard(name, 0, shards) {
			want = 0
		}
		if asked[name] != want {
			t.Errorf("the lead asked about %s %d times, want %d", name, asked[name], want)
		}
	}
	owner := newStage(store, "", 0).Owner(changed)
	for k := 1; k < shards; k++ {
		f := newStage(store, "job-1", k)
		dir := filepath.Join(t.TempDir(), "http")
		listed, err := f.Fetch(ctx, dir, o.download)
		if err != nil {
			t.Fatal(err)
		}
		var wantFiles []string
		wantListed := map[string]corpus.Listed{}
		for name, body := range archive() {
			switch {
			case strings.HasSuffix(name, ".jsonl") || name == changed && k == owner:
				wantFiles = append(wantFiles, fmt.Sprintf("%s=%d", name, len(body)))
			case corpus.Shard(name, k, shards):
				wantListed[name] = corpus.Listed{ID: name, Hash: sha256Hex(body)[:16], Size: int64(len(body))}
			}
		}
		sort.Strings(wantFiles)
		if got := listing(t, dir); strings.Join(got, " ") != strings.Join(wantFiles, " ") {
			t.Errorf("shard %d has files %v, want %v", k, got, wantFiles)
		}
		if len(listed) != len(wantListed) {
			t.Errorf("shard %d: listed %v, want %v", k, listed, wantListed)
		}
		for _, l := range listed {
			if wantListed[l.ID] != l {
				t.Errorf("shard %d: listed %+v, want %+v", k, l, wantListed[l.ID])
			}
		}
	}
	if o.downloads.Load() != 1 {
		t.Errorf("%d downloads, want 1", o.downloads.Load())
	}
}
