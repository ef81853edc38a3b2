package build

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/vectorstore"
)

// gitServer serves the repository at dir over smart HTTP (git http-backend), allowing partial
// clones, and counts the objects of the packs it sends.
func gitServer(t *testing.T, dir string) (string, *atomic.Int64) {
	t.Helper()
	gitExe, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not on PATH")
	}
	out, err := exec.Command(gitExe, "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git-http-backend not installed: %v", err)
	}
	for _, kv := range [][2]string{{"uploadpack.allowFilter", "true"}, {"uploadpack.allowReachableSHA1InWant", "true"}} {
		if out, err := exec.Command(gitExe, "-C", dir, "config", kv[0], kv[1]).CombinedOutput(); err != nil {
			t.Fatalf("git config: %v: %s", err, out)
		}
	}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(dir), "GIT_HTTP_EXPORT_ALL=1"}}
	var objects atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if i := bytes.Index(body, []byte("PACK\x00\x00\x00\x02")); i >= 0 && i+12 <= len(body) {
			objects.Add(int64(binary.BigEndian.Uint32(body[i+8 : i+12])))
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/" + filepath.Base(dir), &objects
}

// Issue 51, Git fetched once per build: the shards of a build of a Git Corpus fetch the
// pinned commit's trees and their own blobs; in a sync after one document changed, a shard
// that does not collect the extraction cache learns its other documents' hashes from the
// cache's Git index and downloads the changed blob alone (or none when the change is not its).
func TestGitShardsSyncFetchOnlyChangedBlobs(t *testing.T) {
	f := newFixture(t, 24)
	dir := filepath.Join(t.TempDir(), "besluiten")
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	commit := func() plumbing.Hash {
		t.Helper()
		entries, _ := os.ReadDir(f.dir)
		for _, e := range entries {
			body, err := os.ReadFile(filepath.Join(f.dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "docs", e.Name()), body, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := wt.Add("docs/" + e.Name()); err != nil {
				t.Fatal(err)
			}
		}
		h, err := wt.Commit("c", &git.CommitOptions{Author: &object.Signature{Name: "T", Email: "t@example.com", When: time.Now()}})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	first := commit()
	url, objects := gitServer(t, dir)
	cache, err := vectorstore.ExtractionCacheName("t", "besluiten")
	if err != nil {
		t.Fatal(err)
	}
	p := f.plan
	p.Shards, p.ExtractionCache = 2, cache
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	run := func(c plumbing.Hash, incremental bool) (got [2]int64, unchanged, deleted int64) {
		t.Helper()
		p := p
		p.Incremental = incremental
		p.Source = plan.Source{Git: &ragopsv1alpha1.GitSource{URL: url, Ref: c.String(), Path: "docs"}}
		for shard := range p.Shards {
			before := objects.Load()
			res, err := Run(context.Background(), log, p, Options{Shard: shard})
			if err != nil {
				t.Fatalf("shard %d: %v", shard, err)
			}
			got[shard] = objects.Load() - before
			unchanged += res.Unchanged
			deleted += res.Deleted
		}
		return got, unchanged, deleted
	}
	own := 0
	for i := range 24 {
		if corpus.Shard(docName(i), 1, 2) {
			own++
		}
	}
	build, _, _ := run(first, false)
	t.Logf("build: shard 0 got %d objects, shard 1 %d (%d own documents of 24)", build[0], build[1], own)
	if build[1] > int64(3+own) {
		t.Errorf("build: shard 1 got %d objects, want at most the commit, 2 trees and its %d blobs", build[1], own)
	}
	changed := -1
	for i := range 24 {
		if corpus.Shard(docName(i), 1, 2) {
			changed = i
			break
		}
	}
	writeDoc(t, f.dir, changed, "# Besluit\n\nDe raad herziet het besluit.")
	second := commit()
	sync, unchanged, deleted := run(second, true)
	t.Logf("sync of 1 changed document: shard 0 got %d objects, shard 1 %d", sync[0], sync[1])
	if sync[1] > 4 {
		t.Errorf("sync: shard 1 got %d objects, want the commit, 2 trees and the changed blob", sync[1])
	}
	if unchanged != 23 || deleted != 0 {
		t.Errorf("sync: %d unchanged, %d deleted; want 23 and 0", unchanged, deleted)
	}
}
