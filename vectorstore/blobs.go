package vectorstore

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-openapi/strfmt"
	"github.com/google/uuid"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/fault"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
	"github.com/weaviate/weaviate/entities/models"
)

// Property names of a blob object (see [Blob]).
const (
	PropBlobKey     = "blobKey"     // the entry's key; filterable
	PropBlobGroup   = "blobGroup"   // what the entry belongs to (a raw content hash); filterable
	PropBlobPayload = "blobPayload" // the payload in base64, text not indexed
	PropBlobSum     = "blobSum"     // a checksum the writer chose; not indexed
)

// blobDescription marks a collection made by [Store.EnsureBlobCollection].
const blobDescription = "ragops blob collection (no vectors)"

// Blob is one entry of a blob collection: a payload stored under a key. The store keeps the
// fields as given; the caller checks Sum against Key and Payload when it reads one back.
type Blob struct {
	// Key names the entry; its object ID is [BlobID] of Key, so writers of one key write one object.
	Key string
	// Group is what the entry belongs to, for [Store.CollectBlobs].
	Group string
	// Payload is the stored bytes.
	Payload []byte
	// Sum is the writer's checksum of Key and Payload.
	Sum string
}

// blobNamespace is the UUIDv5 namespace of blob IDs: UUIDv5(URL namespace, "https://ragops.dev/blob").
var blobNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://ragops.dev/blob"))

// BlobID returns the deterministic object ID of the blob with key key: UUIDv5 (RFC 9562) in the
// ragops blob namespace.
func BlobID(key string) uuid.UUID { return uuid.NewSHA1(blobNamespace, []byte(key)) }

// ExtractionCacheName returns the blob collection that holds the extraction cache of the Corpus
// namespace/corpus:
//
//	RagExtract_<namespace>_<corpus>_<h>
//
// with '-' and '.' mapped to '_' and <h> the first 8 hex digits of SHA-256("namespace/corpus")
// (as [AliasName]); long names are shortened in the readable part. Every Index of the Corpus on
// one Weaviate shares it.
//
// Errors: namespace or corpus empty or not a Kubernetes name.
func ExtractionCacheName(namespace, corpus string) (string, error) {
	if err := checkK8sName("namespace", namespace); err != nil {
		return "", err
	}
	if err := checkK8sName("corpus", corpus); err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(namespace + "/" + corpus))
	h := hex.EncodeToString(sum[:4])
	ns, c := sanitize(namespace), sanitize(corpus)
	fixed := len("RagExtract___") + len(h)
	for fixed+len(ns)+len(c) > MaxNameLength {
		if len(c) >= len(ns) {
			c = c[:len(c)-1]
		} else {
			ns = ns[:len(ns)-1]
		}
	}
	return "RagExtract_" + ns + "_" + c + "_" + h, nil
}

// EnsureBlobCollection creates a collection of blobs without vectors (vectorizer none, a flat
// index that holds nothing), or does nothing when a blob collection of that name exists.
//
// Errors: an invalid name; a collection of that name that is not a blob collection
// ([*ServerError]); typed server errors.
func (s *Store) EnsureBlobCollection(ctx context.Context, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	text := func(name string, filterable bool) *models.Property {
		return &models.Property{Name: name, DataType: []string{"text"}, Tokenization: "field",
			IndexFilterable: boolp(filterable), IndexSearchable: boolp(false)}
	}
	class := &models.Class{
		Class: name, Description: blobDescription, Vectorizer: "none", VectorIndexType: IndexFlat,
		VectorIndexConfig: map[string]any{"skipDefaultQuantization": true},
		Properties: []*models.Property{
			text(PropBlobKey, true), text(PropBlobGroup, true),
			text(PropBlobPayload, false), // base64: Weaviate's blob type is not written by every client path
			text(PropBlobSum, false),
		},
	}
	return s.createDescribedClass(ctx, class, "blob collection")
}

// PutBlob writes b into collection under [BlobID] of b.Key, replacing what was there.
// Writers of one key write one object; the last write wins.
//
// Errors: an empty key; [*BatchError] when the server refused the object; typed server errors.
func (s *Store) PutBlob(ctx context.Context, collection string, b Blob) error {
	if b.Key == "" {
		return fmt.Errorf("vectorstore: put blob in %s: empty key", collection)
	}
	obj := &models.Object{Class: collection, ID: strfmt.UUID(BlobID(b.Key).String()), Properties: map[string]any{
		PropBlobKey: b.Key, PropBlobGroup: b.Group, PropBlobSum: b.Sum,
		PropBlobPayload: base64.StdEncoding.EncodeToString(b.Payload),
	}}
	return s.retry(ctx, func() error {
		bt := s.client.Batch().ObjectsBatcher().WithObjects(obj)
		if s.cfg.WriteConsistency != "" {
			bt = bt.WithConsistencyLevel(s.cfg.WriteConsistency)
		}
		resp, err := bt.Do(ctx)
		if err != nil {
			return classify("put blob", collection, err)
		}
		for _, r := range resp {
			if msg, ok := objectError(r); !ok {
				if transientMessage(msg) {
					return &RetryableError{Op: "put blob", Collection: collection, Err: errors.New(msg)}
				}
				return batchError(collection, []ObjectFailure{{DocID: b.Key, ID: string(obj.ID), Message: msg}})
			}
		}
		return nil
	})
}

// GetBlob reads the blob stored under [BlobID] of key; ok is false when there is none. The
// returned Key is the one stored (it differs from key only if the object was overwritten by a
// foreign writer); a payload that is not valid base64 comes back nil.
//
// Errors: typed server and network errors ([*CollectionNotFoundError] included).
func (s *Store) GetBlob(ctx context.Context, collection, key string) (b Blob, ok bool, err error) {
	var objs []*models.Object
	err = s.retry(ctx, func() error {
		var err error
		g := s.client.Data().ObjectsGetter().WithClassName(collection).WithID(BlobID(key).String())
		if s.cfg.ReadConsistency != "" {
			g = g.WithConsistencyLevel(s.cfg.ReadConsistency)
		}
		objs, err = g.Do(ctx)
		if err != nil {
			var wce *fault.WeaviateClientError
			if errors.As(err, &wce) && wce.StatusCode == http.StatusNotFound {
				objs = nil
				return nil
			}
			return classify("get blob", collection, err)
		}
		return nil
	})
	if err != nil || len(objs) == 0 || objs[0] == nil {
		return Blob{}, false, err
	}
	props, _ := objs[0].Properties.(map[string]any)
	str := func(k string) string { v, _ := props[k].(string); return v }
	b = Blob{Key: str(PropBlobKey), Group: str(PropBlobGroup), Sum: str(PropBlobSum)}
	b.Payload, _ = base64.StdEncoding.DecodeString(str(PropBlobPayload))
	return b, true, nil
}

// CollectBlobs deletes every blob of collection whose group keep rejects, paging through the
// collection with a cursor (group only, pageSize a page, default 1000), and returns how many it
// deleted. A missing collection has nothing to collect.
//
// Errors: typed server and network errors.
func (s *Store) CollectBlobs(ctx context.Context, collection string, pageSize int, keep func(group string) bool) (int, error) {
	if pageSize <= 0 {
		pageSize = 1000
	}
	var drop []string
	after := ""
	for {
		var res []graphql.SearchResult
		err := s.retry(ctx, func() error {
			var err error
			res, err = s.client.Experimental().Search().WithCollection(collection).WithLimit(pageSize).
				WithAfter(after).WithProperties(PropBlobGroup).Do(ctx)
			return classify("list blobs", collection, err)
		})
		var nf *CollectionNotFoundError
		if errors.As(err, &nf) || err != nil && strings.Contains(strings.ToLower(err.Error()), "could not find class") {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		for _, r := range res {
			if g, _ := r.Properties[PropBlobGroup].(string); !keep(g) {
				drop = append(drop, r.ID)
			}
		}
		if len(res) < pageSize {
			break
		}
		after = res[len(res)-1].ID
	}
	for i, id := range drop {
		err := s.retry(ctx, func() error {
			d := s.client.Data().Deleter().WithClassName(collection).WithID(id)
			if s.cfg.WriteConsistency != "" {
				d = d.WithConsistencyLevel(s.cfg.WriteConsistency)
			}
			err := d.Do(ctx)
			var wce *fault.WeaviateClientError
			if errors.As(err, &wce) && wce.StatusCode == http.StatusNotFound {
				return nil
			}
			return classify("delete blob", collection, err)
		})
		if err != nil {
			return i, err
		}
	}
	return len(drop), nil
}

// createDescribedClass creates class, a collection of ragops's own whose Description says
// what it is; an existing collection of that name is accepted only with the same
// Description (what names it in errors: "manifest", "blob collection"), and gets the
// properties of class it lacks (made by an older ragops).
//
// Errors: an existing collection that is not one ([*ServerError]); typed server errors.
func (s *Store) createDescribedClass(ctx context.Context, class *models.Class, what string) error {
	name := class.Class
	return s.retry(ctx, func() error {
		err := s.client.Schema().ClassCreator().WithClass(class).Do(ctx)
		if err == nil {
			return nil
		}
		if !isAlreadyExists(err) {
			return classify("create "+what, name, err)
		}
		got, err := s.client.Schema().ClassGetter().WithClassName(name).Do(ctx)
		if err != nil {
			return classify("get "+what, name, err)
		}
		if got.Description != class.Description {
			return &ServerError{Op: "create " + what, Collection: name,
				Err: fmt.Errorf("exists and is not a %s (description %q)", what, got.Description)}
		}
		have := map[string]bool{}
		for _, p := range got.Properties {
			have[p.Name] = true
		}
		for _, p := range class.Properties {
			if have[p.Name] {
				continue
			}
			if err := s.client.Schema().PropertyCreator().WithClassName(name).WithProperty(p).Do(ctx); err != nil && !isAlreadyExists(err) {
				return classify("add property to "+what, name, err)
			}
		}
		return nil
	})
}
