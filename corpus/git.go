package corpus

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/ragops/ragops/internal/plan"
)

// commitRef matches a ref that may be a commit hash (abbreviated or full, lower-case hex).
var commitRef = regexp.MustCompile(`^[0-9a-f]{4,40}$`)

// gitCheckout is what fetchGit checked out.
type gitCheckout struct {
	// root is the source root: the checkout folder joined with the Git path.
	root string
	// commit is the checked-out commit (40 hex digits); when its committer time.
	commit string
	when   time.Time
	// partial is true when only the commit's trees and the kept files' blobs were fetched
	// (fetchGitPartial); false after a clone.
	partial bool
	// blobs counts the blobs fetched (files and symbolic links; a clone counts its checkout's).
	blobs int
	// deferred lists the kept files whose blobs were not fetched: the GitIndex knew their
	// hash and size; fetch fetches and writes those a walk needs (blobOf maps them to blobs).
	deferred []Listed
	blobOf   map[string]plumbing.Hash
	fetch    func(ctx context.Context, rels []string) (int, error)
}

// GitIndex remembers the raw hash (Document.Hash) and size of Git blobs by blob id, so that a
// pod learns a kept document's hash from its commit's trees without downloading its blob
// (OpenOptions.GitIndex): a sync shard then fetches the blobs of its changed documents only.
// Lookup's ok is false for an unknown, unreadable or unverified entry; Record logs its own
// failures.
type GitIndex interface {
	Lookup(ctx context.Context, blob string) (hash string, size int64, ok bool)
	Record(ctx context.Context, blob, hash string, size int64)
}

// fetchGit checks src.Git out into dir (emptied first; no .git folder is left) and returns the
// source root (dir joined with the Git path), the checked-out commit hash (40 hex digits),
// which it also logs, and that commit's committer time. keep (nil: all) selects the files a
// caller needs by ID (the path relative to the Git path); BEIR files are always fetched.
//
// The ref is looked up among the repository's advertised refs: a branch (refs/heads/<ref>)
// or a tag (refs/tags/<ref>; a full "refs/..." name also works); otherwise a ref of 4 to 40
// hex digits is taken as a commit. When the server allows partial clones (it advertises
// "filter" and "allow-reachable-sha1-in-want", as GitHub, GitLab and git with
// uploadpack.allowFilter and uploadpack.allowReachableSHA1InWant do) and the ref is a branch,
// a tag or a full commit hash, only that commit is fetched (depth 1): with keep set, its
// trees without blobs first, then the blobs of the kept files alone (fetchGitPartial), so each
// shard of a build downloads its own documents (and, with index, of those only the ones
// whose blob the index does not know: the others are fetched when a walk needs them); with
// keep nil, the whole tree in one pack.
// Otherwise a branch or tag is cloned shallowly (depth 1, that ref only) and a commit with the
// whole repository. Credentials for http(s) URLs come from $RAGOPS_GIT_USERNAME and
// $RAGOPS_GIT_PASSWORD (plan.EnvGitUsername, plan.EnvGitPassword), sent as HTTP basic auth;
// ssh:// URLs use the worker's SSH agent.
//
// Errors: an unreachable repository or refused credentials, a ref that is no branch, tag or
// commit (the error names it), a path that escapes the repository or is not a folder, a
// selected file that is a symbolic link to outside the repository.
func fetchGit(ctx context.Context, src plan.Source, dir string, keep func(id string) bool, index GitIndex) (gitCheckout, error) {
	g := src.Git
	name := redactURL(g.URL)
	ref := g.Ref
	if ref == "" {
		ref = "main"
	}
	var auth transport.AuthMethod
	if user, pass := os.Getenv(plan.EnvGitUsername), os.Getenv(plan.EnvGitPassword); user != "" || pass != "" {
		if !strings.HasPrefix(g.URL, "http://") && !strings.HasPrefix(g.URL, "https://") {
			return gitCheckout{}, fmt.Errorf("source %s: $%s/$%s are set but only http(s) URLs take a username and password", name, plan.EnvGitUsername, plan.EnvGitPassword)
		}
		auth = &githttp.BasicAuth{Username: user, Password: pass}
	}
	if err := os.RemoveAll(dir); err != nil {
		return gitCheckout{}, err
	}
	adv, err := advertisedRefs(ctx, g.URL, auth)
	if err != nil {
		return gitCheckout{}, fmt.Errorf("source %s: list refs: %w", name, err)
	}
	refName := resolveRef(adv, ref)
	var out gitCheckout
	if want, ok := partialWant(adv, refName, ref); ok {
		out, err = fetchGitPartial(ctx, src, dir, auth, want, keep, index)
	} else {
		out, err = cloneGit(ctx, src, dir, auth, refName)
	}
	if err != nil {
		return gitCheckout{}, err
	}
	slog.Default().InfoContext(ctx, "git source checked out", "url", name, "ref", ref, "commit", out.commit, "partial", out.partial, "blobs", out.blobs, "deferred", len(out.deferred))
	return out, nil
}

// cloneGit clones src.Git at refName (a branch or tag; "" for a commit hash, then the whole
// repository) into dir, removes the .git folder and checks the source's links (see fetchGit).
func cloneGit(ctx context.Context, src plan.Source, dir string, auth transport.AuthMethod, refName plumbing.ReferenceName) (gitCheckout, error) {
	g := src.Git
	name := redactURL(g.URL)
	ref := g.Ref
	if ref == "" {
		ref = "main"
	}
	opts := &git.CloneOptions{URL: g.URL, Auth: auth, Tags: git.NoTags}
	isCommit := refName == ""
	if isCommit {
		if !commitRef.MatchString(ref) {
			return gitCheckout{}, fmt.Errorf("source %s: ref %q is no branch, tag or commit hash of the repository", name, ref)
		}
		opts.NoCheckout = true
		opts.Tags = git.AllTags
	} else {
		opts.ReferenceName = refName
		opts.SingleBranch = true
		opts.Depth = 1
	}
	repo, err := git.PlainCloneContext(ctx, dir, false, opts)
	if err != nil {
		return gitCheckout{}, fmt.Errorf("source %s: clone ref %q: %w", name, ref, err)
	}
	if isCommit {
		h, err := repo.ResolveRevision(plumbing.Revision(ref))
		if err != nil {
			return gitCheckout{}, fmt.Errorf("source %s: ref %q is no branch, tag or commit of the repository: %w", name, ref, err)
		}
		wt, err := repo.Worktree()
		if err != nil {
			return gitCheckout{}, err
		}
		if err := wt.Checkout(&git.CheckoutOptions{Hash: *h, Force: true}); err != nil {
			return gitCheckout{}, fmt.Errorf("source %s: check out commit %s: %w", name, h, err)
		}
	}
	head, err := repo.Head()
	if err != nil {
		return gitCheckout{}, fmt.Errorf("source %s: HEAD after clone: %w", name, err)
	}
	out := gitCheckout{commit: head.Hash().String()}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		return gitCheckout{}, fmt.Errorf("source %s: commit %s: %w", name, out.commit, err)
	}
	out.when = c.Committer.When
	if objs, err := repo.BlobObjects(); err == nil {
		_ = objs.ForEach(func(*object.Blob) error { out.blobs++; return nil })
	}
	// The working tree is all a worker reads; without .git, Open cannot list its objects.
	if err := os.RemoveAll(filepath.Join(dir, git.GitDirName)); err != nil {
		return gitCheckout{}, err
	}
	if out.root, err = gitRoot(dir, g.Path); err != nil {
		return gitCheckout{}, fmt.Errorf("source %s: %w", name, err)
	}
	if err := checkLinks(dir, out.root, src.Include, src.Exclude); err != nil {
		return gitCheckout{}, fmt.Errorf("source %s: %w", name, err)
	}
	return out, nil
}

// advertisedRefs lists the refs (and capabilities) the repository advertises to a fetch; an
// empty repository gives an empty list (its clone then fails naming it).
func advertisedRefs(ctx context.Context, rawURL string, auth transport.AuthMethod) (*packp.AdvRefs, error) {
	sess, err := uploadPackSession(rawURL, auth)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return packp.NewAdvRefs(), nil
	}
	return adv, err
}

// resolveRef returns the full name of ref among the advertised refs as a branch or tag, or ""
// when it is neither (it may then be a commit hash).
func resolveRef(adv *packp.AdvRefs, ref string) plumbing.ReferenceName {
	candidates := []plumbing.ReferenceName{plumbing.NewBranchReferenceName(ref), plumbing.NewTagReferenceName(ref)}
	if strings.HasPrefix(ref, "refs/") {
		candidates = []plumbing.ReferenceName{plumbing.ReferenceName(ref)}
	}
	for _, c := range candidates {
		if _, ok := adv.References[c.String()]; ok {
			return c
		}
	}
	return ""
}

// gitRoot joins the clone folder with the source path, refusing a path that escapes the
// repository (by "..", an absolute path or a symbolic link) or that is not a folder.
func gitRoot(dir, p string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(strings.TrimPrefix(p, "/")))
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("path %q escapes the repository", p)
	}
	root := filepath.Join(dir, clean)
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", p, err)
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	if !inside(realDir, real) {
		return "", fmt.Errorf("path %q escapes the repository through a symbolic link", p)
	}
	info, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("path %q: %w", p, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("path %q is not a folder of the repository", p)
	}
	return root, nil
}

// checkLinks refuses selected files under root that are symbolic links resolving outside
// dir (Open follows links to files, so such a link would read from the worker's disk) or to
// nothing. go-git checks out an absolute link target below the checkout, where it is
// usually missing.
func checkLinks(dir, root string, include, exclude []string) error {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if ok, err := Selected(rel, include, exclude); err != nil || !ok {
			return err
		}
		target, err := os.Readlink(p)
		if err != nil {
			return fmt.Errorf("symbolic link %s: %w", rel, err)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		if !inside(realDir, filepath.Clean(target)) && !inside(dir, filepath.Clean(target)) {
			return fmt.Errorf("symbolic link %s points outside the repository", rel)
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("symbolic link %s: its target is not in the repository: %w", rel, err)
		}
		if !inside(realDir, real) {
			return fmt.Errorf("symbolic link %s points outside the repository", rel)
		}
		return nil
	})
}

// inside reports whether p is dir or below it (both cleaned, absolute).
func inside(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// redactURL hides a password in a URL for messages.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return raw
}
