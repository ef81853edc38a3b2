package corpus

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage"

	"github.com/ragops/ragops/internal/plan"
)

// Why a partial clone, and not a shared copy: each pod of a build (the scan, every shard, the
// estimate) reaches the repository itself, so a stage every pod could read would be one more
// thing to run or to size. A partial clone instead lets the Git server send each pod only its
// part: the commit's trees (paths and blob ids, a few bytes a file) and then the blobs of the
// shard's own files. Across the S shards of a build the blobs are downloaded once in all, not
// S times; a pod's scratch volume holds its own files only. The tree gives each file's blob
// id without its bytes: with a GitIndex (blob id -> raw hash, kept by the build in the
// extraction cache collection) a sync shard knows its unchanged documents without their
// blobs and fetches the changed ones only.

// maxLinkHops bounds how many symbolic links resolving one file may follow.
const maxLinkHops = 40

// partialWant returns the object to fetch for a partial clone of ref (refName its advertised
// name, "" when it is none): the advertised hash of a branch or tag, or a full commit hash.
// ok is false when the server cannot serve a partial clone (no "filter" or no
// "allow-reachable-sha1-in-want" capability) or ref is an abbreviated hash or no hash at all.
func partialWant(adv *packp.AdvRefs, refName plumbing.ReferenceName, ref string) (plumbing.Hash, bool) {
	caps := adv.Capabilities
	if !caps.Supports(capability.Filter) || !caps.Supports(capability.AllowReachableSHA1InWant) {
		return plumbing.ZeroHash, false
	}
	if refName != "" {
		return adv.References[refName.String()], true
	}
	if len(ref) == 40 && commitRef.MatchString(ref) {
		return plumbing.NewHash(ref), true
	}
	return plumbing.ZeroHash, false
}

// uploadPackSession opens a fetch session with the repository at rawURL.
func uploadPackSession(rawURL string, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return nil, err
	}
	cl, err := client.NewClient(ep)
	if err != nil {
		return nil, err
	}
	return cl.NewUploadPackSession(ep, auth)
}

// uploadPack fetches wants into st in one pack: with depth > 0 that many commits deep, with
// filter set without the objects it names (packp.FilterBlobNone: no blobs).
func uploadPack(ctx context.Context, rawURL string, auth transport.AuthMethod, st storage.Storer, wants []plumbing.Hash, depth int, filter packp.Filter) error {
	sess, err := uploadPackSession(rawURL, auth)
	if err != nil {
		return err
	}
	defer sess.Close()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return err
	}
	req := packp.NewUploadPackRequestFromCapabilities(adv.Capabilities)
	req.Wants = wants
	if depth > 0 {
		req.Depth = packp.DepthCommits(depth)
		if err := req.Capabilities.Set(capability.Shallow); err != nil {
			return err
		}
	}
	if filter != "" {
		req.Filter = filter
		if err := req.Capabilities.Set(capability.Filter); err != nil {
			return err
		}
	}
	if adv.Capabilities.Supports(capability.NoProgress) {
		if err := req.Capabilities.Set(capability.NoProgress); err != nil {
			return err
		}
	}
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Close()
	var r io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		r = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		r = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	return packfile.UpdateObjectStorage(st, r)
}

// gitFile is a selected file of the tree: its path relative to the Git path, and the blob of
// its bytes (a symbolic link's once resolved).
type gitFile struct {
	rel  string
	blob plumbing.Hash
	// link is the link's own path in the repository when the file is a symbolic link.
	link string
}

// fetchGitPartial checks out the commit want (a commit or an annotated tag) into dir the way
// fetchGit describes: one pack with the commit and its trees at depth 1 (and every blob when
// keep is nil), then, with keep set, one pack with the blobs of the selected symbolic links
// and of the kept files, and one more for kept links whose targets were not fetched yet.
func fetchGitPartial(ctx context.Context, src plan.Source, dir string, auth transport.AuthMethod, want plumbing.Hash, keep func(string) bool, index GitIndex) (gitCheckout, error) {
	g := src.Git
	name := redactURL(g.URL)
	ref := g.Ref
	if ref == "" {
		ref = "main"
	}
	// The objects go to a bare repository beside dir (on the scratch volume, not in memory:
	// a whole tree's blobs can be large), removed once the files are written.
	objects := dir + ".objects"
	if err := os.RemoveAll(objects); err != nil {
		return gitCheckout{}, err
	}
	defer os.RemoveAll(objects)
	bare, err := git.PlainInit(objects, true)
	if err != nil {
		return gitCheckout{}, err
	}
	st := bare.Storer
	var filter packp.Filter
	if keep != nil {
		filter = packp.FilterBlobNone()
	}
	if err := uploadPack(ctx, g.URL, auth, st, []plumbing.Hash{want}, 1, filter); err != nil {
		return gitCheckout{}, fmt.Errorf("source %s: fetch ref %q: %w", name, ref, err)
	}
	c, err := peelCommit(st, want)
	if err != nil {
		return gitCheckout{}, fmt.Errorf("source %s: ref %q is no branch, tag or commit of the repository: %w", name, ref, err)
	}
	out := gitCheckout{commit: c.Hash.String(), when: c.Committer.When, partial: true}
	tree, err := c.Tree()
	if err != nil {
		return gitCheckout{}, fmt.Errorf("source %s: commit %s: %w", name, out.commit, err)
	}
	base, sub, err := gitSubtree(tree, g.Path)
	if err != nil {
		return gitCheckout{}, fmt.Errorf("source %s: %w", name, err)
	}
	out.root = filepath.Join(dir, filepath.FromSlash(base))
	files, err := selectedFiles(sub, base, src)
	if err != nil {
		return gitCheckout{}, fmt.Errorf("source %s: %w", name, err)
	}
	kept := func(f gitFile) bool { return keep == nil || HoldsRecords(src, f.rel) || keep(f.rel) }
	if keep == nil {
		index = nil // a whole checkout (a scan, shard 0) defers nothing and records nothing
	}

	// A kept file whose blob the index knows is listed by its hash and fetched only when a
	// walk needs its bytes (Source.walk); with keep nil (a whole listing) every blob comes.
	if index != nil {
		for i, f := range files {
			if f.link != "" || HoldsRecords(src, f.rel) || !keep(f.rel) {
				continue
			}
			if hash, size, ok := index.Lookup(ctx, f.blob.String()); ok {
				out.deferred = append(out.deferred, Listed{ID: f.rel, Hash: hash, Size: size})
				out.blobOf = setBlob(out.blobOf, f.rel, f.blob)
				files[i].rel = ""
			}
		}
	}

	// Every selected link is checked, kept or not, so that every shard refuses the same
	// source; a link's blob is its target path.
	need := map[plumbing.Hash]bool{}
	for _, f := range files {
		if f.rel != "" && (f.link != "" || kept(f)) {
			need[f.blob] = true
		}
	}
	if err := fetchBlobs(ctx, g.URL, auth, st, need); err != nil {
		return gitCheckout{}, fmt.Errorf("source %s: fetch blobs: %w", name, err)
	}
	need = map[plumbing.Hash]bool{}
	for i, f := range files {
		if f.link == "" || f.rel == "" {
			continue
		}
		target, ok, err := resolveLink(st, tree, f.link, f.blob, func(h plumbing.Hash) error {
			return fetchBlobs(ctx, g.URL, auth, st, map[plumbing.Hash]bool{h: true})
		})
		if err != nil {
			return gitCheckout{}, fmt.Errorf("source %s: symbolic link %s%w", name, f.rel, err)
		}
		files[i].blob = target
		if !ok { // a link to a folder is no document, as in a checkout
			files[i].rel = ""
			continue
		}
		if kept(files[i]) {
			need[target] = true
		}
	}
	if err := fetchBlobs(ctx, g.URL, auth, st, need); err != nil {
		return gitCheckout{}, fmt.Errorf("source %s: fetch blobs: %w", name, err)
	}
	if err := os.MkdirAll(out.root, 0o755); err != nil {
		return gitCheckout{}, err
	}
	for _, f := range files {
		if f.rel == "" || !kept(f) {
			continue
		}
		if err := writeBlob(ctx, st, f, out.root, !HoldsRecords(src, f.rel), index); err != nil {
			return gitCheckout{}, fmt.Errorf("source %s: %w", name, err)
		}
	}
	out.blobs = countBlobs(st)
	if len(out.deferred) > 0 {
		root, blobOf := out.root, out.blobOf
		out.fetch = func(ctx context.Context, rels []string) (int, error) {
			return fetchDeferred(ctx, g.URL, auth, dir+".deferred", root, rels, blobOf, index)
		}
	}
	return out, nil
}

// setBlob records rel's blob in m (created when nil).
func setBlob(m map[string]plumbing.Hash, rel string, h plumbing.Hash) map[string]plumbing.Hash {
	if m == nil {
		m = map[string]plumbing.Hash{}
	}
	m[rel] = h
	return m
}

// countBlobs counts the blobs st holds.
func countBlobs(st storage.Storer) int {
	n := 0
	if iter, err := st.IterEncodedObjects(plumbing.BlobObject); err == nil {
		_ = iter.ForEach(func(plumbing.EncodedObject) error { n++; return nil })
	}
	return n
}

// writeBlob writes f's blob from st under root and, with record set and an index, records
// its hash and size there.
func writeBlob(ctx context.Context, st storage.Storer, f gitFile, root string, record bool, index GitIndex) error {
	b, err := object.GetBlob(st, f.blob)
	if err != nil {
		return fmt.Errorf("%s: blob %s: %w", f.rel, f.blob, err)
	}
	r, err := b.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	h := sha256.New()
	if err := writeFile(filepath.Join(root, filepath.FromSlash(f.rel)), io.TeeReader(r, h)); err != nil {
		return scratchError(err)
	}
	if record && index != nil {
		index.Record(ctx, f.blob.String(), hex.EncodeToString(h.Sum(nil))[:16], b.Size)
	}
	return nil
}

// fetchDeferred fetches the blobs of the deferred files rels (blobOf maps them) into a bare
// repository at objects (removed after) and writes them under root; it returns the blobs
// fetched.
func fetchDeferred(ctx context.Context, rawURL string, auth transport.AuthMethod, objects, root string, rels []string, blobOf map[string]plumbing.Hash, index GitIndex) (int, error) {
	if err := os.RemoveAll(objects); err != nil {
		return 0, err
	}
	defer os.RemoveAll(objects)
	bare, err := git.PlainInit(objects, true)
	if err != nil {
		return 0, err
	}
	need := map[plumbing.Hash]bool{}
	for _, rel := range rels {
		need[blobOf[rel]] = true
	}
	if err := fetchBlobs(ctx, rawURL, auth, bare.Storer, need); err != nil {
		return 0, fmt.Errorf("fetch blobs: %w", err)
	}
	for _, rel := range rels {
		if err := writeBlob(ctx, bare.Storer, gitFile{rel: rel, blob: blobOf[rel]}, root, true, index); err != nil {
			return 0, err
		}
	}
	return countBlobs(bare.Storer), nil
}

// fetchBlobs fetches the blobs of need that st does not hold yet, in one pack.
func fetchBlobs(ctx context.Context, rawURL string, auth transport.AuthMethod, st storage.Storer, need map[plumbing.Hash]bool) error {
	var wants []plumbing.Hash
	for h := range need {
		if st.HasEncodedObject(h) != nil {
			wants = append(wants, h)
		}
	}
	if len(wants) == 0 {
		return nil
	}
	sort.Slice(wants, func(i, j int) bool { return wants[i].String() < wants[j].String() })
	return uploadPack(ctx, rawURL, auth, st, wants, 0, "")
}

// peelCommit returns the commit h names, through annotated tags.
func peelCommit(st storage.Storer, h plumbing.Hash) (*object.Commit, error) {
	for range 10 {
		o, err := st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return nil, err
		}
		switch o.Type() {
		case plumbing.CommitObject:
			return object.DecodeCommit(st, o)
		case plumbing.TagObject:
			t, err := object.DecodeTag(st, o)
			if err != nil {
				return nil, err
			}
			h = t.Target
		default:
			return nil, fmt.Errorf("object %s is a %s", h, o.Type())
		}
	}
	return nil, fmt.Errorf("object %s: too many nested tags", h)
}

// gitSubtree returns the source path p cleaned (slash-separated, "" for the repository root)
// and its tree, refusing a path that escapes the repository or is not a folder of it.
func gitSubtree(tree *object.Tree, p string) (string, *object.Tree, error) {
	clean := path.Clean(strings.TrimPrefix(filepath.ToSlash(p), "/"))
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", nil, fmt.Errorf("path %q escapes the repository", p)
	}
	if clean == "." {
		return "", tree, nil
	}
	sub, err := tree.Tree(clean)
	if err == nil {
		return clean, sub, nil
	}
	if e, ferr := tree.FindEntry(clean); ferr == nil && e.Mode != filemode.Dir {
		return "", nil, fmt.Errorf("path %q is not a folder of the repository", p)
	}
	return "", nil, fmt.Errorf("path %q: %w", p, err)
}

// selectedFiles lists the files and symbolic links of sub (the tree at base) that
// src.Include and src.Exclude select, with their blobs; submodules are left out.
func selectedFiles(sub *object.Tree, base string, src plan.Source) ([]gitFile, error) {
	w := object.NewTreeWalker(sub, true, nil)
	defer w.Close()
	var out []gitFile
	for {
		rel, e, err := w.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if e.Mode != filemode.Regular && e.Mode != filemode.Executable && e.Mode != filemode.Deprecated && e.Mode != filemode.Symlink {
			continue
		}
		ok, err := Selected(rel, src.Include, src.Exclude)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		f := gitFile{rel: rel, blob: e.Hash}
		if e.Mode == filemode.Symlink {
			f.link = path.Join(base, rel)
		}
		out = append(out, f)
	}
	return out, nil
}

// resolveLink follows the symbolic link at repository path link (its blob holding the
// target) through the tree, fetching the blob of a link it leads to with fetch: ok with the
// blob of the regular file it ends at, not ok for a folder. The error (to follow the link's
// name) says it points outside the repository or at nothing in it.
func resolveLink(st storage.Storer, tree *object.Tree, link string, blob plumbing.Hash, fetch func(plumbing.Hash) error) (plumbing.Hash, bool, error) {
	for range maxLinkHops {
		b, err := object.GetBlob(st, blob)
		if err != nil {
			return plumbing.ZeroHash, false, fmt.Errorf(": %w", err)
		}
		r, err := b.Reader()
		if err != nil {
			return plumbing.ZeroHash, false, fmt.Errorf(": %w", err)
		}
		raw, err := io.ReadAll(io.LimitReader(r, 4096))
		r.Close()
		if err != nil {
			return plumbing.ZeroHash, false, fmt.Errorf(": %w", err)
		}
		target := string(raw)
		if path.IsAbs(target) {
			return plumbing.ZeroHash, false, errors.New(" points outside the repository")
		}
		target = path.Join(path.Dir(link), target)
		if target == ".." || strings.HasPrefix(target, "../") {
			return plumbing.ZeroHash, false, errors.New(" points outside the repository")
		}
		e, err := tree.FindEntry(target)
		if err != nil {
			return plumbing.ZeroHash, false, fmt.Errorf(": its target is not in the repository: %w", err)
		}
		switch e.Mode {
		case filemode.Dir:
			return plumbing.ZeroHash, false, nil
		case filemode.Symlink:
			link, blob = target, e.Hash
			if err := fetch(blob); err != nil {
				return plumbing.ZeroHash, false, fmt.Errorf(": fetch link %s: %w", target, err)
			}
			continue
		case filemode.Regular, filemode.Executable, filemode.Deprecated:
			return e.Hash, true, nil
		default:
			return plumbing.ZeroHash, false, fmt.Errorf(": its target %s is no file", target)
		}
	}
	return plumbing.ZeroHash, false, errors.New(": too many levels of symbolic links")
}
