// Package vectorstore writes and searches ragops chunk collections in Weaviate. The embedder
// Jobs, the evaluator and the controllers share it.
//
// Model: every Index revision lives in its own collection ([CollectionName]); an alias named
// after the Index ([AliasName]) points at the active revision, and queries go through it.
// Chunk objects carry the chunk text (BM25, word tokenization), document id, chunk ordinal,
// byte offsets, heading path, revision, pages and the document's content hash; their IDs are
// deterministic ([ChunkID]), so re-imports overwrite instead of duplicating.
//
// Operations: [Store.EnsureCollection] (vectorizer none; HNSW or flat), [Store.Upsert] (gRPC
// batches, per-object and call errors both checked, backoff on transient failures),
// [Store.ReplaceDocument], [Store.DeleteDocument], [Store.DocumentHashes],
// [Store.DocumentStates] (the chunk walk a revision without a manifest needs once), the
// per-revision document manifest ([ManifestName]: [Store.PutManifest], [Store.ManifestRecords]
// read per shard, [Store.ManifestTotals] for the completeness check), [Store.Count],
// aliases ([Store.SetAlias], [Store.GetAlias], [Store.DeleteAlias]), [Store.DeleteCollection]
// (refused while an alias points at the collection) and [Store.Search] (nearVector, bm25,
// hybrid).
//
// Errors are typed: [*RetryableError] (server down, timeout, 5xx; see [IsRetryable]) versus
// permanent ones: [*DimensionError], [*CollectionNotFoundError], [*BatchError],
// [*CollectionInUseError], [*ServerError]. Retryable failures are retried a few seconds
// ([Config.Retry]), or by workers for minutes ([OutagePolicy]).
//
// Tests run against a real Weaviate server started by package weaviatetest; they need the
// binary built by hack/build-tools.sh weaviate (bin/weaviate-server, or RAGOPS_WEAVIATE_BIN).
// Without it they skip, or fail when RAGOPS_REQUIRE_ALL=1.
package vectorstore
