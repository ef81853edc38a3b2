package build

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/chunkers/docchunk"
	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/internal/tracing"
)

// Span names of a shard's trace (docs/operations.md): one build.shard span per Run, a span per
// step under it (build.open, build.plan, build.sync, build.removeStale, build.collectCache),
// and under build.sync a build.read and a build.chunk span per document read and a
// build.embed and a build.write span per embedding batch. OCR pages (ocr.page) nest under
// build.sync.
const (
	SpanShard = "build.shard"
	SpanRead  = "build.read"
	SpanChunk = "build.chunk"
	SpanEmbed = "build.embed"
	SpanWrite = "build.write"
)

// startShard starts the build.shard span of Run under ctx's span (the Job's traceparent).
func startShard(ctx context.Context, p plan.Build, shard int) (context.Context, trace.Span) {
	return tracing.Start(ctx, SpanShard, trace.WithAttributes(
		attribute.String("ragops.namespace", p.Namespace), attribute.String("ragops.index", p.Index),
		attribute.String("ragops.revision", p.Revision), attribute.String("ragops.collection", p.Collection),
		attribute.Int("ragops.shard", shard), attribute.Int("ragops.shards", max(p.Shards, 1)),
		attribute.Bool("ragops.incremental", p.Incremental), attribute.String("ragops.strategy", string(p.Strategy.Type))))
}

// endShard sets the shard's figures (documents, chunks, tokens, stage seconds) on its span,
// marks an error and ends it.
func endShard(span trace.Span, res plan.BuildResult, err error) {
	if span.IsRecording() {
		var skipped int64
		for _, n := range res.Skipped {
			skipped += n
		}
		span.SetAttributes(attribute.Int64("ragops.documents", res.Documents), attribute.Int64("ragops.chunks", res.Chunks),
			attribute.Int64("ragops.tokens", res.Tokens), attribute.Int64("ragops.unchanged", res.Unchanged),
			attribute.Int64("ragops.deleted", res.Deleted), attribute.Int64("ragops.skipped", skipped))
		if st := res.Stages; st != nil {
			span.SetAttributes(attribute.Float64("ragops.stage.read_s", st.Read), attribute.Float64("ragops.stage.chunk_s", st.Chunk),
				attribute.Float64("ragops.stage.tokenize_s", st.Tokenize), attribute.Float64("ragops.stage.inference_s", st.Inference),
				attribute.Float64("ragops.stage.write_s", st.Write))
		}
	}
	endSpan(span, err)
}

// traced wraps a step of Run in a span named name.
func traced(name string, step func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, span := tracing.Start(ctx, name)
		err := step(ctx)
		endSpan(span, err)
		return err
	}
}

// readSpan records the build.read span of a document the corpus walk read (and extracted)
// from start until now, before handing it over; reason is the skip reason of one it could
// not read ("" when read).
func readSpan(ctx context.Context, start time.Time, id string, size int64, reason string) {
	// The walk read it before the callback: the span takes the walk's timing.
	_, span := tracing.Start(ctx, SpanRead, trace.WithTimestamp(start),
		trace.WithAttributes(attribute.String("ragops.document", id), attribute.Int64("ragops.bytes", size)))
	if reason != "" {
		span.SetAttributes(attribute.String("ragops.skipped", reason))
		span.SetStatus(codes.Error, reason)
	}
	span.End()
}

// endSpan marks err (if any) on span and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// chunk chunks a read document in a build.chunk span.
func (b *shardBuild) chunk(ctx context.Context, d corpus.Document) ([]chunkers.Chunk, error) {
	ctx, span := tracing.Start(ctx, SpanChunk, trace.WithAttributes(attribute.String("ragops.document", d.ID),
		attribute.Int("ragops.characters", len(d.Doc.Text))))
	chunks, err := docchunk.Chunk(ctx, b.chunker, d.Doc)
	span.SetAttributes(attribute.Int("ragops.chunks", len(chunks)))
	endSpan(span, err)
	return chunks, err
}

// embed embeds a batch of documents in a build.embed span that counts its chunks and tokens.
func (b *shardBuild) embed(ctx context.Context, docs []embedder.Document) ([][][]float32, error) {
	var chunks int
	for _, d := range docs {
		chunks += len(d.Chunks)
	}
	ctx, span := tracing.Start(ctx, SpanEmbed, trace.WithAttributes(attribute.Int("ragops.documents", len(docs)),
		attribute.Int("ragops.chunks", chunks)))
	var tokens int64
	if span.IsRecording() {
		tokens = b.model.Stats().Tokens
	}
	vecs, err := b.model.EmbedDocuments(ctx, docs, b.mode)
	if span.IsRecording() {
		span.SetAttributes(attribute.Int64("ragops.tokens", b.model.Stats().Tokens-tokens))
	}
	endSpan(span, err)
	return vecs, err
}

// writeSpan starts the build.write span of a flush of documents; its end counts the chunks
// the flush wrote.
func (b *shardBuild) writeSpan(ctx context.Context, documents int) (context.Context, func(error)) {
	ctx, span := tracing.Start(ctx, SpanWrite, trace.WithAttributes(attribute.Int("ragops.documents", documents)))
	before := b.res.Chunks
	return ctx, func(err error) {
		span.SetAttributes(attribute.Int64("ragops.chunks", b.res.Chunks-before))
		endSpan(span, err)
	}
}
