package vectorstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-openapi/strfmt"
	"github.com/google/uuid"
	"github.com/weaviate/weaviate/entities/models"
	"golang.org/x/sync/errgroup"
)

// Chunk is one chunk object to write: its span in the source document, its text and vector.
type Chunk struct {
	// DocID identifies the source document within the corpus (required).
	DocID string
	// Ordinal is the chunk's 0-based position within the document.
	Ordinal int
	// Start and End are byte offsets into the document text, [Start, End).
	Start, End int
	// Text is the chunk text (BM25-indexed).
	Text string
	// HeadingPath lists the enclosing headings, outermost first; may be empty.
	HeadingPath []string
	// PageStart and PageEnd are 1-based pages for paged formats, 0 when unknown.
	PageStart, PageEnd int
	// DocHash is the document's content hash, stored for incremental sync; may be empty.
	DocHash string
	// Vector is the embedding; its length must equal the collection's dimensions.
	Vector []float32
	// Properties are the document's metadata properties (name -> string, []string, int64,
	// float64, bool, or an RFC 3339 date string), set on the object beside ragops's own;
	// the collection must have them ([Store.EnsureProperties]). May be nil.
	Properties map[string]any
	// MetaHash is stored as PropMetaHash when not empty.
	MetaHash string
	// AccessGroups are the groups that may read the document (package access), written with
	// AccessKey when AccessKey is set; a collection without [CollectionInfo.AccessProperties]
	// refuses them.
	AccessGroups []string
	// AccessKey is the key of the access rules AccessGroups come from; "" writes neither.
	AccessKey string
}

// chunkNamespace is the UUIDv5 namespace of chunk IDs: UUIDv5(URL namespace, "https://ragops.dev/chunk").
var chunkNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://ragops.dev/chunk"))

// ChunkID returns the deterministic object ID of a chunk: UUIDv5 (RFC 9562, SHA-1 name-based)
// in the ragops chunk namespace of "revision\x00docID\x00ordinal". Writing the same chunk twice
// overwrites one object, so retried or resumed imports never duplicate.
func ChunkID(revision, docID string, ordinal int) uuid.UUID {
	name := make([]byte, 0, len(revision)+len(docID)+12)
	name = append(name, revision...)
	name = append(name, 0)
	name = append(name, docID...)
	name = append(name, 0)
	name = strconv.AppendInt(name, int64(ordinal), 10)
	return uuid.NewSHA1(chunkNamespace, name)
}

func (c *Chunk) validate(i, dims int, collection string) error {
	switch {
	case c.DocID == "":
		return fmt.Errorf("vectorstore: upsert %s: chunk %d has an empty DocID", collection, i)
	case c.Ordinal < 0:
		return fmt.Errorf("vectorstore: upsert %s: document %q chunk %d: negative Ordinal %d", collection, c.DocID, i, c.Ordinal)
	case c.Start < 0 || c.End < c.Start:
		return fmt.Errorf("vectorstore: upsert %s: document %q chunk %d: bad span [%d, %d)", collection, c.DocID, c.Ordinal, c.Start, c.End)
	case len(c.Vector) != dims:
		return &DimensionError{Op: "upsert", Collection: collection, Expected: dims, Actual: len(c.Vector), DocID: c.DocID, Ordinal: c.Ordinal}
	case c.AccessKey == "" && len(c.AccessGroups) > 0:
		return fmt.Errorf("vectorstore: upsert %s: document %q chunk %d: access groups without an access key", collection, c.DocID, c.Ordinal)
	}
	return nil
}

func (c *Chunk) object(collection, revision string) *models.Object {
	hp := c.HeadingPath
	if hp == nil {
		hp = []string{}
	}
	props := map[string]any{
		PropText:         c.Text,
		PropDocID:        c.DocID,
		PropChunkOrdinal: int64(c.Ordinal),
		PropStart:        int64(c.Start),
		PropEnd:          int64(c.End),
		PropHeadingPath:  hp,
		PropRevision:     revision,
		PropPageStart:    int64(c.PageStart),
		PropPageEnd:      int64(c.PageEnd),
		PropDocHash:      c.DocHash,
	}
	for k, v := range c.Properties {
		if _, own := props[k]; !own {
			props[k] = v
		}
	}
	if c.MetaHash != "" {
		props[PropMetaHash] = c.MetaHash
	}
	if c.AccessKey != "" {
		groups := c.AccessGroups
		if groups == nil {
			groups = []string{}
		}
		props[PropAccessGroups], props[PropAccessKey] = groups, c.AccessKey
	}
	return &models.Object{
		Class:      collection,
		ID:         strfmt.UUID(ChunkID(revision, c.DocID, c.Ordinal).String()),
		Properties: props,
		Vector:     c.Vector,
	}
}

// Upsert writes chunks into the revision collection over gRPC batch requests of
// Config.BatchSize chunks, Config.Concurrency requests in flight; only those batches are
// converted at a time, so memory beyond the caller's slice is bounded. Object IDs are
// [ChunkID]s of the collection's revision, so writing a chunk again replaces it.
//
// Both error channels are checked: the call's error and the per-object errors of the batch
// reply (which arrive with a nil call error). Transient failures of a whole request or of single
// objects are retried with Config.Retry backoff, resending only the failed objects.
//
// Errors: invalid chunk (empty DocID, bad span); [*DimensionError] for a vector of the wrong
// length (checked before sending; the server's own check maps to the same type);
// [*CollectionNotFoundError]; [*BatchError] for objects the server refused; [*RetryableError]
// when retries ran out. Chunks in batches that succeeded stay written.
func (s *Store) Upsert(ctx context.Context, collection string, chunks []Chunk) error {
	info, err := s.Collection(ctx, collection)
	if err != nil {
		return err
	}
	for i := range chunks {
		if err := chunks[i].validate(i, info.Dimensions, collection); err != nil {
			return err
		}
		if chunks[i].AccessKey != "" && !info.AccessProperties {
			return &AccessPropertiesError{Collection: collection}
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Concurrency)
	for lo := 0; lo < len(chunks); lo += s.cfg.BatchSize {
		batch := chunks[lo:min(lo+s.cfg.BatchSize, len(chunks))]
		g.Go(func() error { return s.upsertBatch(gctx, info, batch) })
	}
	return g.Wait()
}

func (s *Store) upsertBatch(ctx context.Context, info CollectionInfo, chunks []Chunk) error {
	pending := make([]int, len(chunks)) // indexes into chunks still to write
	for i := range pending {
		pending[i] = i
	}
	var failed []ObjectFailure
	err := s.retry(ctx, func() error {
		objs := make([]*models.Object, len(pending))
		for j, i := range pending {
			objs[j] = chunks[i].object(info.Name, info.Revision)
		}
		b := s.client.Batch().ObjectsBatcher().WithObjects(objs...)
		s.requests.upserts.Add(1)
		if s.cfg.WriteConsistency != "" {
			b = b.WithConsistencyLevel(s.cfg.WriteConsistency)
		}
		resp, err := b.Do(ctx)
		if err != nil {
			return classify("upsert", info.Name, err)
		}
		if len(resp) != len(objs) {
			return &ServerError{Op: "upsert", Collection: info.Name,
				Err: fmt.Errorf("batch reply has %d results for %d objects", len(resp), len(objs))}
		}
		var again []int
		var transientMsg string
		failed = failed[:0]
		for j, r := range resp {
			msg, ok := objectError(r)
			if ok {
				continue
			}
			c := &chunks[pending[j]]
			if transientMessage(msg) {
				again = append(again, pending[j])
				transientMsg = msg
				continue
			}
			if de, isDim := classify("upsert", info.Name, fmt.Errorf("%s", msg)).(*DimensionError); isDim {
				de.DocID, de.Ordinal = c.DocID, c.Ordinal
				if de.Expected == 0 {
					de.Expected = info.Dimensions
				}
				return de
			}
			if notFoundRe.MatchString(msg) {
				return &CollectionNotFoundError{Op: "upsert", Collection: info.Name, Err: fmt.Errorf("%s", msg)}
			}
			failed = append(failed, ObjectFailure{DocID: c.DocID, Ordinal: c.Ordinal, ID: string(objs[j].ID), Message: msg})
		}
		if len(failed) > 0 {
			return batchError(info.Name, failed)
		}
		pending = again
		if len(again) > 0 {
			return &RetryableError{Op: "upsert", Collection: info.Name,
				Err: fmt.Errorf("%d objects failed transiently: %s", len(again), transientMsg)}
		}
		return nil
	})
	return err
}

func batchError(collection string, failed []ObjectFailure) *BatchError {
	e := &BatchError{Collection: collection, Total: len(failed)}
	e.Failed = append([]ObjectFailure(nil), failed[:min(len(failed), maxReportedFailures)]...)
	return e
}

// objectError returns the per-object error text of a batch result; ok is true on success.
func objectError(r models.ObjectsGetResponse) (msg string, ok bool) {
	if r.Result == nil {
		return "", true
	}
	if r.Result.Errors != nil && len(r.Result.Errors.Error) > 0 {
		var parts []string
		for _, e := range r.Result.Errors.Error {
			if e != nil {
				parts = append(parts, e.Message)
			}
		}
		return strings.Join(parts, "; "), false
	}
	if r.Result.Status != nil && *r.Result.Status == models.ObjectsGetResponseAO2ResultStatusFAILED {
		return "failed without a message", false
	}
	return "", true
}
