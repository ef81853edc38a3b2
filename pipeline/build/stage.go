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
		var records map[string]vectorstore.ManifestRecord
		loaded := false
		st.Unchanged = func(ctx context.Context, rel, hash string) bool {
			if !loaded {
				loaded = true
				var err error
				if records, err = b.allRecords(ctx); err != nil {
					b.log.Warn("HTTP source: the revision's manifest could not be read; staging every document", "error", err)
				}
			}
			r, ok := records[rel]
			return ok && r.Complete && r.Hash == hash && b.skipsBytes(r)
		}
	}
	return st
}

// allRecords reads the manifest records of every shard of the revision (shard 0 stages the
// others' documents), or nil when no manifest covers the collection yet (every document is
// then staged).
func (b *shardBuild) allRecords(ctx context.Context) (map[string]vectorstore.ManifestRecord, error) {
	p := b.p
	covers, err := b.store.ManifestCovers(ctx, p.Collection)
	if err != nil || !covers {
		return nil, err
	}
	all := map[string]vectorstore.ManifestRecord{}
	for k := range p.Shards {
		read, err := b.store.ManifestRecords(ctx, p.Collection, k, p.Shards, 0, nil)
		if err != nil {
			return nil, err
		}
		for id, r := range read.Records {
			all[id] = r
		}
		for _, r := range read.Restamp {
			all[r.DocID] = r
		}
	}
	return all, nil
}
