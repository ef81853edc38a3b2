// Package corpus reads a Corpus source inside a worker pod: it materialises the source as a
// folder (a mounted PVC or ConfigMap as it is; an HTTP archive downloaded, checked against
// its SHA-256 and unpacked, or handed over by OpenOptions.HTTP, conditionally on an earlier
// download's validators; the selected objects of an S3 bucket under a prefix downloaded,
// with $RAGOPS_S3_ACCESS_KEY/$RAGOPS_S3_SECRET_KEY; a Git ref checked out, by a partial
// clone of the files the caller keeps where the server allows one (see fetchGit), with
// $RAGOPS_GIT_USERNAME/$RAGOPS_GIT_PASSWORD), selects files by include/exclude globs, and
// yields documents through the format readers (package reader), one per file or one per
// line of a BEIR corpus.jsonl. Documents that cannot be read are reported with a reason,
// never dropped silently.
//
// Each document read gets the source's fields in its reader.Document.Metadata, beside the
// reader's (see docs/metadata.md): MetaSourcePath, MetaSourceSize, MetaSourceModified (a
// file's modification time, an S3 object's LastModified, the Git commit's time; not for an
// HTTP archive, whose unpacked files carry no times), MetaSourceS3Prefix (an S3 object's user
// metadata, from the download's own response) and MetaSourceGitCommit (the checked-out
// commit). They are set after the reader returns, so an extraction cache hit (which serves
// every document with the same bytes) still gets the document's own fields, and they are no
// part of the text, the ID or the hash.
package corpus

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/beir"
)

// Document is one document of a corpus.
type Document struct {
	// ID is the path relative to the source root, or the "_id" of a BEIR record.
	ID string
	// Hash is the first 16 hex digits of SHA-256 over the document's raw bytes.
	Hash string
	// SHA256 is all 64 hex digits of that SHA-256 (the extraction cache's key,
	// extractcache.Key), "" where the walk did not read the bytes (a listed or known
	// unchanged object) and for a BEIR record.
	SHA256 string
	// Size is the raw size in bytes.
	Size int64
	// Doc is the extracted text with its outline and pages, its Source set; unset for listings
	// and for documents a walk's need left unread.
	Doc reader.Document
	// Read is true when Doc holds the extracted document.
	Read bool
	// SidecarHash is the hash of the document's sidecar file (plan.Source.SidecarSuffix; as
	// Hash, or the listing hash of a listed S3 object), "" when it has none. It is part of
	// the Revision, so a sidecar edit is a new corpus revision (a sync).
	SidecarHash string
	// Listing is an S3 object's listing identity (a hash of its key, ETag and size; see
	// listingHash), "" for other sources: a build keeps it in the revision's manifest, and a
	// later sync whose listing shows the same identity skips the download (see
	// OpenOptions.Unchanged).
	Listing string
}

// Keys of the source fields Walk adds to reader.Document.Metadata. Values are strings.
const (
	// MetaSourcePath is the document's path relative to the source root (the S3 prefix, the
	// Git path, the folder); for a BEIR record, the path of its corpus.jsonl.
	MetaSourcePath = "source.path"
	// MetaSourceSize is its raw size in bytes as a decimal string (a BEIR record's: its line).
	MetaSourceSize = "source.size"
	// MetaSourceModified is when it last changed, RFC 3339 in UTC: a file's modification
	// time (PVC, ConfigMap, folder), an S3 object's LastModified, the committer time of the
	// checked-out Git commit. Unset for an HTTP source.
	MetaSourceModified = "source.modified"
	// MetaSourceS3Prefix prefixes each user metadata entry of an S3 object: x-amz-meta-k: v
	// gives "source.s3.k" (k lower-cased) = v.
	MetaSourceS3Prefix = "source.s3."
	// MetaSourceGitCommit is the checked-out commit of a Git source (40 hex digits): the
	// commit whose tree holds the file, not the last commit that changed it (a branch or tag
	// is cloned at depth 1, without the file's history).
	MetaSourceGitCommit = "source.git.commit"
)

// MaxBytesSetting names the field whose limit a TooLarge skip of a corpus document exceeds.
const MaxBytesSetting = "Corpus spec.maxDocumentBytes"

// Skipped is a document left out, with its reason (reader.SkipReason values, or TooLarge,
// Unreadable, ChangedWhileRead).
type Skipped struct {
	ID     string
	Reason string
	Err    error
	// Container is set when ID is a file that holds many documents (a BEIR corpus.jsonl)
	// and the walk could not read all of them: it could not be opened, or it changed
	// between the listing and the end of its read (see ReasonChangedWhileRead). Which of
	// its documents were not visited is unknown, so none of them may count as removed.
	Container bool
}

// ReasonChangedWhileRead is the skip reason of a container file (a BEIR corpus.jsonl) whose
// size, modification time or identity when read differs from the listing, or whose read
// ended before the listed size (it was rewritten or truncated meanwhile): the documents read
// from it may be a partial view.
const ReasonChangedWhileRead = "ChangedWhileRead"

// DocumentReader turns raw bytes into a Document (a reader.Mux, or formats.Readers).
type DocumentReader interface {
	Read(ctx context.Context, data []byte) (reader.Document, error)
}

// FileReader is a DocumentReader that also reads a document from an open file without a
// copy of all of it in memory (reader.Mux.ReadAt, extractcache.Reader.ReadAt); the walk
// hands it the file when the reader is one.
type FileReader interface {
	ReadAt(ctx context.Context, r io.ReaderAt, size int64) (reader.Document, error)
}

// Source is an opened corpus source.
type Source struct {
	spec   plan.Source
	root   string
	commit string
	files  []string // selected, sorted, relative to root
	read   DocumentReader
	sizes  map[string]int64
	infos  map[string]fs.FileInfo // as listed, to tell a file changed since the listing
	listed map[string]string      // S3 objects listed, not downloaded (Listing): ID -> listing hash
	known  map[string]string      // S3 objects not downloaded as Unchanged said: ID -> raw hash
	idents map[string]string      // S3 objects: ID -> listing identity (Document.Listing)
	s3objs map[string]*s3Object   // S3 objects downloaded: path -> LastModified, user metadata
	when   time.Time              // committer time of the Git commit
	// sidecar is the suffix of sidecar files ("" when no field reads one); sidecars maps a
	// document path to its sidecar's path.
	sidecar  string
	sidecars map[string]string
	// fetched counts the bytes read from the source (BytesFetched); counted the files
	// already in it.
	fetched int64
	counted map[string]bool
	// etag and lastModified are the validators of the HTTP source's download.
	etag, lastModified string
	// deferred marks listed Git documents whose blobs fetchDeferred fetches when a walk
	// needs their bytes (OpenOptions.GitIndex).
	deferred      map[string]bool
	fetchDeferred func(ctx context.Context, rels []string) (int, error)
	// fetchKnown downloads an S3 object left out as OpenOptions.Unchanged said (known).
	fetchKnown func(ctx context.Context, rel string) (*s3Object, error)
}

// OpenOptions narrows what Open fetches of a remote source; the zero value fetches it whole.
type OpenOptions struct {
	// Keep, when set, selects the documents (by ID: the path relative to the source) the
	// caller needs: an S3 source downloads only the objects whose IDs it keeps, a Git source
	// (partial clone) only their blobs, plus every BEIR file (its records are the documents,
	// assigned one by one). Walk lists only what was
	// fetched, so a caller passes the same filter to Walk. A build shard passes its Shard.
	Keep func(id string) bool
	// Listing makes an S3 source list its objects without downloading them (BEIR files are
	// still downloaded: their records must be read to be counted). Such a document's Hash is
	// taken from its listing metadata (key, ETag, size; see listingHash), not its bytes, and
	// Walk serves it in list mode only. A scan lists this way: its revision changes when an
	// object's ETag or size does.
	Listing bool
	// Unchanged, when set, is asked about the kept S3 objects (not BEIR files) before they
	// are downloaded, at most UnchangedBatch at a time: listings maps each one's ID to its
	// listing identity (Document.Listing), and it returns the raw hash the caller holds for
	// each object it knows at that identity (a sync's manifest record). Those are not
	// downloaded, and Walk and WalkChanged visit them unread with that Hash; when
	// WalkChanged's need asks for one, it is downloaded then and read. A sync's unchanged
	// objects cost no GET.
	Unchanged func(ctx context.Context, listings map[string]string) (hashes map[string]string)
	// HTTP, when set, fills dir with an HTTP source's files in place of the download, which
	// it is given to run where it must: the shards of a build share one download this way
	// (package pipeline/stage). Walk then lists what HTTP wrote.
	// It returns the documents it knows without their bytes (Listed): Walk lists them with
	// their hash and size, and WalkChanged visits them unread when its need rejects them.
	HTTP func(ctx context.Context, dir string, download func(ctx context.Context, dir string) error) ([]Listed, error)
	// IfNoneMatch and IfModifiedSince, when set, make an HTTP source's download conditional
	// (the validators of an earlier download, see Source.HTTPValidators): an archive the
	// server reports unchanged is not downloaded and Open fails with ErrNotModified.
	IfNoneMatch, IfModifiedSince string
	// GitIndex (nil: none), for a Git source fetched by partial clone with Keep set, gives the
	// hash and size of kept documents by blob id: those are listed without their blobs, and a
	// walk fetches the blobs of the documents it needs only (a sync: the changed ones).
	GitIndex GitIndex
}

// Listed is a document known by its listing, without its bytes: its ID (the path relative to
// the source), Hash (as Document.Hash) and Size in bytes.
type Listed struct {
	ID, Hash string
	Size     int64
}

// Open materialises src under workDir (used only for fetched sources) and lists its
// selected files. read extracts non-BEIR files; it may be nil for BEIR corpora.
//
// S3 objects are downloaded into workDir/s3 (see fetchS3), a Git ref is checked out into
// workDir/git (see fetchGit), an HTTP source into workDir/http; the folders are replaced on
// every Open.
//
// Errors: no source set, an unreadable folder, a failed download or clone, a checksum
// mismatch, a bad glob, an S3 key or Git path escaping its folder, an unknown Git ref.
func Open(ctx context.Context, src plan.Source, workDir string, read DocumentReader) (*Source, error) {
	return OpenWith(ctx, src, workDir, read, OpenOptions{})
}

// OpenWith opens src as Open does, fetching of an S3 or Git source only what opts selects.
// Errors: Open's, and ErrNotModified for an HTTP source unchanged since opts' validators.
func OpenWith(ctx context.Context, src plan.Source, workDir string, read DocumentReader, opts OpenOptions) (*Source, error) {
	s := &Source{spec: src, read: read, sizes: map[string]int64{}, infos: map[string]fs.FileInfo{},
		sidecar: src.SidecarSuffix(), sidecars: map[string]string{}}
	if keep := opts.Keep; keep != nil && s.sidecar != "" {
		// A document's sidecar is fetched with it.
		opts.Keep = func(id string) bool { return keep(s.documentOf(id)) }
	}
	switch {
	case src.Dir != "":
		s.root = src.Dir
	case src.HTTP != nil:
		dir := filepath.Join(workDir, "http")
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
		download := func(ctx context.Context, dir string) error {
			v, err := fetchHTTP(ctx, *src.HTTP, dir, opts)
			s.etag, s.lastModified = v.ETag, v.LastModified
			return err
		}
		var err error
		var listed []Listed
		if opts.HTTP != nil {
			listed, err = opts.HTTP(ctx, dir, download)
		} else {
			err = download(ctx, dir)
		}
		for _, l := range listed {
			if s.listed == nil {
				s.listed = map[string]string{}
			}
			s.files = append(s.files, l.ID)
			s.sizes[l.ID] = l.Size
			s.listed[l.ID] = l.Hash
		}
		if errors.Is(err, ErrNotModified) {
			return nil, err
		}
		if err != nil {
			return nil, scratchError(err)
		}
		s.root = dir
	case src.S3 != nil:
		dir, listed, objs, get, err := fetchS3(ctx, src, filepath.Join(workDir, "s3"), opts)
		if err != nil {
			return nil, scratchError(err)
		}
		s.root, s.s3objs, s.fetchKnown = dir, objs, get
		s.listed, s.known, s.idents = map[string]string{}, map[string]string{}, map[string]string{}
		for _, o := range listed {
			if doc := s.documentOf(o.rel); doc != o.rel {
				s.listed[o.rel] = o.hash
				s.sidecars[doc] = o.rel
				continue
			}
			s.files = append(s.files, o.rel)
			s.sizes[o.rel] = o.size
			s.idents[o.rel] = o.listing
			if o.known {
				s.known[o.rel] = o.hash
			} else {
				s.listed[o.rel] = o.hash
			}
		}
		for rel, o := range objs {
			s.idents[rel] = o.listing
			s.fetched += o.size
		}
	case src.Git != nil:
		co, err := fetchGit(ctx, src, filepath.Join(workDir, "git"), opts.Keep, opts.GitIndex)
		if err != nil {
			return nil, scratchError(err)
		}
		s.root, s.commit, s.when = co.root, co.commit, co.when
		if len(co.deferred) > 0 {
			s.listed, s.deferred, s.fetchDeferred = map[string]string{}, map[string]bool{}, co.fetch
			for _, l := range co.deferred {
				s.files = append(s.files, l.ID)
				s.sizes[l.ID] = l.Size
				s.listed[l.ID] = l.Hash
				s.deferred[l.ID] = true
			}
		}
	default:
		return nil, errors.New("plan source: none of dir, http, s3, git is set")
	}
	err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("list %s: %w", p, err)
		}
		rel, _ := filepath.Rel(s.root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), "..") && rel != "." { // ConfigMap volume internals (..data, ..2026_...)
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), "..") {
			return nil
		}
		ok, err := selected(src, rel)
		if err != nil || !ok {
			return err
		}
		info, err := os.Stat(p) // follows ConfigMap symlinks
		if err != nil {
			return fmt.Errorf("stat %s: %w", rel, err)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		if doc := s.documentOf(rel); doc != rel {
			s.sidecars[doc] = rel
			return nil
		}
		s.files = append(s.files, rel)
		s.sizes[rel] = info.Size()
		s.infos[rel] = info
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(s.files)
	return s, nil
}

// documentOf returns the document a sidecar file rel belongs to, rel itself for any other file.
func (s *Source) documentOf(rel string) string {
	if doc, ok := strings.CutSuffix(rel, s.sidecar); ok && s.sidecar != "" && doc != "" && !strings.HasSuffix(doc, "/") {
		return doc
	}
	return rel
}

// selected applies src's include and exclude globs to a file; a sidecar file is selected
// with its document.
func selected(src plan.Source, rel string) (bool, error) {
	if suffix := src.SidecarSuffix(); suffix != "" {
		if doc, ok := strings.CutSuffix(rel, suffix); ok && doc != "" && !strings.HasSuffix(doc, "/") {
			rel = doc
		}
	}
	return Selected(rel, src.Include, src.Exclude)
}

// Sidecar returns the raw sidecar file of document id (plan.Source.SidecarSuffix), nil when
// it has none or no field reads sidecars.
//
// Errors: the sidecar is listed but cannot be read.
func (s *Source) Sidecar(id string) ([]byte, error) {
	rel, ok := s.sidecars[id]
	if !ok {
		return nil, nil
	}
	if _, listed := s.listed[rel]; listed {
		if _, fetched := s.s3objs[rel]; !fetched {
			return nil, fmt.Errorf("sidecar %s: only listed, not downloaded", rel)
		}
	}
	return os.ReadFile(filepath.Join(s.root, filepath.FromSlash(rel)))
}

// sidecarHash returns the hash of document rel's sidecar ("" with none): its listing hash
// when it was only listed, else its bytes'.
func (s *Source) sidecarHash(rel string) string {
	side, ok := s.sidecars[rel]
	if !ok {
		return ""
	}
	if h, listed := s.listed[side]; listed {
		if _, fetched := s.s3objs[side]; !fetched {
			return h
		}
	}
	b, err := os.ReadFile(filepath.Join(s.root, filepath.FromSlash(side)))
	if err != nil {
		return "unreadable"
	}
	return hashOf(b)
}

// SourceFields returns the source fields (MetaSource*) a walk adds to document id's
// Metadata, without reading the document: what a sync compares for a document it does not
// read. nil for a BEIR record (its fields come with its line).
func (s *Source) SourceFields(id string) map[string]any {
	size, ok := s.sizes[id]
	if !ok {
		return nil
	}
	var doc reader.Document
	s.addSourceMeta(&doc, id, size)
	return doc.Metadata
}

// Root is the folder the source was materialised in.
func (s *Source) Root() string { return s.root }

// Commit is the Git commit checked out (40 hex digits); empty for other sources.
func (s *Source) Commit() string { return s.commit }

// BytesFetched is how many bytes of the source this Source has read so far: the objects an
// S3 source downloaded (GET bodies), and for every other source (a mounted PVC or ConfigMap,
// a Git checkout, an unpacked HTTP archive) the bytes of each file its walks read, each file
// once however often it was walked.
func (s *Source) BytesFetched() int64 { return s.fetched }

// countRead adds a file of n bytes read by a walk to BytesFetched, once per file; an S3
// source's files were counted when downloaded.
func (s *Source) countRead(rel string, n int64) {
	if s.spec.S3 != nil || s.counted[rel] {
		return
	}
	if s.counted == nil {
		s.counted = map[string]bool{}
	}
	s.counted[rel] = true
	s.fetched += n
}

// HTTPValidators are the ETag and Last-Modified of an HTTP source's download (either empty
// when the server sent none, both for other sources or when this pod did not download it).
func (s *Source) HTTPValidators() (etag, lastModified string) { return s.etag, s.lastModified }

// isBEIR reports whether a file holds BEIR corpus records (one JSON document per line).
func (s *Source) isBEIR(rel string) bool { return HoldsRecords(s.spec, rel) }

// HoldsRecords reports whether the file rel of src holds BEIR corpus records (one JSON
// document per line, each its own document, so every shard reads the file): any file of a
// BEIR source, a .jsonl file of an Auto one.
func HoldsRecords(src plan.Source, rel string) bool {
	return src.Format == ragopsv1alpha1.FormatBEIR ||
		(src.Format == ragopsv1alpha1.FormatAuto || src.Format == "") && strings.HasSuffix(rel, ".jsonl")
}

// Shard reports whether a document ID belongs to shard index of n (FNV-1a of the ID mod n).
func Shard(id string, index, n int) bool {
	if n <= 1 {
		return true
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32()%uint32(n)) == index
}

// Walk calls visit for every document in order (files by path, BEIR records by line) and
// skip for every document left out. With list set it does not extract text (Doc is unset)
// and visits every document whatever its format. keep filters documents by ID before they
// are read; nil keeps all.
//
// A BEIR file that cannot be opened, or that changed since Open listed it (size,
// modification time or file identity) or while it was read (the read ended before the
// listed size), is reported with skip as a Container under its path, after the records read
// from it were visited: a caller must not take its records that were not visited as
// removed. A read error inside a BEIR file (an I/O error, a line over beir.MaxLineBytes)
// ends the walk with an error.
func (s *Source) Walk(ctx context.Context, list bool, keep func(id string) bool, visit func(Document) error, skip func(Skipped)) error {
	return s.walk(ctx, list, keep, nil, visit, skip)
}

// WalkChanged walks as Walk without list does, but decides from the raw bytes before any
// reader runs: need is called with each kept document as listed (ID, Hash, Size; Doc unset)
// and, when it returns false, the document is visited unread (Read false) and neither format
// reader nor OCR runs for it. A sync passes the documents whose hash it already holds as not
// needed. The raw bytes are still read to hash them (the hash is what decides).
func (s *Source) WalkChanged(ctx context.Context, keep func(id string) bool, need func(Document) bool, visit func(Document) error, skip func(Skipped)) error {
	return s.walk(ctx, false, keep, need, visit, skip)
}

func (s *Source) walk(ctx context.Context, list bool, keep func(id string) bool, need func(Document) bool, visit func(Document) error, skip func(Skipped)) error {
	if !list {
		if err := s.fetchNeeded(ctx, keep, need); err != nil {
			return err
		}
	}
	for _, rel := range s.files {
		if err := ctx.Err(); err != nil {
			return err
		}
		full := filepath.Join(s.root, filepath.FromSlash(rel))
		if s.isBEIR(rel) {
			if err := s.walkBEIR(ctx, full, rel, list, keep, need, visit, skip); err != nil {
				return err
			}
			continue
		}
		if keep != nil && !keep(rel) {
			continue
		}
		if max := s.spec.MaxDocumentBytes; max > 0 && s.sizes[rel] > max {
			skip(Skipped{ID: rel, Reason: string(reader.TooLarge), Err: reader.TooLargeSkip("", s.sizes[rel], max, MaxBytesSetting)})
			continue
		}
		if h, ok := s.listed[rel]; ok {
			d := Document{ID: rel, Hash: h, Size: s.sizes[rel], Listing: s.idents[rel], SidecarHash: s.sidecarHash(rel)}
			if !list && (need == nil || need(d)) {
				return fmt.Errorf("document %s: only listed (OpenOptions.Listing, or known unchanged to OpenOptions.HTTP), not downloaded", rel)
			}
			if err := visit(d); err != nil {
				return err
			}
			continue
		}
		if h, ok := s.known[rel]; ok {
			d := Document{ID: rel, Hash: h, Size: s.sizes[rel], Listing: s.idents[rel], SidecarHash: s.sidecarHash(rel)}
			if list || need != nil && !need(d) {
				if err := visit(d); err != nil {
					return err
				}
				continue
			}
			// Needed after all (its metadata changed and a field reads the reader's): downloaded now.
			if err := s.download(ctx, rel); err != nil {
				return err
			}
		}
		d, skipped, err := s.readFile(ctx, full, rel, list, need)
		switch {
		case err != nil:
			return err
		case skipped != nil:
			skip(*skipped)
			continue
		}
		if err := visit(d); err != nil {
			return err
		}
	}
	return nil
}

// download fetches the known unchanged S3 object rel (OpenOptions.Unchanged) that a walk
// needs after all, so that it is read as a downloaded file from then on.
func (s *Source) download(ctx context.Context, rel string) error {
	o, err := s.fetchKnown(ctx, rel)
	if err != nil {
		return scratchError(err)
	}
	s.s3objs[rel] = o
	s.fetched += o.size
	delete(s.known, rel)
	return nil
}

// fetchNeeded fetches, in one pack, the blobs of the deferred Git documents that keep keeps
// and need (nil: all) needs, and reads them from then on as fetched files.
func (s *Source) fetchNeeded(ctx context.Context, keep func(string) bool, need func(Document) bool) error {
	var rels []string
	for rel := range s.deferred {
		d := Document{ID: rel, Hash: s.listed[rel], Size: s.sizes[rel]}
		if keep != nil && !keep(rel) || s.spec.MaxDocumentBytes > 0 && d.Size > s.spec.MaxDocumentBytes {
			continue
		}
		if need == nil || need(d) {
			rels = append(rels, rel)
		}
	}
	if len(rels) == 0 {
		return nil
	}
	sort.Strings(rels)
	if _, err := s.fetchDeferred(ctx, rels); err != nil {
		return scratchError(err)
	}
	for _, rel := range rels {
		delete(s.listed, rel)
		delete(s.deferred, rel)
	}
	return nil
}

// readFile hashes the file rel (at full) as it streams it, then, unless list is set or need
// says otherwise, reads its document: with s.read's ReadAt from the open file when s.read is
// a FileReader, from a copy in memory otherwise. A file that changed between the hash and
// the end of the read (size or modification time) is skipped as ReasonChangedWhileRead.
func (s *Source) readFile(ctx context.Context, full, rel string, list bool, need func(Document) bool) (Document, *Skipped, error) {
	f, err := os.Open(full)
	if err != nil {
		return Document{}, &Skipped{ID: rel, Reason: "Unreadable", Err: err}, nil
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil {
		return Document{}, &Skipped{ID: rel, Reason: "Unreadable", Err: err}, nil
	}
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return Document{}, &Skipped{ID: rel, Reason: "Unreadable", Err: err}, nil
	}
	sum := hex.EncodeToString(h.Sum(nil))
	d := Document{ID: rel, Hash: sum[:16], SHA256: sum, Size: size, Listing: s.idents[rel], SidecarHash: s.sidecarHash(rel)}
	s.countRead(rel, size)
	if list || need != nil && !need(d) {
		return d, nil, nil
	}
	if s.read == nil {
		return Document{}, nil, fmt.Errorf("document %s: no document reader configured", rel)
	}
	var doc reader.Document
	if fr, ok := s.read.(FileReader); ok {
		doc, err = fr.ReadAt(ctx, f, size)
	} else {
		data := make([]byte, size)
		if _, err = f.ReadAt(data, 0); err == nil || errors.Is(err, io.EOF) && len(data) == 0 {
			doc, err = s.read.Read(ctx, data)
		}
	}
	if err != nil {
		reason := "Unreadable"
		if r, ok := reader.ReasonOf(err); ok {
			reason = string(r)
		}
		return Document{}, &Skipped{ID: rel, Reason: reason, Err: err}, nil
	}
	if now, err := f.Stat(); err != nil || now.Size() != size || !now.ModTime().Equal(before.ModTime()) {
		if err == nil {
			err = fmt.Errorf("%d bytes modified at %s; %d bytes modified at %s when hashed", now.Size(),
				now.ModTime().UTC().Format(time.RFC3339Nano), size, before.ModTime().UTC().Format(time.RFC3339Nano))
		}
		return Document{}, &Skipped{ID: rel, Reason: ReasonChangedWhileRead, Err: err}, nil
	}
	doc.Source = &reader.Source{ID: d.ID, Hash: d.Hash, Size: d.Size}
	s.addSourceMeta(&doc, rel, d.Size)
	d.Doc, d.Read = doc, true
	return d, nil, nil
}

// addSourceMeta sets the source fields (MetaSource*) of the file rel in doc.Metadata, size
// being the document's raw size in bytes. It copies the map first: a reader may share it.
func (s *Source) addSourceMeta(doc *reader.Document, rel string, size int64) {
	m := make(map[string]any, len(doc.Metadata)+4)
	for k, v := range doc.Metadata {
		m[k] = v
	}
	m[MetaSourcePath] = rel
	m[MetaSourceSize] = strconv.FormatInt(size, 10)
	var modified time.Time
	switch {
	case s.spec.Git != nil:
		modified = s.when
		m[MetaSourceGitCommit] = s.commit
	case s.spec.S3 != nil:
		if o := s.s3objs[rel]; o != nil {
			modified = o.modified
			for k, v := range o.meta {
				m[MetaSourceS3Prefix+k] = v
			}
		}
	case s.spec.HTTP == nil:
		if info := s.infos[rel]; info != nil {
			modified = info.ModTime()
		}
	}
	if !modified.IsZero() {
		m[MetaSourceModified] = modified.UTC().Format(time.RFC3339Nano)
	}
	doc.Metadata = m
}

func (s *Source) walkBEIR(ctx context.Context, full, rel string, list bool, keep func(string) bool, need func(Document) bool, visit func(Document) error, skip func(Skipped)) error {
	f, err := os.Open(full)
	if err != nil {
		skip(Skipped{ID: rel, Reason: "Unreadable", Err: err, Container: true})
		return nil
	}
	defer f.Close()
	listed := s.infos[rel]
	if err := sameFile(listed, f); err != nil {
		skip(Skipped{ID: rel, Reason: ReasonChangedWhileRead, Err: fmt.Errorf("changed since it was listed: %w", err), Container: true})
		return nil
	}
	cr := &countingReader{r: f}
	meta := func(doc *reader.Document, size int64) { s.addSourceMeta(doc, rel, size) }
	line, err := scanRecords(ctx, cr, rel, s.spec.MaxDocumentBytes, list, keep, need, meta, visit, skip)
	s.countRead(rel, cr.n)
	if err != nil {
		return err
	}
	// A file truncated or rewritten in place while it was read ends early, or ends with
	// another size or modification time than listed.
	err = sameFile(listed, f)
	if err == nil && cr.n != listed.Size() {
		err = fmt.Errorf("read %d of its %d listed bytes", cr.n, listed.Size())
	}
	if err != nil {
		skip(Skipped{ID: rel, Reason: ReasonChangedWhileRead, Err: fmt.Errorf("changed while it was read (after line %d): %w", line, err), Container: true})
	}
	return nil
}

// scanRecords visits the BEIR records of r, one JSON document per line, as Walk does for the
// file rel: a line that does not parse is skipped as rel:line, a record over maxBytes as
// TooLarge; a record need (nil: all) rejects is visited unread; meta (nil: none) adds source
// fields to each record read. It returns the lines read; a read error (a line over
// beir.MaxLineBytes) ends it.
func scanRecords(ctx context.Context, r io.Reader, rel string, maxBytes int64, list bool, keep func(string) bool, need func(Document) bool, meta func(*reader.Document, int64), visit func(Document) error, skip func(Skipped)) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), beir.MaxLineBytes)
	line := 0
	for sc.Scan() {
		line++
		raw := sc.Bytes()
		if len(strings.TrimSpace(string(raw))) == 0 {
			continue
		}
		id, doc, _, err := beir.ParseLine(raw)
		if err != nil {
			reason := "Corrupt"
			if r, ok := reader.ReasonOf(err); ok {
				reason = string(r)
			}
			skip(Skipped{ID: fmt.Sprintf("%s:%d", rel, line), Reason: reason, Err: err})
			continue
		}
		if keep != nil && !keep(id) {
			continue
		}
		if maxBytes > 0 && int64(len(raw)) > maxBytes {
			skip(Skipped{ID: id, Reason: string(reader.TooLarge), Err: reader.TooLargeSkip("", int64(len(raw)), maxBytes, MaxBytesSetting)})
			continue
		}
		d := Document{ID: id, Hash: hashOf(raw), Size: int64(len(raw))}
		if !list && (need == nil || need(d)) {
			doc.Source = &reader.Source{ID: d.ID, Hash: d.Hash, Size: d.Size}
			if meta != nil {
				meta(&doc, d.Size)
			}
			d.Doc, d.Read = doc, true
		}
		if err := visit(d); err != nil {
			return line, err
		}
		if err := ctx.Err(); err != nil {
			return line, err
		}
	}
	if err := sc.Err(); err != nil {
		return line, fmt.Errorf("%s line %d: %w", rel, line+1, err)
	}
	return line, nil
}

// List lists documents held in memory, files by flat name (a ConfigMap's keys), exactly as
// Open and Walk with list set list a folder holding those files: the same selection
// (src.Include, src.Exclude), the same BEIR split by src.Format (one document per
// corpus.jsonl record), src.MaxDocumentBytes and hashes, so that Revision(docs) is the
// revision a scan of the folder reports. Doc is unset; skipped documents come with reasons.
// Errors: a bad glob, a read error inside a BEIR file (a line over beir.MaxLineBytes).
func List(ctx context.Context, files map[string][]byte, src plan.Source) (docs []Document, skipped []Skipped, err error) {
	s := &Source{spec: src, sidecar: src.SidecarSuffix(), sidecars: map[string]string{}}
	names := make([]string, 0, len(files))
	for name := range files {
		if strings.HasPrefix(name, "..") {
			continue
		}
		ok, err := selected(src, name)
		if err != nil {
			return nil, nil, err
		}
		if doc := s.documentOf(name); doc != name {
			s.sidecars[doc] = name
			continue
		}
		if ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	visit := func(d Document) error { docs = append(docs, d); return nil }
	skip := func(sk Skipped) { skipped = append(skipped, sk) }
	for _, name := range names {
		data := files[name]
		if s.isBEIR(name) {
			if _, err := scanRecords(ctx, bytes.NewReader(data), name, src.MaxDocumentBytes, true, nil, nil, nil, visit, skip); err != nil {
				return nil, nil, err
			}
			continue
		}
		if max := src.MaxDocumentBytes; max > 0 && int64(len(data)) > max {
			skip(Skipped{ID: name, Reason: string(reader.TooLarge), Err: reader.TooLargeSkip("", int64(len(data)), max, MaxBytesSetting)})
			continue
		}
		d := Document{ID: name, Hash: hashOf(data), Size: int64(len(data))}
		if side, ok := s.sidecars[name]; ok {
			d.SidecarHash = hashOf(files[side])
		}
		_ = visit(d)
	}
	return docs, skipped, nil
}

// sameFile returns an error saying what differs when the open file f is not the file listed
// (another file at that path) or has another size or modification time now.
func sameFile(listed fs.FileInfo, f *os.File) error {
	now, err := f.Stat()
	switch {
	case err != nil:
		return err
	case listed == nil:
		return errors.New("not in the listing")
	case !os.SameFile(listed, now):
		return errors.New("another file is at its path")
	case now.Size() != listed.Size():
		return fmt.Errorf("%d bytes, %d when listed", now.Size(), listed.Size())
	case !now.ModTime().Equal(listed.ModTime()):
		return fmt.Errorf("modified at %s, %s when listed", now.ModTime().UTC().Format(time.RFC3339Nano), listed.ModTime().UTC().Format(time.RFC3339Nano))
	}
	return nil
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// Revision returns a content revision of a document listing: the first 12 hex digits of
// SHA-256 over the sorted (ID, hash) pairs, with the sidecar hash of documents that have one.
func Revision(docs []Document) string {
	sorted := make([]Document, len(docs))
	copy(sorted, docs)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].ID < sorted[j].ID })
	h := sha256.New()
	for _, d := range sorted {
		if d.SidecarHash != "" {
			fmt.Fprintf(h, "%s\x00%s\x00%s\n", d.ID, d.Hash, d.SidecarHash)
			continue
		}
		fmt.Fprintf(h, "%s\x00%s\n", d.ID, d.Hash)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// WithMetadata folds the metadata field declarations m into a listing's revision: a new or
// changed declaration is a new corpus revision, so the Indexes sync and rewrite their
// chunks' properties (without embedding). A corpus without declarations keeps rev.
func WithMetadata(rev string, m *ragopsv1alpha1.MetadataSpec) string {
	if m == nil || len(m.Fields) == 0 {
		return rev
	}
	raw, _ := json.Marshal(m)
	sum := sha256.Sum256(append([]byte(rev+"\x00"), raw...))
	return hex.EncodeToString(sum[:])[:12]
}

// Selected applies include and exclude globs (path.Match, with "**/" for any leading
// folders and "/**" for anything below a folder).
func Selected(p string, include, exclude []string) (bool, error) {
	match := func(patterns []string) (bool, error) {
		for _, pat := range patterns {
			ok, err := globMatch(pat, p)
			if err != nil {
				return false, fmt.Errorf("glob %q: %w", pat, err)
			}
			if ok {
				return true, nil
			}
		}
		return false, nil
	}
	if len(include) > 0 {
		if ok, err := match(include); err != nil || !ok {
			return false, err
		}
	}
	ex, err := match(exclude)
	return !ex, err
}

func globMatch(pattern, p string) (bool, error) {
	if rest, ok := strings.CutPrefix(pattern, "**/"); ok {
		if m, err := globMatch(rest, p); m || err != nil {
			return m, err
		}
		for i := 0; i < len(p); i++ {
			if p[i] == '/' {
				if m, err := globMatch(rest, p[i+1:]); m || err != nil {
					return m, err
				}
			}
		}
		return false, nil
	}
	if prefix, ok := strings.CutSuffix(pattern, "/**"); ok {
		for i := 0; i < len(p); i++ {
			if p[i] == '/' {
				if m, err := path.Match(prefix, p[:i]); m || err != nil {
					return m, err
				}
			}
		}
		return false, nil
	}
	return path.Match(pattern, p)
}
