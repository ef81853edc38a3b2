// Package stage shares one download of an HTTP source among the shards of a build: the lead
// shard (shard 0) downloads and unpacks the archive, as every shard did before, and stages
// the raw bytes of the other shards' documents in the Corpus's extraction cache collection
// (a vector-less Weaviate blob collection every worker of the build already reaches); the
// other shards wait for the stage and write their own documents from it, never asking the
// origin. A build of S shards downloads the archive once, not S times. In a sync the lead
// stages the bytes of added and changed documents only (Stage.Unchanged: the collection
// holds the others' raw hashes); the others reach their shards by hash and size, listed
// unread (corpus.Listed), since their shards neither read nor OCR them.
//
// Why this store: an HTTP archive can only be read whole (a tar.gz has no index), so one pod
// must download it and hand the others their parts. The build's Weaviate is already there,
// sized and reachable by every shard; a shared volume would need a ReadWriteMany class, and a
// stage in the scan pod would need a server there. Nothing new runs.
//
// Layout: every blob's group is "stage/<unix seconds>/<run>/<owner>", run being the build's
// Job UID (plan.EnvJobUID, shared by its shards and their retries), owner the shard the bytes
// are for ("all" for BEIR files, whose records every shard reads). A file's bytes are split
// into parts of at most PartBytes (key "stage/<run>/<owner>/<sha256>/<i>", checksum the part's
// SHA-256); each owner's manifest (key "stage/<run>/<owner>", gzipped JSON) lists its files;
// the run's root (key "stage/<run>") is written last and is what followers wait for. The
// lead writes a root with Error when its download fails, so followers stop waiting.
//
// Bounded and collected: a follower deletes its own group once its files are written; the
// lead deletes every stage group older than MaxAge (a follower that never ran, the shared
// BEIR parts, the roots). Everything read is verified (part checksums, the file's SHA-256 and
// size); a follower that cannot read its stage (missing, corrupt, too late: Wait) downloads
// from the origin itself, as before, and says so in its log.
package stage

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/vectorstore"
)

// PartBytes is the largest part of a staged file: 4 MiB, under Weaviate's gRPC message limit.
const PartBytes = 4 << 20

// DefaultWait is how long a follower waits for the lead's stage when Stage.Wait is 0.
const DefaultWait = 30 * time.Minute

// DefaultBatch is how many files the lead asks Stage.Unchanged about at once when
// Stage.Batch is 0.
const DefaultBatch = 500

// MaxAge is the age after which the lead deletes a stage group, used or not.
const MaxAge = 24 * time.Hour

// GroupPrefix begins the group of every staged blob: an extraction cache collection keeps
// these groups (IsStage) when it collects by listing.
const GroupPrefix = "stage/"

// IsStage reports whether group is a stage group (not an extraction cache entry).
func IsStage(group string) bool { return strings.HasPrefix(group, GroupPrefix) }

// AllShards is the owner of a file every shard reads (a BEIR corpus file).
const AllShards = -1

// Store holds the staged blobs (extractcache.Store: the Corpus's extraction cache collection).
type Store interface {
	Get(ctx context.Context, key string) (vectorstore.Blob, bool, error)
	Put(ctx context.Context, b vectorstore.Blob) error
	Collect(ctx context.Context, keep func(group string) bool) (int, error)
}

// Stage is one shard's side of a shared download.
type Stage struct {
	Store Store
	// Run names the build the shards share (its Job's UID); never empty.
	Run string
	// Shard is this shard; shard 0 is the lead.
	Shard int
	// Owner returns the shard a selected file (its path relative to the source) is for, or
	// AllShards.
	Owner func(rel string) int
	// Select reports whether the source selects a file (include and exclude globs): the lead
	// stages only those.
	Select func(rel string) bool
	// Unchanged (nil: none), asked by the lead with at most Batch files of other shards at a
	// time, each path with its hash (the first 16 hex digits of its SHA-256,
	// corpus.Document.Hash), returns those whose owner will not read the file (a sync's
	// document whose raw hash the collection holds; nil: none): the lead stages their hash
	// and size only, and the owner lists them unread (corpus.Listed). Asking by batch lets
	// the answer come from one lookup per batch, never a copy of every document's state.
	Unchanged func(ctx context.Context, hashes map[string]string) map[string]bool
	// Batch is how many files the lead hashes before it asks Unchanged (0: DefaultBatch).
	Batch int
	// Wait bounds a follower's wait for the lead (0: DefaultWait); Poll is its longest pause
	// between looks (0: 10 s).
	Wait, Poll time.Duration
	// Log receives what the stage did (nil: discarded).
	Log *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time

	// Staged counts the files and bytes the lead staged, or a follower read from the stage;
	// Unread the files staged or read without bytes (Unchanged); Downloaded is true when this
	// shard downloaded the archive from the origin.
	Staged, StagedBytes, Unread int64
	Downloaded                  bool
}

// root is the record followers wait for.
type root struct {
	// Created is the lead's clock when it began staging, in Unix seconds: part of every group.
	Created int64 `json:"created"`
	// Error is set when the lead could not download the source.
	Error string `json:"error,omitempty"`
	// Owners lists the owners with a manifest.
	Owners []int `json:"owners"`
}

// file is one staged file of a manifest.
type file struct {
	ID     string `json:"id"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	Parts  int    `json:"parts"`
	// Unread marks a file staged without its bytes (Stage.Unchanged).
	Unread bool `json:"unread,omitempty"`
}

func (s *Stage) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

func (s *Stage) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

func owner(o int) string {
	if o == AllShards {
		return "all"
	}
	return strconv.Itoa(o)
}

func (s *Stage) rootKey() string          { return GroupPrefix + s.Run }
func (s *Stage) manifestKey(o int) string { return GroupPrefix + s.Run + "/" + owner(o) }
func (s *Stage) group(created int64, o int) string {
	return fmt.Sprintf("%s%d/%s/%s", GroupPrefix, created, s.Run, owner(o))
}
func (s *Stage) partKey(o int, sum string, i int) string {
	return fmt.Sprintf("%s%s/%s/%s/%d", GroupPrefix, s.Run, owner(o), sum, i)
}

// Fetch fills dir with the source's files (a corpus.OpenOptions.HTTP): the lead runs
// download (the origin fetch into dir) and stages what the other shards need; a follower
// writes its own files and the shared ones from the stage, and returns those staged without
// bytes (Unchanged) as listed, or runs download itself when the stage cannot serve it.
// Errors: download's; the lead's staging failures are logged, not returned (the followers
// then download themselves).
func (s *Stage) Fetch(ctx context.Context, dir string, download func(ctx context.Context, dir string) error) ([]corpus.Listed, error) {
	if s.Shard == 0 {
		return nil, s.lead(ctx, dir, download)
	}
	listed, err := s.follow(ctx, dir)
	if err == nil {
		return listed, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	s.log().Warn("HTTP source: downloading it here, the build's stage cannot serve this shard", "reason", err)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	s.Staged, s.StagedBytes, s.Unread, s.Downloaded = 0, 0, 0, true
	return nil, download(ctx, dir)
}

// lead downloads into dir and stages every selected file another shard owns, unless a root
// of this run is there already (a retried lead: the followers have theirs).
func (s *Stage) lead(ctx context.Context, dir string, download func(context.Context, string) error) error {
	s.collectOld(ctx)
	s.Downloaded = true
	if err := download(ctx, dir); err != nil {
		s.putRoot(ctx, root{Created: s.now().Unix(), Error: err.Error()})
		return err
	}
	if _, ok, err := s.getRoot(ctx); err == nil && ok {
		s.log().Info("HTTP source: the stage of this build is there already")
		return nil
	}
	if err := s.stage(ctx, dir); err != nil {
		s.log().Warn("HTTP source: staging failed; the other shards download it themselves", "error", err)
		s.putRoot(ctx, root{Created: s.now().Unix(), Error: "staging failed: " + err.Error()})
	}
	return nil
}

func (s *Stage) stage(ctx context.Context, dir string) error {
	created := s.now().Unix()
	manifests := map[int][]file{}
	batch := s.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	var pending []hashed
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), "..") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasPrefix(d.Name(), "..") || !d.Type().IsRegular() || !s.Select(rel) {
			return nil
		}
		o := s.Owner(rel)
		if o == 0 {
			return nil
		}
		f, err := hashFile(rel, p)
		if err != nil {
			return fmt.Errorf("stage %s: %w", rel, err)
		}
		pending = append(pending, hashed{file: f, owner: o, path: p})
		if len(pending) < batch {
			return nil
		}
		err = s.putBatch(ctx, created, pending, manifests)
		pending = pending[:0]
		return err
	})
	if err == nil {
		err = s.putBatch(ctx, created, pending, manifests)
	}
	if err != nil {
		return err
	}
	r := root{Created: created}
	for o, files := range manifests {
		payload, err := gzipJSON(files)
		if err != nil {
			return err
		}
		if err := s.putBlob(ctx, s.manifestKey(o), s.group(created, o), payload); err != nil {
			return err
		}
		r.Owners = append(r.Owners, o)
	}
	s.log().Info("HTTP source staged for the other shards", "files", s.Staged, "bytes", s.StagedBytes, "unchanged", s.Unread)
	return s.putRoot(ctx, r)
}

// hashed is a file the lead hashed and has yet to stage: its manifest entry (ID, SHA-256,
// size), owner and path.
type hashed struct {
	file
	owner int
	path  string
}

// hashFile reads the file at p (rel in the source) to hash it, never whole in memory.
func hashFile(rel, p string) (file, error) {
	fh, err := os.Open(p)
	if err != nil {
		return file{}, err
	}
	defer fh.Close()
	h := sha256.New()
	n, err := io.Copy(h, fh)
	if err != nil {
		return file{}, err
	}
	return file{ID: rel, SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}, nil
}

// putBatch asks Unchanged about the hashed files of a batch (BEIR files always go whole),
// then stages each: its hash and size only when unchanged, its bytes in parts otherwise.
func (s *Stage) putBatch(ctx context.Context, created int64, batch []hashed, manifests map[int][]file) error {
	var unchanged map[string]bool
	if s.Unchanged != nil {
		ask := make(map[string]string, len(batch))
		for _, h := range batch {
			if h.owner != AllShards {
				ask[h.ID] = h.SHA256[:16]
			}
		}
		if len(ask) > 0 {
			unchanged = s.Unchanged(ctx, ask)
		}
	}
	for _, h := range batch {
		f := h.file
		if h.owner != AllShards && unchanged[f.ID] {
			f.Unread = true
			s.Unread++
		} else if err := s.put(ctx, created, h.owner, h.path, &f); err != nil {
			return fmt.Errorf("stage %s: %w", f.ID, err)
		}
		manifests[h.owner] = append(manifests[h.owner], f)
	}
	return nil
}

// put stages the file at p for owner o in parts, as f (hashed by hashFile) says, reading it
// again, never whole in memory; f.Parts counts the parts written.
func (s *Stage) put(ctx context.Context, created int64, o int, p string, f *file) error {
	fh, err := os.Open(p)
	if err != nil {
		return err
	}
	defer fh.Close()
	buf := make([]byte, PartBytes)
	for {
		k, err := io.ReadFull(fh, buf)
		if k > 0 || f.Parts == 0 {
			if err := s.putBlob(ctx, s.partKey(o, f.SHA256, f.Parts), s.group(created, o), buf[:k]); err != nil {
				return err
			}
			f.Parts++
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	s.Staged++
	s.StagedBytes += f.Size
	return nil
}

func (s *Stage) putBlob(ctx context.Context, key, group string, payload []byte) error {
	return s.Store.Put(ctx, vectorstore.Blob{Key: key, Group: group, Payload: payload, Sum: checksum(payload)})
}

func (s *Stage) putRoot(ctx context.Context, r root) error {
	raw, err := json.Marshal(r)
	if err == nil {
		err = s.putBlob(ctx, s.rootKey(), s.group(r.Created, AllShards), raw)
	}
	if err != nil {
		s.log().Warn("HTTP source: the stage's root could not be written", "error", err)
	}
	return err
}

// getBlob reads key and verifies its checksum; ok is false when there is none.
func (s *Stage) getBlob(ctx context.Context, key string) ([]byte, bool, error) {
	b, ok, err := s.Store.Get(ctx, key)
	if err != nil || !ok {
		return nil, ok, err
	}
	if b.Key != key || b.Sum != checksum(b.Payload) {
		return nil, false, fmt.Errorf("stage blob %s does not verify", key)
	}
	return b.Payload, true, nil
}

func (s *Stage) getRoot(ctx context.Context) (root, bool, error) {
	raw, ok, err := s.getBlob(ctx, s.rootKey())
	if err != nil || !ok {
		return root{}, ok, err
	}
	var r root
	return r, true, json.Unmarshal(raw, &r)
}

// follow waits for the lead's root, then writes this shard's files and the shared ones.
func (s *Stage) follow(ctx context.Context, dir string) ([]corpus.Listed, error) {
	wait, poll := s.Wait, s.Poll
	if wait <= 0 {
		wait = DefaultWait
	}
	if poll <= 0 {
		poll = 10 * time.Second
	}
	deadline := s.now().Add(wait)
	pause := min(time.Second, poll)
	var r root
	for {
		got, ok, err := s.getRoot(ctx)
		if err != nil {
			return nil, err
		}
		if ok {
			r = got
			break
		}
		if !s.now().Before(deadline) {
			return nil, fmt.Errorf("no stage from shard 0 within %s", wait)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, poll)
	}
	if r.Error != "" {
		return nil, fmt.Errorf("shard 0 could not stage the source: %s", r.Error)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var listed []corpus.Listed
	for _, o := range []int{s.Shard, AllShards} {
		l, err := s.read(ctx, dir, o)
		if err != nil {
			return nil, err
		}
		listed = append(listed, l...)
	}
	// Collected after use: this shard's parts and manifest.
	mine := s.group(r.Created, s.Shard)
	if _, err := s.Store.Collect(ctx, func(g string) bool { return g != mine }); err != nil {
		s.log().Warn("HTTP source: this shard's stage was not deleted (the lead collects it later)", "error", err)
	}
	s.log().Info("HTTP source read from the build's stage", "files", s.Staged, "bytes", s.StagedBytes, "unchanged", s.Unread)
	return listed, nil
}

// read writes the files of owner o's manifest into dir and returns those staged unread.
func (s *Stage) read(ctx context.Context, dir string, o int) ([]corpus.Listed, error) {
	raw, ok, err := s.getBlob(ctx, s.manifestKey(o))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nil // nothing staged for o
	}
	var files []file
	if err := gunzipJSON(raw, &files); err != nil {
		return nil, fmt.Errorf("stage manifest %s: %w", owner(o), err)
	}
	var listed []corpus.Listed
	for _, f := range files {
		if f.Unread {
			if len(f.SHA256) < 16 {
				return nil, fmt.Errorf("stage of %s: hash %q", f.ID, f.SHA256)
			}
			listed = append(listed, corpus.Listed{ID: f.ID, Hash: f.SHA256[:16], Size: f.Size})
			s.Unread++
			continue
		}
		target, err := within(dir, f.ID)
		if err != nil {
			return nil, err
		}
		if err := s.readFile(ctx, target, o, f); err != nil {
			os.Remove(target)
			return nil, err
		}
		s.Staged++
		s.StagedBytes += f.Size
	}
	return listed, nil
}

// readFile writes the staged file f of owner o to target part by part, checking each part's
// checksum and the whole file's SHA-256 and size.
func (s *Stage) readFile(ctx context.Context, target string, o int, f file) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	out, err := os.Create(target)
	if err != nil {
		return err
	}
	defer out.Close()
	h := sha256.New()
	var n int64
	for i := range f.Parts {
		part, ok, err := s.getBlob(ctx, s.partKey(o, f.SHA256, i))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("stage of %s: part %d missing", f.ID, i)
		}
		if _, err := io.MultiWriter(out, h).Write(part); err != nil {
			return err
		}
		n += int64(len(part))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 || n != f.Size {
		return fmt.Errorf("stage of %s: %d bytes with SHA-256 %s, want %d with %s", f.ID, n, got, f.Size, f.SHA256)
	}
	return out.Close()
}

// collectOld deletes stage groups older than MaxAge (a failure is logged).
func (s *Stage) collectOld(ctx context.Context) {
	oldest := s.now().Add(-MaxAge).Unix()
	n, err := s.Store.Collect(ctx, func(g string) bool {
		if !IsStage(g) {
			return true
		}
		ts, _, _ := strings.Cut(strings.TrimPrefix(g, GroupPrefix), "/")
		created, err := strconv.ParseInt(ts, 10, 64)
		return err == nil && created >= oldest
	})
	if err != nil {
		s.log().Warn("HTTP source: old stages not collected", "error", err)
	} else if n > 0 {
		s.log().Info("HTTP source: old stage blobs collected", "blobs", n)
	}
}

// within maps a staged ID to a path under dir, refusing one that climbs out of it.
func within(dir, id string) (string, error) {
	clean := filepath.Clean(filepath.FromSlash(id))
	if !fs.ValidPath(filepath.ToSlash(clean)) || clean == "." {
		return "", fmt.Errorf("stage: file %q would be written outside the source folder", id)
	}
	return filepath.Join(dir, clean), nil
}

func checksum(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
}

func gzipJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func gunzipJSON(payload []byte, v any) error {
	zr, err := gzip.NewReader(bytes.NewReader(payload))
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}
