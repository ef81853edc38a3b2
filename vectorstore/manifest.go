package vectorstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-openapi/strfmt"
	"github.com/google/uuid"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/fault"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
	"github.com/weaviate/weaviate/entities/models"
)

// Property names of a manifest record (see [ManifestRecord]).
const (
	PropManifestDocID    = "docId"     // the document's ID; filterable, the read cursor
	PropManifestHash     = "docHash"   // the raw content hash its chunks were written from
	PropManifestChunks   = "chunks"    // its chunk count
	PropManifestComplete = "complete"  // every chunk written; filterable
	PropManifestListing  = "listing"   // the S3 listing identity its bytes had
	PropManifestShard    = "shard"     // the shard that wrote it, of
	PropManifestShards   = "shards"    // that many shards; both filterable
	PropManifestMetaHash = "metaHash"  // the metadata hash its chunks' properties hold
	PropManifestAccess   = "accessKey" // the access key its chunks' groups were computed under
	PropManifestSum      = "rawSha256" // the full SHA-256 of the raw bytes docHash begins
)

// manifestDescription marks a collection made by [Store.EnsureManifest].
const manifestDescription = "ragops document manifest (no vectors)"

// ManifestRecord is what a revision's manifest says of one document: the raw content hash
// its chunks were made from, how many chunks it has, and whether they are all written. A
// build writes the record incomplete before the document's chunks and complete after them,
// so a record that is not complete is a document whose write was interrupted (its chunks
// may be partial): it is written again whole.
type ManifestRecord struct {
	DocID string
	// Hash is the document's raw content hash (corpus.Document.Hash).
	Hash string
	// Chunks is its number of chunk objects in the collection.
	Chunks int
	// Complete is true once all Chunks were written.
	Complete bool
	// Listing is the object's listing identity for an S3 source (key, ETag and size hashed;
	// corpus.Document.Listing), "" for other sources: a sync whose listing shows the same
	// identity knows the object unchanged without downloading it.
	Listing string
	// Shard and Shards are the build shard the document belongs to (corpus.Shard) and the
	// shard count it was assigned under: a shard reads the records of its own documents only.
	Shard, Shards int
	// MetaHash is the metadata hash its chunks' properties were written with (PropMetaHash;
	// "" with no fields declared), and AccessKey the access key of their groups
	// (PropAccessKey; "" without access rules): a sync compares them with the document's
	// current ones to update properties or groups without embedding.
	MetaHash, AccessKey string
	// Sum is the hex SHA-256 of the raw bytes (corpus.Document.SHA256; Hash is its first 16
	// digits), "" when the writer did not read them (a migrated record): a sync finds the
	// extracted document of an object it does not download in the extraction cache by it.
	Sum string
}

// State is the record as a [DocumentState]: a complete record is Consistent with its hash
// and chunk count; an incomplete one is Mixed (neither Consistent nor Complete).
func (r ManifestRecord) State() DocumentState {
	if !r.Complete {
		return DocumentState{Chunks: r.Chunks, MaxOrdinal: r.Chunks - 1, Mixed: true}
	}
	return DocumentState{Hash: r.Hash, Chunks: r.Chunks, MaxOrdinal: r.Chunks - 1, AccessKey: r.AccessKey}
}

// manifestNamespace is the UUIDv5 namespace of manifest record IDs:
// UUIDv5(URL namespace, "https://ragops.dev/manifest").
var manifestNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://ragops.dev/manifest"))

// ManifestRecordID is the object ID of document docID's record: UUIDv5 (RFC 9562) of docID
// in the ragops manifest namespace, so every writer of a document writes one object.
func ManifestRecordID(docID string) uuid.UUID {
	return uuid.NewSHA1(manifestNamespace, []byte("doc\x00"+docID))
}

// manifestMarkerID is the object ID of the record that says the manifest covers its
// collection (every document with chunks has a record); see [Store.MarkManifestCovers].
var manifestMarkerID = uuid.NewSHA1(manifestNamespace, []byte("covers"))

// ManifestName returns the manifest collection of the revision collection collection:
//
//	RagManifest_<collection without its "Rag_">
//
// shortened, when over [MaxNameLength], to its first characters and the first 16 hex digits
// of SHA-256(collection). It does not start with "Rag_", so no listing of an Index's
// revision collections by prefix includes it.
func ManifestName(collection string) string {
	name := "RagManifest_" + strings.TrimPrefix(collection, "Rag_")
	if len(name) <= MaxNameLength {
		return name
	}
	sum := sha256.Sum256([]byte(collection))
	h := hex.EncodeToString(sum[:8])
	return name[:MaxNameLength-len(h)-1] + "_" + h
}

// EnsureManifest creates the manifest collection of collection (vector-less, as
// [Store.EnsureBlobCollection]), or adds the record properties an existing one lacks (one
// made by an older ragops).
//
// Errors: a collection of that name that is not a manifest ([*ServerError]); typed server errors.
func (s *Store) EnsureManifest(ctx context.Context, collection string) error {
	name := ManifestName(collection)
	if err := ValidateName(name); err != nil {
		return err
	}
	text := func(name string, filterable bool) *models.Property {
		return &models.Property{Name: name, DataType: []string{"text"}, Tokenization: "field",
			IndexFilterable: boolp(filterable), IndexSearchable: boolp(false)}
	}
	num := func(name string, filterable bool) *models.Property {
		return &models.Property{Name: name, DataType: []string{"int"}, IndexFilterable: boolp(filterable)}
	}
	class := &models.Class{
		Class: name, Description: manifestDescription, Vectorizer: "none", VectorIndexType: IndexFlat,
		VectorIndexConfig: map[string]any{"skipDefaultQuantization": true},
		Properties: []*models.Property{
			text(PropManifestDocID, true), text(PropManifestHash, false), num(PropManifestChunks, false),
			{Name: PropManifestComplete, DataType: []string{"boolean"}, IndexFilterable: boolp(true)},
			text(PropManifestListing, false), num(PropManifestShard, true), num(PropManifestShards, true),
			text(PropManifestMetaHash, false), text(PropManifestAccess, false), text(PropManifestSum, false),
		},
	}
	return s.createDescribedClass(ctx, class, "manifest")
}

// PutManifest writes records into collection's manifest (one object per document, replacing
// what was there), in one batch.
//
// Errors: a record without DocID; [*BatchError] naming refused records; typed server errors.
func (s *Store) PutManifest(ctx context.Context, collection string, records []ManifestRecord) error {
	if len(records) == 0 {
		return nil
	}
	name := ManifestName(collection)
	objs := make([]*models.Object, len(records))
	for i, r := range records {
		if r.DocID == "" {
			return fmt.Errorf("vectorstore: put manifest of %s: record %d has no document id", collection, i)
		}
		objs[i] = manifestObject(name, ManifestRecordID(r.DocID), r)
	}
	return s.putManifestObjects(ctx, name, objs)
}

func manifestObject(name string, id uuid.UUID, r ManifestRecord) *models.Object {
	return &models.Object{Class: name, ID: strfmt.UUID(id.String()), Properties: map[string]any{
		PropManifestDocID: r.DocID, PropManifestHash: r.Hash, PropManifestChunks: int64(r.Chunks),
		PropManifestComplete: r.Complete, PropManifestListing: r.Listing,
		PropManifestShard: int64(r.Shard), PropManifestShards: int64(r.Shards),
		PropManifestMetaHash: r.MetaHash, PropManifestAccess: r.AccessKey, PropManifestSum: r.Sum,
	}}
}

func (s *Store) putManifestObjects(ctx context.Context, name string, objs []*models.Object) error {
	return s.retry(ctx, func() error {
		bt := s.client.Batch().ObjectsBatcher().WithObjects(objs...)
		if s.cfg.WriteConsistency != "" {
			bt = bt.WithConsistencyLevel(s.cfg.WriteConsistency)
		}
		resp, err := bt.Do(ctx)
		if err != nil {
			return classify("put manifest", name, err)
		}
		var failed []ObjectFailure
		for i, r := range resp {
			if msg, ok := objectError(r); !ok {
				if transientMessage(msg) {
					return &RetryableError{Op: "put manifest", Collection: name, Err: errors.New(msg)}
				}
				id := ""
				if i < len(objs) {
					id = string(objs[i].ID)
				}
				failed = append(failed, ObjectFailure{ID: id, Message: msg})
			}
		}
		if len(failed) > 0 {
			return batchError(name, failed)
		}
		return nil
	})
}

// MarkManifestCovers records that collection's manifest holds a record of every document
// with chunks in collection (a build of an empty collection, or a copy of a covered
// manifest): from then on builds trust the manifest. A manifest without the mark (a
// revision built before manifests, a migration that stopped part-way) is rebuilt from the
// collection shard by shard (see [Store.MarkManifestShard]).
func (s *Store) MarkManifestCovers(ctx context.Context, collection string) error {
	name := ManifestName(collection)
	return s.putManifestObjects(ctx, name, []*models.Object{manifestObject(name, manifestMarkerID, ManifestRecord{Complete: true})})
}

// manifestShardMarkerID is the object ID of the record that says the manifest holds a record
// of every document of shard of shards (see [Store.MarkManifestShard]).
func manifestShardMarkerID(shard, shards int) uuid.UUID {
	return uuid.NewSHA1(manifestNamespace, []byte(fmt.Sprintf("covers\x00%d/%d", shard, shards)))
}

// MarkManifestShard records that collection's manifest holds a record of every document of
// shard of shards (corpus.Shard) with chunks in collection: a migration writes the records
// of its own shard's documents only, then this mark, so that no shard writes a record of a
// document another shard may be writing (concurrent migrations cannot overwrite a fresh
// record with a stale one). Once every shard of shards is marked, it marks the whole
// manifest as covering collection ([Store.MarkManifestCovers]); all reports whether it did.
// A mark is an object of a fixed ID, so shards marking at once write one object each.
//
// Errors: typed server and network errors.
func (s *Store) MarkManifestShard(ctx context.Context, collection string, shard, shards int) (all bool, err error) {
	name := ManifestName(collection)
	if err := s.putManifestObjects(ctx, name, []*models.Object{manifestObject(name, manifestShardMarkerID(shard, shards), ManifestRecord{Complete: true})}); err != nil {
		return false, err
	}
	for k := range shards {
		if ok, err := s.manifestHas(ctx, name, manifestShardMarkerID(k, shards)); err != nil || !ok {
			return false, err
		}
	}
	return true, s.MarkManifestCovers(ctx, collection)
}

// ManifestCoversShard reports whether collection's manifest holds a record of every document
// of shard of shards: it covers the collection ([Store.ManifestCovers]) or that shard was
// migrated ([Store.MarkManifestShard]).
//
// Errors: typed server and network errors (a missing manifest is false, nil).
func (s *Store) ManifestCoversShard(ctx context.Context, collection string, shard, shards int) (bool, error) {
	if ok, err := s.ManifestCovers(ctx, collection); err != nil || ok {
		return ok, err
	}
	return s.manifestHas(ctx, ManifestName(collection), manifestShardMarkerID(shard, shards))
}

// ManifestCovers reports whether collection's manifest exists and covers it (see
// [Store.MarkManifestCovers]).
//
// Errors: typed server and network errors (a missing manifest is false, nil).
func (s *Store) ManifestCovers(ctx context.Context, collection string) (bool, error) {
	return s.manifestHas(ctx, ManifestName(collection), manifestMarkerID)
}

// manifestHas reports whether the manifest collection name holds the object id (false, nil
// when it or the collection is missing).
func (s *Store) manifestHas(ctx context.Context, name string, id uuid.UUID) (bool, error) {
	var found bool
	err := s.retry(ctx, func() error {
		g := s.client.Data().ObjectsGetter().WithClassName(name).WithID(id.String())
		if s.cfg.ReadConsistency != "" {
			g = g.WithConsistencyLevel(s.cfg.ReadConsistency)
		}
		objs, err := g.Do(ctx)
		if err != nil {
			var wce *fault.WeaviateClientError
			if errors.As(err, &wce) && wce.StatusCode == http.StatusNotFound {
				found = false
				return nil
			}
			return classify("get manifest", name, err)
		}
		found = len(objs) > 0
		return nil
	})
	return found, err
}

// ManifestRead is what [Store.ManifestRecords] read: the records and the objects it fetched
// to find them (requests' results summed), so a caller can tell what a state read cost.
type ManifestRead struct {
	Records map[string]ManifestRecord
	// Objects is how many manifest objects the reads returned.
	Objects int
	// Restamp are the records kept that were written under another shard count: the caller
	// writes them again with its own Shard and Shards.
	Restamp []ManifestRecord
}

// ManifestRecords reads the records of shard of shards from collection's manifest: those
// stamped with that shard (a where filter on shard and shards), paged in docId order with a
// where-filter cursor (docId greater than the last one read, pageSize a page, default 1000;
// Weaviate's own cursor takes no filter, and offset paging stops at QUERY_MAXIMUM_RESULTS),
// plus those stamped under another shard count that keep accepts (one more filtered read:
// empty unless the Index's shard count changed). It reads no chunk: the cost is one object a
// document of the shard, whatever the collection's chunk count.
//
// Errors: typed server and network errors ([*CollectionNotFoundError] for a missing manifest).
func (s *Store) ManifestRecords(ctx context.Context, collection string, shard, shards, pageSize int, keep func(docID string) bool) (ManifestRead, error) {
	if pageSize <= 0 {
		pageSize = 1000
	}
	if shards < 1 {
		shards = 1
	}
	name := ManifestName(collection)
	out := ManifestRead{Records: map[string]ManifestRecord{}}
	intEq := func(prop string, v int) *filters.WhereBuilder {
		return filters.Where().WithPath([]string{prop}).WithOperator(filters.Equal).WithValueInt(int64(v))
	}
	mine := filters.Where().WithOperator(filters.And).WithOperands([]*filters.WhereBuilder{
		intEq(PropManifestShard, shard), intEq(PropManifestShards, shards)})
	// Records of another shard count (the marker has 0 shards and no document id).
	other := filters.Where().WithOperator(filters.And).WithOperands([]*filters.WhereBuilder{
		filters.Where().WithPath([]string{PropManifestShards}).WithOperator(filters.NotEqual).WithValueInt(int64(shards)),
		filters.Where().WithPath([]string{PropManifestShards}).WithOperator(filters.GreaterThan).WithValueInt(0)})
	for _, base := range []*filters.WhereBuilder{mine, other} {
		last := ""
		for {
			where := base
			if last != "" {
				where = filters.Where().WithOperator(filters.And).WithOperands([]*filters.WhereBuilder{base,
					filters.Where().WithPath([]string{PropManifestDocID}).WithOperator(filters.GreaterThan).WithValueText(last)})
			}
			res, err := s.searchManifest(ctx, name, where, pageSize)
			if err != nil {
				return out, err
			}
			out.Objects += len(res)
			for _, r := range res {
				rec := recordOf(r.Properties)
				if rec.DocID == "" || keep != nil && !keep(rec.DocID) {
					continue
				}
				if rec.Shards != shards {
					out.Restamp = append(out.Restamp, rec)
				}
				out.Records[rec.DocID] = rec
			}
			if len(res) < pageSize {
				break
			}
			last = recordOf(res[len(res)-1].Properties).DocID
		}
	}
	return out, nil
}

// searchManifest returns up to limit objects of the manifest collection name that match
// where, in docId order, with the record properties.
func (s *Store) searchManifest(ctx context.Context, name string, where *filters.WhereBuilder, limit int) ([]graphql.SearchResult, error) {
	var res []graphql.SearchResult
	err := s.retry(ctx, func() error {
		var err error
		q := s.client.Experimental().Search().WithCollection(name).WithLimit(limit).WithWhere(where).
			WithSort(graphql.Sort{Path: []string{PropManifestDocID}, Order: graphql.Asc}).
			WithProperties(PropManifestDocID, PropManifestHash, PropManifestChunks, PropManifestComplete,
				PropManifestListing, PropManifestShard, PropManifestShards, PropManifestMetaHash, PropManifestAccess, PropManifestSum)
		if s.cfg.ReadConsistency != "" {
			q = q.WithConsistencyLevel(s.cfg.ReadConsistency)
		}
		res, err = q.Do(ctx)
		return classify("read manifest", name, err)
	})
	return res, err
}

// ManifestRecordsOf reads the records of the documents ids from collection's manifest,
// whatever shard wrote them, one filtered read (docId in the batch) per
// [DeleteBatchDocuments] ids: what a caller that meets documents in batches (the lead of an
// HTTP stage) holds is one batch's records, not the manifest. A document without a record is
// absent from the result.
//
// Errors: typed server and network errors ([*CollectionNotFoundError] for a missing manifest).
func (s *Store) ManifestRecordsOf(ctx context.Context, collection string, ids []string) (map[string]ManifestRecord, error) {
	name := ManifestName(collection)
	out := make(map[string]ManifestRecord, len(ids))
	for lo := 0; lo < len(ids); lo += DeleteBatchDocuments {
		batch := ids[lo:min(lo+DeleteBatchDocuments, len(ids))]
		where := filters.Where().WithPath([]string{PropManifestDocID}).WithOperator(filters.ContainsAny).WithValueText(batch...)
		res, err := s.searchManifest(ctx, name, where, len(batch))
		if err != nil {
			return out, err
		}
		for _, r := range res {
			if rec := recordOf(r.Properties); rec.DocID != "" {
				out[rec.DocID] = rec
			}
		}
	}
	return out, nil
}

// recordOf reads a manifest record from an object's properties.
func recordOf(p map[string]any) ManifestRecord {
	str := func(k string) string { v, _ := p[k].(string); return v }
	done, _ := p[PropManifestComplete].(bool)
	return ManifestRecord{DocID: str(PropManifestDocID), Hash: str(PropManifestHash), Chunks: ordinalOf(p[PropManifestChunks]),
		Complete: done, Listing: str(PropManifestListing), Shard: ordinalOf(p[PropManifestShard]), Shards: ordinalOf(p[PropManifestShards]),
		MetaHash: str(PropManifestMetaHash), AccessKey: str(PropManifestAccess), Sum: str(PropManifestSum)}
}

// DeleteManifestRecords removes the records of the documents ids from collection's manifest,
// one batch delete per [DeleteBatchDocuments] ids. A build removes a document's chunks first,
// then its record: a stop between the two leaves a record of a document no longer in the
// corpus, which the next run deletes again.
//
// Errors: typed server and network errors.
func (s *Store) DeleteManifestRecords(ctx context.Context, collection string, ids []string) error {
	name := ManifestName(collection)
	for lo := 0; lo < len(ids); lo += DeleteBatchDocuments {
		batch := ids[lo:min(lo+DeleteBatchDocuments, len(ids))]
		where := filters.Where().WithPath([]string{PropManifestDocID}).WithOperator(filters.ContainsAny).WithValueText(batch...)
		if _, err := s.deleteWhere(ctx, name, where); err != nil {
			return err
		}
	}
	return nil
}

// DeleteManifest drops collection's manifest (nothing when there is none): the next build or
// sync rebuilds it from the collection. [Store.DeleteCollection] drops it with its collection.
//
// Errors: typed server and network errors.
func (s *Store) DeleteManifest(ctx context.Context, collection string) error {
	name := ManifestName(collection)
	err := s.retry(ctx, func() error {
		err := s.client.Schema().ClassDeleter().WithClassName(name).Do(ctx)
		var wce *fault.WeaviateClientError
		if err != nil && !(errors.As(err, &wce) && wce.StatusCode == http.StatusNotFound) {
			return classify("delete manifest", name, err)
		}
		return nil
	})
	s.forget(name)
	return err
}

// ManifestTotals sums a manifest: what the completeness check compares with its collection.
type ManifestTotals struct {
	// Covers is false when the collection has no manifest, or one that does not cover it
	// (a revision built before manifests): the other fields are then 0.
	Covers bool
	// Documents is the number of document records.
	Documents int64
	// Chunks sums the chunk counts of the complete records.
	Chunks int64
	// Incomplete counts the records whose write did not finish.
	Incomplete int64
}

// ManifestTotals sums collection's manifest with two aggregates (no paging): its complete
// records' chunk counts and document count, and its incomplete records.
//
// Errors: typed server and network errors.
func (s *Store) ManifestTotals(ctx context.Context, collection string) (ManifestTotals, error) {
	covers, err := s.ManifestCovers(ctx, collection)
	if err != nil || !covers {
		var nf *CollectionNotFoundError
		if errors.As(err, &nf) {
			err = nil
		}
		return ManifestTotals{}, err
	}
	name := ManifestName(collection)
	isDoc := filters.Where().WithPath([]string{PropManifestShards}).WithOperator(filters.GreaterThan).WithValueInt(0)
	complete := func(v bool) *filters.WhereBuilder {
		return filters.Where().WithOperator(filters.And).WithOperands([]*filters.WhereBuilder{isDoc,
			filters.Where().WithPath([]string{PropManifestComplete}).WithOperator(filters.Equal).WithValueBoolean(v)})
	}
	out := ManifestTotals{Covers: true}
	var n int
	if out.Chunks, n, err = s.sumChunks(ctx, name, complete(true)); err != nil {
		return out, err
	}
	if n, err = s.count(ctx, name, complete(false)); err != nil {
		return out, err
	}
	out.Incomplete = int64(n)
	docs, err := s.count(ctx, name, isDoc)
	out.Documents = int64(docs)
	return out, err
}

// sumChunks aggregates the chunk counts of the manifest records matching where: their sum
// and their number.
func (s *Store) sumChunks(ctx context.Context, name string, where *filters.WhereBuilder) (int64, int, error) {
	var sum float64
	var n int
	err := s.retry(ctx, func() error {
		resp, err := s.client.GraphQL().Aggregate().WithClassName(name).WithWhere(where).
			WithFields(graphql.Field{Name: "meta", Fields: []graphql.Field{{Name: "count"}}},
				graphql.Field{Name: PropManifestChunks, Fields: []graphql.Field{{Name: "sum"}}}).Do(ctx)
		if err != nil {
			return classify("sum manifest", name, err)
		}
		if err := graphQLError("sum manifest", name, resp); err != nil {
			return err
		}
		var out struct {
			Aggregate map[string][]struct {
				Meta struct {
					Count int `json:"count"`
				} `json:"meta"`
				Chunks struct {
					Sum *float64 `json:"sum"`
				} `json:"chunks"`
			}
		}
		b, _ := json.Marshal(resp.Data)
		if err := json.Unmarshal(b, &out); err != nil {
			return &ServerError{Op: "sum manifest", Collection: name, Err: fmt.Errorf("decode aggregate reply: %w", err)}
		}
		rows := out.Aggregate[name]
		if len(rows) == 0 {
			return &ServerError{Op: "sum manifest", Collection: name, Err: fmt.Errorf("aggregate reply has no rows: %s", b)}
		}
		n, sum = rows[0].Meta.Count, 0
		if rows[0].Chunks.Sum != nil {
			sum = *rows[0].Chunks.Sum
		}
		return nil
	})
	return int64(sum), n, err
}

// CopyManifest copies from's manifest into to's (created when missing): every record as it
// is, then the mark that it covers to when from's covers from (a revision filled with
// from's chunks has from's documents). A collection without a manifest copies nothing. It
// pages with Weaviate's cursor (pageSize a page, default 1000) and returns the records copied.
//
// Errors: typed server and network errors.
func (s *Store) CopyManifest(ctx context.Context, from, to string, pageSize int) (int, error) {
	if pageSize <= 0 {
		pageSize = 1000
	}
	covers, err := s.ManifestCovers(ctx, from)
	var nf *CollectionNotFoundError
	if errors.As(err, &nf) || err == nil && !covers {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if err := s.EnsureManifest(ctx, to); err != nil {
		return 0, err
	}
	if err := s.EnsureManifest(ctx, from); err != nil { // the properties it is read with
		return 0, err
	}
	src := ManifestName(from)
	copied, after := 0, ""
	for {
		var res []graphql.SearchResult
		err := s.retry(ctx, func() error {
			var err error
			res, err = s.client.Experimental().Search().WithCollection(src).WithLimit(pageSize).WithAfter(after).
				WithProperties(PropManifestDocID, PropManifestHash, PropManifestChunks, PropManifestComplete,
					PropManifestListing, PropManifestShard, PropManifestShards, PropManifestMetaHash, PropManifestAccess, PropManifestSum).Do(ctx)
			return classify("copy manifest", src, err)
		})
		if err != nil {
			return copied, err
		}
		var recs []ManifestRecord
		for _, r := range res {
			if rec := recordOf(r.Properties); rec.DocID != "" {
				recs = append(recs, rec)
			}
		}
		if err := s.PutManifest(ctx, to, recs); err != nil {
			return copied, err
		}
		copied += len(recs)
		if len(res) < pageSize {
			break
		}
		after = res[len(res)-1].ID
	}
	return copied, s.MarkManifestCovers(ctx, to)
}
