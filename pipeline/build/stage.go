package build

import (
	"context"
	"os"

	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/extractcache"
	"github.com/ragops/ragops/pipeline/stage"
	"github.com/ragops/ragops/vectorstore"
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
		var states map[string]vectorstore.DocumentState
		loaded := false
		st.Unchanged = func(ctx context.Context, rel, hash string) bool {
			if !loaded {
				loaded = true
				var err error
				if states, err = b.store.DocumentStates(ctx, p.Collection, 0, nil); err != nil {
					b.log.Warn("HTTP source: the collection's documents could not be read; staging every document", "error", err)
				}
			}
			s, ok := states[rel]
			return ok && s.Consistent() && s.Hash == hash
		}
	}
	return st
}
