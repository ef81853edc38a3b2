package extractcache_test

import (
	"context"
	"encoding/base64"

	"github.com/go-openapi/strfmt"
	"github.com/weaviate/weaviate/entities/models"

	"github.com/ragops/ragops/vectorstore"
)

// blobObject is b as an object at key's ID, whatever key b names.
func blobObject(collection, key string, b vectorstore.Blob) *models.Object {
	return &models.Object{Class: collection, ID: strfmt.UUID(vectorstore.BlobID(key).String()), Properties: map[string]any{
		vectorstore.PropBlobKey: b.Key, vectorstore.PropBlobGroup: b.Group, vectorstore.PropBlobSum: b.Sum,
		vectorstore.PropBlobPayload: base64.StdEncoding.EncodeToString(b.Payload),
	}}
}

// countObjects counts a collection's objects with a cursor.
func countObjects(ctx context.Context, s *vectorstore.Store, collection string) (int, error) {
	n, after := 0, ""
	for {
		res, err := s.Client().Experimental().Search().WithCollection(collection).WithLimit(100).WithAfter(after).
			WithProperties(vectorstore.PropBlobGroup).Do(ctx)
		if err != nil {
			return n, err
		}
		n += len(res)
		if len(res) < 100 {
			return n, nil
		}
		after = res[len(res)-1].ID
	}
}
