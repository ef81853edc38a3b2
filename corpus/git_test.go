package corpus

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/reader"
)

// requireGit skips (or, with RAGOPS_REQUIRE_ALL=1, fails) when the git command is missing:
// go-git's file:// transport runs git-upload-pack to serve the test repositories.
func requireGit(t *testing.T) string {
	t.Helper()
	exe, err := exec.LookPath("git")
	if err != nil {
		msg := "git is not on PATH (install git; file:// clones run git-upload-pack)"
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return exe
}

// testRepo is a repository made with go-git: on branch main, commit 1 (tagged v1, annotated)
// then commit 2; branch feature adds commit 3 on top of commit 2.
type testRepo struct {
	dir                       string
	commit1, commit2, commit3 plumbing.Hash
}

func makeRepo(t *testing.T) testRepo {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	commit := func(msg string, files map[string]string, remove ...string) plumbing.Hash {
		for name, body := range files {
			if err := writeFile(filepath.Join(dir, filepath.FromSlash(name)), strings.NewReader(body)); err != nil {
				t.Fatal(err)
			}
			if _, err := wt.Add(name); err != nil {
				t.Fatal(err)
			}
		}
		for _, name := range remove {
			if _, err := wt.Remove(name); err != nil {
				t.Fatal(err)
			}
		}
		when = when.Add(time.Minute)
		h, err := wt.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "Test", Email: "test@example.com", When: when}})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	r := testRepo{dir: dir}
	r.commit1 = commit("first", map[string]string{
		"README.md":      "# Repository\n",
		"docs/a.md":      "# A\n\nVersion one.\n",
		"docs/sub/b.txt": "Plain text, first version.\n",
		"docs/old.md":    "Removed in the second commit.\n",
	})
	if _, err := repo.CreateTag("v1", r.commit1, &git.CreateTagOptions{
		Message: "release one", Tagger: &object.Signature{Name: "Test", Email: "test@example.com", When: when},
	}); err != nil {
		t.Fatal(err)
	}
	r.commit2 = commit("second", map[string]string{
		"docs/a.md": "# A\n\nVersion two.\n",
		"docs/c.md": "# C\n\nNew in the second commit.\n",
	}, "docs/old.md")
	if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName("feature"), Create: true}); err != nil {
		t.Fatal(err)
	}
	r.commit3 = commit("third", map[string]string{"docs/feature.md": "# Feature\n"})
	if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName("main")}); err != nil {
		t.Fatal(err)
	}
	return r
}

// files lists the files under root (slash paths) with their contents.
func files(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGitClonesBranchTagAndCommit checks out each kind of ref from a server that refuses
// partial clones (then cloned) and from one that serves them (then fetched at depth 1: issue
// 51), with the same files.
func TestGitClonesBranchTagAndCommit(t *testing.T) {
	requireGit(t)
	for _, partial := range []bool{false, true} {
		t.Run(fmt.Sprintf("partial=%v", partial), func(t *testing.T) { testGitClonesBranchTagAndCommit(t, partial) })
	}
}

func testGitClonesBranchTagAndCommit(t *testing.T, partial bool) {
	r := makeRepo(t)
	if partial {
		allowPartialClone(t, r.dir)
	}
	url := "file://" + r.dir
	cases := []struct {
		ref    string
		commit plumbing.Hash
		want   map[string]string // files under docs/
	}{
		{"main", r.commit2, map[string]string{"a.md": "# A\n\nVersion two.\n", "c.md": "# C\n\nNew in the second commit.\n", "sub/b.txt": "Plain text, first version.\n"}},
		{"feature", r.commit3, map[string]string{"a.md": "# A\n\nVersion two.\n", "c.md": "# C\n\nNew in the second commit.\n", "sub/b.txt": "Plain text, first version.\n", "feature.md": "# Feature\n"}},
		{"v1", r.commit1, map[string]string{"a.md": "# A\n\nVersion one.\n", "old.md": "Removed in the second commit.\n", "sub/b.txt": "Plain text, first version.\n"}},
		{"refs/tags/v1", r.commit1, nil},
		{r.commit1.String(), r.commit1, map[string]string{"a.md": "# A\n\nVersion one.\n", "old.md": "Removed in the second commit.\n", "sub/b.txt": "Plain text, first version.\n"}},
		{r.commit1.String()[:8], r.commit1, nil},
		{r.commit3.String(), r.commit3, nil}, // only on branch feature
	}
	for _, c := range cases {
		work := t.TempDir()
		src := plan.Source{Git: &ragopsv1alpha1.GitSource{URL: url, Ref: c.ref, Path: "docs"}}
		co, err := fetchGit(context.Background(), src, filepath.Join(work, "git"), nil, nil)
		if err != nil {
			t.Errorf("ref %s: %v", c.ref, err)
			continue
		}
		root, commit := co.root, co.commit
		// An abbreviated hash cannot be asked for: it is cloned.
		if want := partial && len(c.ref) != 8; co.partial != want {
			t.Errorf("ref %s: partial %v, want %v", c.ref, co.partial, want)
		}
		if commit != c.commit.String() {
			t.Errorf("ref %s: commit %s, want %s", c.ref, commit, c.commit)
		}
		if root != filepath.Join(work, "git", "docs") {
			t.Errorf("ref %s: root %s", c.ref, root)
		}
		if _, err := os.Stat(filepath.Join(work, "git", ".git")); !os.IsNotExist(err) {
			t.Errorf("ref %s: .git left in the checkout (err %v)", c.ref, err)
		}
		if c.want == nil {
			continue
		}
		got := files(t, root)
		if len(got) != len(c.want) {
			t.Errorf("ref %s: files %v, want %v", c.ref, got, c.want)
		}
		for name, body := range c.want {
			if got[name] != body {
				t.Errorf("ref %s: %s = %q, want %q", c.ref, name, got[name], body)
			}
		}
	}
}

func TestGitOpenWalksTheCheckout(t *testing.T) {
	requireGit(t)
	r := makeRepo(t)
	work := t.TempDir()
	src := plan.Source{
		Git:     &ragopsv1alpha1.GitSource{URL: "file://" + r.dir, Ref: "main", Path: "docs"},
		Include: []string{"**/*.md"},
	}
	s, err := Open(context.Background(), src, work, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Commit() != r.commit2.String() {
		t.Errorf("Commit() = %q, want main's head %s", s.Commit(), r.commit2)
	}
	var docs []Document
	err = s.Walk(context.Background(), true, nil, func(d Document) error { docs = append(docs, d); return nil },
		func(sk Skipped) { t.Errorf("skipped %+v", sk) })
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs[0].ID != "a.md" || docs[1].ID != "c.md" {
		t.Fatalf("documents %+v, want a.md and c.md", docs)
	}
	if docs[0].Hash != hashOf([]byte("# A\n\nVersion two.\n")) {
		t.Errorf("a.md hash %s differs from the committed bytes", docs[0].Hash)
	}
	// Opening the tag gives another revision; opening main again the same one.
	rev := Revision(docs)
	revOf := func(ref string) string {
		t.Helper()
		src := src
		src.Git = &ragopsv1alpha1.GitSource{URL: "file://" + r.dir, Ref: ref, Path: "docs"}
		s, err := Open(context.Background(), src, work, nil)
		if err != nil {
			t.Fatal(err)
		}
		var docs []Document
		if err := s.Walk(context.Background(), true, nil, func(d Document) error { docs = append(docs, d); return nil }, func(Skipped) {}); err != nil {
			t.Fatal(err)
		}
		return Revision(docs)
	}
	if again := revOf("main"); again != rev {
		t.Errorf("revision of main %s then %s", rev, again)
	}
	if tag := revOf("v1"); tag == rev {
		t.Errorf("tag v1 has the revision of main (%s)", rev)
	}
}

func TestGitRefusesBadRefsAndPaths(t *testing.T) {
	requireGit(t)
	for _, partial := range []bool{false, true} {
		t.Run(fmt.Sprintf("partial=%v", partial), func(t *testing.T) { testGitRefusesBadRefsAndPaths(t, partial) })
	}
}

func testGitRefusesBadRefsAndPaths(t *testing.T, partial bool) {
	r := makeRepo(t)
	if partial {
		allowPartialClone(t, r.dir)
	}
	url := "file://" + r.dir
	for _, c := range []struct {
		ref, path, want string
	}{
		{"nope", "", `"nope"`},
		{"deadbeef", "", `"deadbeef"`},
		{"0123456789012345678901234567890123456789", "", `"0123456789012345678901234567890123456789"`},
		{"main", "../outside", "escapes the repository"},
		{"main", "docs/../../outside", "escapes the repository"},
		{"main", "README.md", "not a folder"},
		{"main", "missing", `"missing"`},
	} {
		src := plan.Source{Git: &ragopsv1alpha1.GitSource{URL: url, Ref: c.ref, Path: c.path}}
		_, err := Open(context.Background(), src, t.TempDir(), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ref %q path %q: err %v, want one containing %s", c.ref, c.path, err, c.want)
		}
	}
	_, err := Open(context.Background(), plan.Source{Git: &ragopsv1alpha1.GitSource{URL: "file://" + t.TempDir() + "/none", Ref: "main"}}, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "/none") {
		t.Errorf("missing repository: err %v, want one naming it", err)
	}
}

func TestGitRefusesLinksOutOfTheRepository(t *testing.T) {
	requireGit(t)
	for _, partial := range []bool{false, true} {
		t.Run(fmt.Sprintf("partial=%v", partial), func(t *testing.T) { testGitRefusesLinksOutOfTheRepository(t, partial) })
	}
}

func testGitRefusesLinksOutOfTheRepository(t *testing.T, partial bool) {
	dir := t.TempDir()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret.md")
	if err := os.WriteFile(secret, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.md"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, secret)
	if err != nil {
		t.Fatal(err)
	}
	links := map[string]string{"alias.md": "ok.md", "leak.md": rel, "abs.md": secret}
	wt, _ := repo.Worktree()
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"ok.md", "alias.md", "leak.md", "abs.md"} {
		if _, err := wt.Add(name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wt.Commit("links", &git.CommitOptions{Author: &object.Signature{Name: "T", Email: "t@example.com", When: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if partial {
		allowPartialClone(t, dir)
	}
	// go-git may check out an absolute target below the checkout (then it is missing).
	for _, c := range []struct{ exclude, want string }{
		{"abs.md", "symbolic link leak.md points outside the repository"},
		{"leak.md", "symbolic link abs.md"},
	} {
		src := plan.Source{Git: &ragopsv1alpha1.GitSource{URL: "file://" + dir, Ref: "main"}, Exclude: []string{c.exclude}}
		_, err = Open(context.Background(), src, t.TempDir(), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err %v, want %q", err, c.want)
		}
	}
	src := plan.Source{Git: &ragopsv1alpha1.GitSource{URL: "file://" + dir, Ref: "main"}}
	// Excluding the links makes the rest readable; the link inside the repository is kept.
	src.Exclude = []string{"leak.md", "abs.md"}
	s, err := Open(context.Background(), src, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	if err := s.Walk(context.Background(), true, nil, func(d Document) error { ids = append(ids, d.ID); return nil }, func(Skipped) {}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "alias.md,ok.md" {
		t.Errorf("documents %v, want alias.md,ok.md", ids)
	}
}

// TestGitHTTPBasicAuth serves the repository over smart HTTP with git http-backend (CGI)
// behind a basic-auth check, the way an https:// source with a secretRef is read.
func TestGitHTTPBasicAuth(t *testing.T) {
	gitExe := requireGit(t)
	out, err := exec.Command(gitExe, "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git-http-backend not installed: %v", err)
	}
	r := makeRepo(t)
	cgiHandler := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(r.dir), "GIT_HTTP_EXPORT_ALL=1"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); !ok || u != "reader" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		cgiHandler.ServeHTTP(w, req)
	}))
	defer srv.Close()
	src := plan.Source{Git: &ragopsv1alpha1.GitSource{URL: srv.URL + "/" + filepath.Base(r.dir), Ref: "v1", Path: "docs"}}

	t.Setenv(plan.EnvGitUsername, "reader")
	t.Setenv(plan.EnvGitPassword, "wrong")
	if _, err := Open(context.Background(), src, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "authentication") {
		t.Errorf("wrong password: err %v, want an authentication error", err)
	}
	t.Setenv(plan.EnvGitPassword, "s3cret")
	work := t.TempDir()
	co, err := fetchGit(context.Background(), src, filepath.Join(work, "git"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	root, commit := co.root, co.commit
	if commit != r.commit1.String() {
		t.Errorf("commit %s, want %s", commit, r.commit1)
	}
	if got := files(t, root)["a.md"]; got != "# A\n\nVersion one.\n" {
		t.Errorf("a.md %q, want version one", got)
	}
}

// allowPartialClone lets the repository at dir serve partial clones (the "filter" and
// "allow-reachable-sha1-in-want" capabilities), as GitHub and GitLab do.
func allowPartialClone(t *testing.T, dir string) {
	t.Helper()
	for _, kv := range [][2]string{{"uploadpack.allowFilter", "true"}, {"uploadpack.allowReachableSHA1InWant", "true"}} {
		if out, err := exec.Command("git", "-C", dir, "config", kv[0], kv[1]).CombinedOutput(); err != nil {
			t.Fatalf("git config %s: %v: %s", kv[0], err, out)
		}
	}
}

// packCounter counts what a Git server sent in answer to fetches (POST git-upload-pack).
type packCounter struct {
	mu      sync.Mutex
	fetches int   // upload-pack requests
	bytes   int64 // bytes of their responses
	objects int64 // objects in the packs sent (from each pack's header)
}

func (c *packCounter) snapshot() packCounter {
	c.mu.Lock()
	defer c.mu.Unlock()
	return packCounter{fetches: c.fetches, bytes: c.bytes, objects: c.objects}
}

// countingWriter copies an upload-pack response through, keeping its bytes.
type countingWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}

// gitHTTPServer serves the repositories beside repoDir over smart HTTP with git
// http-backend (CGI) and counts the packs it sends; it returns repoDir's URL.
func gitHTTPServer(t *testing.T, repoDir string) (string, *packCounter) {
	t.Helper()
	gitExe := requireGit(t)
	out, err := exec.Command(gitExe, "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Skipf("git-http-backend not installed: %v", err)
	}
	cgiHandler := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(repoDir), "GIT_HTTP_EXPORT_ALL=1"}}
	c := &packCounter{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/git-upload-pack") {
			cgiHandler.ServeHTTP(w, req)
			return
		}
		cw := &countingWriter{ResponseWriter: w}
		cgiHandler.ServeHTTP(cw, req)
		body := cw.buf.Bytes()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.fetches++
		c.bytes += int64(len(body))
		// The pack's header ("PACK", version 2, object count) opens its first packet.
		if i := bytes.Index(body, []byte("PACK\x00\x00\x00\x02")); i >= 0 && i+12 <= len(body) {
			c.objects += int64(binary.BigEndian.Uint32(body[i+8 : i+12]))
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/" + filepath.Base(repoDir), c
}

// Issue 51: a Git source is fetched once per build, not once per pod. Each shard of a build
// fetches the commit's trees and then the blobs of its own documents alone, so the S shards
// together download each blob once; a pod that keeps no document downloads no blob.
func TestGitShardsFetchOnlyTheirOwnBlobs(t *testing.T) {
	requireGit(t)
	dir := filepath.Join(t.TempDir(), "archive")
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	const docs, size, shards = 12, 32 << 10, 4
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[string]string{} // ID -> hash
	for i := range docs {
		body := make([]byte, size) // random bytes: a pack cannot compress them
		for j := range body {
			body[j] = byte(rng.Uint32())
		}
		name := fmt.Sprintf("docs/doc-%02d.txt", i)
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(name)), bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			t.Fatal(err)
		}
		want[strings.TrimPrefix(name, "docs/")] = hashOf(body)
	}
	head, err := wt.Commit("archive", &git.CommitOptions{Author: &object.Signature{Name: "T", Email: "t@example.com", When: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	allowPartialClone(t, dir)
	url, count := gitHTTPServer(t, dir)
	// A build pins the commit the scan counted (workload.Embed).
	src := plan.Source{Git: &ragopsv1alpha1.GitSource{URL: url, Ref: head.String(), Path: "docs"}}

	got := map[string]string{}
	for k := range shards {
		before := count.snapshot()
		mine := func(id string) bool { return Shard(id, k, shards) }
		s, err := OpenWith(context.Background(), src, t.TempDir(), nil, OpenOptions{Keep: mine})
		if err != nil {
			t.Fatal(err)
		}
		own := 0
		if err := s.Walk(context.Background(), true, mine, func(d Document) error {
			own++
			got[d.ID] = d.Hash
			return nil
		}, func(sk Skipped) { t.Errorf("skipped %+v", sk) }); err != nil {
			t.Fatal(err)
		}
		after := count.snapshot()
		t.Logf("shard %d of %d: %d own documents; %d fetches, %d objects, %d bytes", k, shards, own, after.fetches-before.fetches, after.objects-before.objects, after.bytes-before.bytes)
		// The commit and its two trees, then the shard's own blobs; a little framing.
		if objects := after.objects - before.objects; objects > int64(3+own) {
			t.Errorf("shard %d of %d: the server sent %d objects for %d own documents, want at most %d (commit, 2 trees, own blobs)", k, shards, objects, own, 3+own)
		}
		if b := after.bytes - before.bytes; b > int64(own*size+8<<10) {
			t.Errorf("shard %d of %d: the server sent %d bytes for %d own documents of %d bytes", k, shards, b, own, size)
		}
	}
	if len(got) != docs {
		t.Errorf("the shards together walked %d documents, want %d", len(got), docs)
	}
	for id, h := range want {
		if got[id] != h {
			t.Errorf("%s: hash %q, want %q (the committed bytes)", id, got[id], h)
		}
	}
	// Every blob once in all: at most one copy of the documents, plus the trees.
	if total := count.snapshot(); total.bytes > int64(docs*size+shards*8<<10) {
		t.Errorf("%d shards downloaded %d bytes in all for %d bytes of documents", shards, total.bytes, docs*size)
	}

	// A pod that keeps none of the documents downloads no blob.
	before := count.snapshot()
	if _, err := OpenWith(context.Background(), src, t.TempDir(), nil, OpenOptions{Keep: func(string) bool { return false }}); err != nil {
		t.Fatal(err)
	}
	if after := count.snapshot(); after.objects-before.objects > 3 || after.bytes-before.bytes > 8<<10 {
		t.Errorf("a pod keeping nothing got %d objects, %d bytes; want the commit and trees only", after.objects-before.objects, after.bytes-before.bytes)
	}
}

// anyReader reads any bytes as an empty document.
type anyReader struct{}

func (anyReader) Read(context.Context, []byte) (reader.Document, error) {
	return reader.Document{}, nil
}

// mapIndex is a GitIndex in memory.
type mapIndex struct {
	mu sync.Mutex
	m  map[string]Listed
}

func (x *mapIndex) Lookup(_ context.Context, blob string) (string, int64, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	l, ok := x.m[blob]
	return l.Hash, l.Size, ok
}

func (x *mapIndex) Record(_ context.Context, blob, hash string, size int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil {
		x.m = map[string]Listed{}
	}
	x.m[blob] = Listed{Hash: hash, Size: size}
}

// Issue 51: with a GitIndex (blob id -> raw hash), a shard learns its documents' hashes from
// the commit's trees: a sync after one document changed downloads that document's blob alone
// and walks the others unread; a walk that needs every document fetches the rest in one pack.
func TestGitSyncFetchesOnlyChangedBlobs(t *testing.T) {
	requireGit(t)
	dir := filepath.Join(t.TempDir(), "archive")
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	const docs, size, shards, shard = 12, 32 << 10, 2, 1
	rng := rand.New(rand.NewPCG(3, 4))
	random := func() []byte {
		b := make([]byte, size)
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		return b
	}
	commit := func(files map[string][]byte) plumbing.Hash {
		t.Helper()
		for name, body := range files {
			if err := writeFile(filepath.Join(dir, filepath.FromSlash(name)), bytes.NewReader(body)); err != nil {
				t.Fatal(err)
			}
			if _, err := wt.Add(name); err != nil {
				t.Fatal(err)
			}
		}
		h, err := wt.Commit("c", &git.CommitOptions{Author: &object.Signature{Name: "T", Email: "t@example.com", When: time.Now()}})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	files := map[string][]byte{}
	var changed string
	for i := range docs {
		name := fmt.Sprintf("docs/doc-%02d.txt", i)
		files[name] = random()
		if changed == "" && Shard(strings.TrimPrefix(name, "docs/"), shard, shards) {
			changed = strings.TrimPrefix(name, "docs/")
		}
	}
	first := commit(files)
	allowPartialClone(t, dir)
	url, count := gitHTTPServer(t, dir)
	mine := func(id string) bool { return Shard(id, shard, shards) }
	index := &mapIndex{}
	open := func(c plumbing.Hash) *Source {
		t.Helper()
		src := plan.Source{Git: &ragopsv1alpha1.GitSource{URL: url, Ref: c.String(), Path: "docs"}}
		s, err := OpenWith(context.Background(), src, t.TempDir(), anyReader{}, OpenOptions{Keep: mine, GitIndex: index})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// walk walks the shard with need and returns each document's hash and whether it was read.
	walk := func(s *Source, need func(Document) bool) (map[string]string, map[string]bool) {
		t.Helper()
		hashes, read := map[string]string{}, map[string]bool{}
		err := s.walk(context.Background(), false, mine, need, func(d Document) error {
			hashes[d.ID], read[d.ID] = d.Hash, d.Read || need(d)
			return nil
		}, func(sk Skipped) { t.Errorf("skipped %+v", sk) })
		if err != nil {
			t.Fatal(err)
		}
		return hashes, read
	}
	all := func(Document) bool { return true }

	before, _ := walk(open(first), all)
	own := len(before)
	if own == 0 || len(index.m) != own {
		t.Fatalf("first walk: %d own documents, %d indexed", own, len(index.m))
	}
	files = map[string][]byte{"docs/" + changed: random()}
	second := commit(files)

	snap := count.snapshot()
	s := open(second)
	after, read := walk(s, func(d Document) bool { return before[d.ID] != d.Hash })
	got := count.snapshot()
	t.Logf("sync of %d own documents, 1 changed: %d fetches, %d objects, %d bytes", own, got.fetches-snap.fetches, got.objects-snap.objects, got.bytes-snap.bytes)
	if objects := got.objects - snap.objects; objects > 4 { // commit, 2 trees, 1 blob
		t.Errorf("the sync got %d objects, want the commit, its trees and the changed blob", objects)
	}
	if b := got.bytes - snap.bytes; b > size+8<<10 {
		t.Errorf("the sync got %d bytes, want about one blob of %d", b, size)
	}
	if len(after) != own || after[changed] != hashOf(files["docs/"+changed]) {
		t.Errorf("the sync walked %d documents (want %d), %s hash %s", len(after), own, changed, after[changed])
	}
	for id, h := range after {
		if id != changed && (h != before[id] || read[id]) {
			t.Errorf("%s: hash %s (was %s), read %v; want it unchanged and unread", id, h, before[id], read[id])
		}
	}
	// A walk that needs every document gets the deferred blobs in one more pack.
	snap = count.snapshot()
	full, _ := walk(s, all)
	got = count.snapshot()
	if got.fetches-snap.fetches != 1 || got.objects-snap.objects != int64(own-1) || len(full) != own {
		t.Errorf("a full walk: %d fetches, %d objects, %d documents; want 1 pack of the %d deferred blobs", got.fetches-snap.fetches, got.objects-snap.objects, len(full), own-1)
	}
	for id, h := range full {
		if want := hashOf(map[bool][]byte{true: files["docs/"+id]}[id == changed]); id == changed && h != want || id != changed && h != before[id] {
			t.Errorf("%s: hash %s after the full walk", id, h)
		}
	}
}
