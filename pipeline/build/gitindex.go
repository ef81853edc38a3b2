package build

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/pipeline/extractcache"
	"github.com/ragops/ragops/vectorstore"
)

// gitIndex is a corpus.GitIndex in the Corpus's extraction cache collection: the entry of a
// blob has key "gitblob/<blob id>", the raw hash as its group (so the cache's collection by
// listing keeps it while a document has those bytes) and a checksum over key and payload
// (extractcache.Checksum); an entry that does not verify is unknown.
type gitIndex struct {
	store extractcache.Store
	log   *slog.Logger
}

var _ corpus.GitIndex = gitIndex{}

// gitIndexEntry is an entry's payload.
type gitIndexEntry struct {
	Hash string `json:"hash"`
	Size int64  `json:"size"`
}

func gitIndexKey(blob string) string { return "gitblob/" + blob }

func (x gitIndex) Lookup(ctx context.Context, blob string) (string, int64, bool) {
	key := gitIndexKey(blob)
	b, ok, err := x.store.Get(ctx, key)
	if err != nil {
		x.log.Warn("git index: read failed; fetching the blob", "blob", blob, "error", err)
		return "", 0, false
	}
	if !ok || b.Key != key || b.Sum != extractcache.Checksum(key, b.Payload) {
		return "", 0, false
	}
	var e gitIndexEntry
	if err := json.Unmarshal(b.Payload, &e); err != nil || len(e.Hash) != 16 || b.Group != e.Hash || e.Size < 0 {
		return "", 0, false
	}
	return e.Hash, e.Size, true
}

func (x gitIndex) Record(ctx context.Context, blob, hash string, size int64) {
	key := gitIndexKey(blob)
	payload, _ := json.Marshal(gitIndexEntry{Hash: hash, Size: size}) // a string and a number
	if err := x.store.Put(ctx, vectorstore.Blob{Key: key, Group: hash, Payload: payload, Sum: extractcache.Checksum(key, payload)}); err != nil {
		x.log.Warn("git index: write failed", "blob", blob, "error", err)
	}
}
