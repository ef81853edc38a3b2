// Package extractcache keeps extracted documents (reader.Document: text, outline, pages, OCR
// statistics) per raw content, so that a build, a sync, a resumed shard, an estimate or an
// Experiment trial that meets bytes it has extracted before with the same reader settings
// neither opens the file's format reader (PDFium) nor runs OCR again.
//
// An entry's key is SHA-256 over the document's raw SHA-256, the reader settings and
// reader.Version; its payload is the gzipped reader.Encode of the document; its checksum is
// SHA-256 over key and payload. The entries live in a vector-less Weaviate collection per
// Corpus (vectorstore.ExtractionCacheName), which every worker already reaches. Entries are
// content-addressed, so two writers of one key write the same bytes to one object
// (vectorstore.BlobID); an entry whose checksum, key or payload does not verify is treated as
// missing, re-extracted and rewritten. Collect bounds the collection to the raw contents a
// listing holds.
package extractcache

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/vectorstore"
)

// MaxPayloadBytes is the largest gzipped payload stored (8 MiB, under Weaviate's gRPC message
// limit); larger documents are extracted every time.
const MaxPayloadBytes = 8 << 20

// Store holds the entries: [Weaviate] in workers, anything with these semantics in tests.
type Store interface {
	// Get returns the entry stored for key; ok is false when there is none.
	Get(ctx context.Context, key string) (e vectorstore.Blob, ok bool, err error)
	// Put writes e under e.Key, replacing any entry there.
	Put(ctx context.Context, e vectorstore.Blob) error
	// Collect deletes the entries whose group keep rejects and returns how many.
	Collect(ctx context.Context, keep func(group string) bool) (int, error)
}

// Weaviate is a Store over the blob collection named collection (created on first use).
func Weaviate(s *vectorstore.Store, collection string) Store {
	return &weaviateStore{s: s, collection: collection}
}

type weaviateStore struct {
	s          *vectorstore.Store
	collection string
	once       sync.Once
	err        error
}

func (w *weaviateStore) ensure(ctx context.Context) error {
	w.once.Do(func() { w.err = w.s.EnsureBlobCollection(ctx, w.collection) })
	return w.err
}

func (w *weaviateStore) Get(ctx context.Context, key string) (vectorstore.Blob, bool, error) {
	if err := w.ensure(ctx); err != nil {
		return vectorstore.Blob{}, false, err
	}
	return w.s.GetBlob(ctx, w.collection, key)
}

func (w *weaviateStore) Put(ctx context.Context, e vectorstore.Blob) error {
	if err := w.ensure(ctx); err != nil {
		return err
	}
	return w.s.PutBlob(ctx, w.collection, e)
}

func (w *weaviateStore) Collect(ctx context.Context, keep func(string) bool) (int, error) {
	return w.s.CollectBlobs(ctx, w.collection, 0, keep)
}

// DocumentReader turns raw bytes into a document (corpus.DocumentReader).
type DocumentReader interface {
	Read(ctx context.Context, data []byte) (reader.Document, error)
}

// Stats counts what a Reader did.
type Stats struct {
	// Extracted counts documents handed to the next reader (format readers, OCR), read or
	// skipped by it: every cache miss, and every document when there is no store.
	Extracted int64
	// Hits counts documents whose extraction came from the cache.
	Hits int64
	// Misses counts documents looked up and not found in the cache (Corrupt included).
	Misses int64
	// Corrupt counts entries found that did not verify (checksum, key or payload).
	Corrupt int64
	// Errors counts failed cache reads and writes (the document was extracted anyway).
	Errors int64
	// OCR sums the OCR statistics of the Extracted documents the next reader read: the pages
	// OCR ran on.
	OCR reader.OCRStats
}

// Reader reads documents through a cache. It is safe for concurrent use.
type Reader struct {
	next     DocumentReader
	store    Store
	settings string
	log      *slog.Logger

	mu    sync.Mutex
	stats Stats
}

// NewReader returns a Reader that looks every document up in store (nil: no cache, every
// document is extracted) under its raw SHA-256 and settings (a canonical string of the reader
// and OCR options that change what next extracts), extracts misses with next and stores them.
// Cache errors are logged to log (nil: discarded) and counted; they never fail a read.
func NewReader(next DocumentReader, store Store, settings string, log *slog.Logger) *Reader {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Reader{next: next, store: store, settings: settings, log: log}
}

// Key returns the cache key of a document with raw SHA-256 rawSHA256 (hex) read with settings:
// the hex SHA-256 of reader.Version, settings and rawSHA256.
func Key(rawSHA256, settings string) string {
	sum := sha256.Sum256([]byte("ragops extraction\x00" + reader.Version + "\x00" + settings + "\x00" + rawSHA256))
	return hex.EncodeToString(sum[:])
}

// Checksum returns an entry's checksum: the hex SHA-256 of key, a zero byte and payload.
func Checksum(key string, payload []byte) string {
	h := sha256.New()
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write(payload)
	return hex.EncodeToString(h.Sum(nil))
}

// Group returns the group an entry of raw SHA-256 rawSHA256 is collected by: its first 16 hex
// digits, the corpus listing's document hash (corpus.Document.Hash).
func Group(rawSHA256 string) string { return rawSHA256[:16] }

// Stats returns the counts so far.
func (r *Reader) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

func (r *Reader) count(f func(*Stats)) {
	r.mu.Lock()
	f(&r.stats)
	r.mu.Unlock()
}

// Read returns data's document from the cache, or extracts it with the next reader and
// stores it. Errors are the next reader's; a document it fails to read (a skip such as
// Encrypted or OCRFailed, which may be passing) is not cached and is extracted again next time.
func (r *Reader) Read(ctx context.Context, data []byte) (reader.Document, error) {
	sum := sha256.Sum256(data)
	return r.read(ctx, hex.EncodeToString(sum[:]), func() (reader.Document, error) { return r.next.Read(ctx, data) })
}

// Cached returns the document of raw SHA-256 rawSHA256 (hex) from the cache without
// extracting it: ok is false when there is no cache or it holds no verified entry for those
// bytes and settings. It counts a hit or a miss (and a corrupt entry) as Read does.
func (r *Reader) Cached(ctx context.Context, rawSHA256 string) (doc reader.Document, ok bool) {
	if r.store == nil {
		return reader.Document{}, false
	}
	if doc, ok = r.lookup(ctx, Key(rawSHA256, r.settings)); ok {
		r.count(func(s *Stats) { s.Hits++ })
	} else {
		r.count(func(s *Stats) { s.Misses++ })
	}
	return doc, ok
}

// FileReader is a DocumentReader that also reads a document from a file without a copy of
// all of it in memory (reader.Mux.ReadAt).
type FileReader interface {
	ReadAt(ctx context.Context, r io.ReaderAt, size int64) (reader.Document, error)
}

// ReadAt reads the document of size bytes in ra as Read reads its bytes. Its raw SHA-256 is
// taken by streaming ra; a miss is extracted with next's ReadAt when next is a FileReader
// (a PDF is then never held whole in memory), from a copy read into memory otherwise.
func (r *Reader) ReadAt(ctx context.Context, ra io.ReaderAt, size int64) (reader.Document, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(ra, 0, size)); err != nil {
		return reader.Document{}, err
	}
	return r.read(ctx, hex.EncodeToString(h.Sum(nil)), func() (reader.Document, error) {
		if fr, ok := r.next.(FileReader); ok {
			return fr.ReadAt(ctx, ra, size)
		}
		data := make([]byte, size)
		if _, err := io.ReadFull(io.NewSectionReader(ra, 0, size), data); err != nil {
			return reader.Document{}, err
		}
		return r.next.Read(ctx, data)
	})
}

// read returns the document of raw SHA-256 raw (hex) from the cache, or extracts it and
// stores it.
func (r *Reader) read(ctx context.Context, raw string, extract func() (reader.Document, error)) (reader.Document, error) {
	key := Key(raw, r.settings)
	if r.store != nil {
		if doc, ok := r.lookup(ctx, key); ok {
			r.count(func(s *Stats) { s.Hits++ })
			return doc, nil
		}
		r.count(func(s *Stats) { s.Misses++ })
	}
	doc, err := extract()
	r.count(func(s *Stats) {
		s.Extracted++
		if err == nil && doc.OCR != nil {
			s.OCR.Add(*doc.OCR)
		}
	})
	if err != nil {
		return doc, err
	}
	if r.store != nil {
		r.save(ctx, key, raw, doc)
	}
	return doc, nil
}

// lookup returns the verified entry for key; a missing, unreadable or corrupt one is not ok.
func (r *Reader) lookup(ctx context.Context, key string) (reader.Document, bool) {
	e, ok, err := r.store.Get(ctx, key)
	if err != nil {
		r.count(func(s *Stats) { s.Errors++ })
		r.log.Warn("extraction cache: read failed; extracting", "key", key, "error", err)
		return reader.Document{}, false
	}
	if !ok {
		return reader.Document{}, false
	}
	doc, err := verify(key, e)
	if err != nil {
		r.count(func(s *Stats) { s.Corrupt++ })
		r.log.Warn("extraction cache: entry does not verify; extracting again", "key", key, "error", err)
		return reader.Document{}, false
	}
	return doc, true
}

// verify checks an entry against its key and checksum and decodes its payload.
func verify(key string, e vectorstore.Blob) (reader.Document, error) {
	switch {
	case e.Key != key:
		return reader.Document{}, fmt.Errorf("entry holds key %q", e.Key)
	case e.Sum != Checksum(key, e.Payload):
		return reader.Document{}, fmt.Errorf("checksum %q does not match the payload", e.Sum)
	}
	zr, err := gzip.NewReader(bytes.NewReader(e.Payload))
	if err != nil {
		return reader.Document{}, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return reader.Document{}, err
	}
	return reader.Decode(raw)
}

// Payload returns the stored form of doc: gzip (default level, no header fields) of
// reader.Encode of doc without its Source, which names one corpus document while the entry
// serves every document with the same bytes. Equal documents give equal payloads.
func Payload(doc reader.Document) ([]byte, error) {
	doc.Source = nil
	raw, err := reader.Encode(doc)
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

func (r *Reader) save(ctx context.Context, key, raw string, doc reader.Document) {
	payload, err := Payload(doc)
	if err == nil && len(payload) > MaxPayloadBytes {
		r.log.Info("extraction cache: document too large to cache", "key", key, "bytes", len(payload))
		return
	}
	if err == nil {
		err = r.store.Put(ctx, vectorstore.Blob{Key: key, Group: Group(raw), Payload: payload, Sum: Checksum(key, payload)})
	}
	if err != nil {
		r.count(func(s *Stats) { s.Errors++ })
		r.log.Warn("extraction cache: write failed", "key", key, "error", err)
	}
}
