package build

import (
	"os"

	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/pipeline/extractcache"
	"github.com/ragops/ragops/pipeline/stage"
)

// httpStage returns this shard's side of the build's one download of an HTTP source
// (package pipeline/stage: shard 0 downloads and stages the other shards' documents in the
// extraction cache collection), or nil where every shard downloads the source itself: a
// source that is not HTTP, one shard, no extraction cache collection, or no Job UID in
// plan.EnvJobUID.
func (b *shardBuild) httpStage() *stage.Stage {
	p := b.p
	run := os.Getenv(plan.EnvJobUID)
	if p.Source.HTTP == nil || p.Shards < 2 || p.ExtractionCache == "" || run == "" {
		return nil
	}
	src := p.Source
	return &stage.Stage{
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
}
