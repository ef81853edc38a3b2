// Package scan runs a Corpus scan plan (the `ragops scan` worker): it lists a source without
// extracting text and returns its documents, bytes, content revision and skipped documents.
package scan

import (
	"context"
	"log/slog"

	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/internal/plan"
)

// Run lists a source without extracting text: document count, bytes, content revision and
// documents skipped by reason. An S3 source is listed, not downloaded (BEIR files aside): its
// revision comes from the objects' keys, ETags and sizes (corpus.OpenOptions.Listing).
func Run(ctx context.Context, log *slog.Logger, src plan.Source, workDir string) (plan.ScanResult, error) {
	s, err := corpus.OpenWith(ctx, src, workDir, nil, corpus.OpenOptions{Listing: true})
	if err != nil {
		return plan.ScanResult{}, err
	}
	var docs []corpus.Document
	res := plan.ScanResult{Skipped: map[string]int64{}}
	err = s.Walk(ctx, true, nil, func(d corpus.Document) error {
		docs = append(docs, d)
		res.Bytes += d.Size
		return nil
	}, func(sk corpus.Skipped) {
		res.Skipped[sk.Reason]++
		log.Warn("document skipped", "document", sk.ID, "reason", sk.Reason, "error", sk.Err)
	})
	if err != nil {
		return res, err
	}
	if len(res.Skipped) == 0 {
		res.Skipped = nil
	}
	res.Documents = int64(len(docs))
	res.Revision = corpus.WithMetadata(corpus.Revision(docs), src.Metadata)
	res.Commit = s.Commit()
	log.Info("scanned", "root", s.Root(), "documents", res.Documents, "bytes", res.Bytes, "revision", res.Revision, "commit", res.Commit)
	return res, nil
}
