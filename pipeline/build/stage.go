package build

import (
	"context"
	"maps"
	"os"
	"slices"

	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/extractcache"
	"github.com/ragops/ragops/pipeline/stage"
)

// httpStage returns this shard's side of the build's one download of an HTTP source
// (package pipeline/stage: shard 0 downloads and stages the other shards' documents in the
// extraction cache collection), or nil where every shard downloads the source itself: a
// source that is not HTTP, one shard, no extraction cache collection, or no Job UID in
// plan.EnvJobUID. In a sync, shard 0 stages the added and changed documents' bytes only.
func (b *shardBuild) httpStage() *stage.Stage {
	p := b.p
	run := os.Getenv(plan.EnvJobUID)
	if p.Source.HTTP == nil || p.Shards < 2 || p.ExtractionCache == "" || run == "" {
		return nil
	}
	src := p.Source
	st := &stage.Stage{
		Store: extractcache.Weaviate(b.store, p.ExtractionCache),
		Run:   run,
		Shard: b.o.Shard,
		Owner: func(rel string) int {
			if corpus.HoldsRecords(src, rel) {
				return stage.AllShards
			}
			for k := range p.Shards {
				if corpus.Shard(rel, k, p.Shards) {
					return k
				}
			}
			return 0
		},
		Select: func(rel string) bool {
			ok, err := corpus.Selected(rel, src.Include, src.Exclude)
			return err == nil && ok
		},
		Wait: b.o.stageWait,
		Log:  b.log,
	}
	if b.o.Shard == 0 && p.Incremental {
		// A sync stages the bytes of added and changed documents only: the others are
		// listed unread by their shards (b.unchanged decides alike from their own states).
		// Their records are read a batch of files at a time, never all at once.
		covers, checked := false, false
		st.Unchanged = func(ctx context.Context, hashes map[string]string) map[string]bool {
			if !checked {
				checked = true
				var err error
				if covers, err = b.store.ManifestCovers(ctx, p.Collection); err != nil {
					b.log.Warn("HTTP source: the revision's manifest could not be read; staging every document", "error", err)
				}
			}
			if !covers {
				return nil
			}
			ids := slices.Collect(maps.Keys(hashes))
			records, err := b.store.ManifestRecordsOf(ctx, p.Collection, ids)
			if err != nil {
				b.log.Warn("HTTP source: manifest records could not be read; staging these documents", "documents", len(ids), "error", err)
				return nil
			}
			out := map[string]bool{}
			for rel, hash := range hashes {
				if r, ok := records[rel]; ok && r.Complete && r.Hash == hash && b.skipsBytes(r) {
					out[rel] = true
				}
			}
			return out
		}
	}
	return st
}
