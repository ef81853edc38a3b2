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
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/ragops/ragops/internal/plan"
)

// commitRef matches a ref that may be a commit hash (abbreviated or full, lower-case hex).
var commitRef = regexp.MustCompile(`^[0-9a-f]{4,40}$`)

// fetchGit clones src.Git into dir (emptied first; the .git folder is removed after checkout)
// and returns the source root (dir joined
// with the Git path), the checked-out commit hash (40 hex digits), which it also logs, and
// that commit's committer time.
//
// The ref is looked up among the repository's advertised refs: a branch (refs/heads/<ref>)
// or a tag (refs/tags/<ref>; a full "refs/..." name also works) is cloned shallowly (depth
// 1, that ref only); otherwise a ref of 4 to 40 hex digits is taken as a commit, for which
// the whole repository is fetched and the commit checked out. Credentials for http(s) URLs
// come from $RAGOPS_GIT_USERNAME and $RAGOPS_GIT_PASSWORD (plan.EnvGitUsername,
// plan.EnvGitPassword), sent as HTTP basic auth; ssh:// URLs use the worker's SSH agent.
//
// Errors: an unreachable repository or refused credentials, a ref that is no branch, tag or
// commit (the error names it), a path that escapes the repository or is not a folder, a
// selected file that is a symbolic link to outside the repository.
func fetchGit(ctx context.Context, src plan.Source, dir string) (root, commit string, when time.Time, err error) {
	g := src.Git
	name := redactURL(g.URL)
	ref := g.Ref
	if ref == "" {
		ref = "main"
	}
	var auth transport.AuthMethod
	if user, pass := os.Getenv(plan.EnvGitUsername), os.Getenv(plan.EnvGitPassword); user != "" || pass != "" {
		if !strings.HasPrefix(g.URL, "http://") && !strings.HasPrefix(g.URL, "https://") {
			return "", "", time.Time{}, fmt.Errorf("source %s: $%s/$%s are set but only http(s) URLs take a username and password", name, plan.EnvGitUsername, plan.EnvGitPassword)
		}
		auth = &githttp.BasicAuth{Username: user, Password: pass}
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", "", time.Time{}, err
	}
	refName, err := resolveRef(ctx, g.URL, ref, auth)
	if err != nil {
		return "", "", time.Time{}, fmt.Errorf("source %s: %w", name, err)
	}
	opts := &git.CloneOptions{URL: g.URL, Auth: auth, Tags: git.NoTags}
	isCommit := refName == ""
	if isCommit {
		if !commitRef.MatchString(ref) {
			return "", "", time.Time{}, fmt.Errorf("source %s: ref %q is no branch, tag or commit hash of the repository", name, ref)
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
		return "", "", time.Time{}, fmt.Errorf("source %s: clone ref %q: %w", name, ref, err)
	}
	if isCommit {
		h, err := repo.ResolveRevision(plumbing.Revision(ref))
		if err != nil {
			return "", "", time.Time{}, fmt.Errorf("source %s: ref %q is no branch, tag or commit of the repository: %w", name, ref, err)
		}
		wt, err := repo.Worktree()
		if err != nil {
			return "", "", time.Time{}, err
		}
		if err := wt.Checkout(&git.CheckoutOptions{Hash: *h, Force: true}); err != nil {
			return "", "", time.Time{}, fmt.Errorf("source %s: check out commit %s: %w", name, h, err)
		}
	}
	head, err := repo.Head()
	if err != nil {
		return "", "", time.Time{}, fmt.Errorf("source %s: HEAD after clone: %w", name, err)
	}
	commit = head.Hash().String()
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		return "", "", time.Time{}, fmt.Errorf("source %s: commit %s: %w", name, commit, err)
	}
	when = c.Committer.When
	// The working tree is all a worker reads; without .git, Open cannot list its objects.
	if err := os.RemoveAll(filepath.Join(dir, git.GitDirName)); err != nil {
		return "", "", time.Time{}, err
	}
	slog.Default().InfoContext(ctx, "git source checked out", "url", name, "ref", ref, "commit", commit)

	root, err = gitRoot(dir, g.Path)
	if err != nil {
		return "", "", time.Time{}, fmt.Errorf("source %s: %w", name, err)
	}
	if err := checkLinks(dir, root, src.Include, src.Exclude); err != nil {
		return "", "", time.Time{}, fmt.Errorf("source %s: %w", name, err)
	}
	return root, commit, when, nil
}

// resolveRef lists the refs the repository advertises and returns the full name of ref as a
// branch or tag, or "" when it is neither (it may then be a commit hash).
func resolveRef(ctx context.Context, rawURL, ref string, auth transport.AuthMethod) (plumbing.ReferenceName, error) {
	remote := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{rawURL}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: auth})
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return "", fmt.Errorf("list refs: %w", err)
	}
	candidates := []plumbing.ReferenceName{plumbing.NewBranchReferenceName(ref), plumbing.NewTagReferenceName(ref)}
	if strings.HasPrefix(ref, "refs/") {
		candidates = []plumbing.ReferenceName{plumbing.ReferenceName(ref)}
	}
	for _, c := range candidates {
		for _, r := range refs {
			if r.Name() == c {
				return c, nil
			}
		}
	}
	return "", nil
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
