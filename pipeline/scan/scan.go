// Package scan runs a Corpus scan plan (the `ragops scan` worker): it lists a source without
// extracting text and returns its documents, bytes, content revision and skipped documents.
package scan

import (
	"context"
	"errors"
	"log/slog"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/corpus"
	"github.com/ragops/ragops/internal/plan"
)

// Run lists a source without extracting text: document count, bytes, content revision and
// documents skipped by reason. An S3 source is listed, not downloaded (BEIR files aside): its
// revision comes from the objects' keys, ETags and sizes (corpus.OpenOptions.Listing).
func Run(ctx context.Context, log *slog.Logger, src plan.Source, workDir string) (plan.ScanResult, error) {
	return RunAfter(ctx, log, src, nil, workDir)
}

// RunAfter runs a scan as Run does after the scan previous (nil: none; plan.Scan.Previous).
// An HTTP source is downloaded only when it changed: a previous scan with validators (ETag,
// Last-Modified) and the source's Selection makes the download conditional, and an archive
// the server answers 304 Not Modified for keeps previous's figures. The result carries the
// validators of what it downloaded (HTTP sources).
func RunAfter(ctx context.Context, log *slog.Logger, src plan.Source, previous *plan.ScanResult, workDir string) (plan.ScanResult, error) {
	opts := corpus.OpenOptions{Listing: true}
	selection := src.Selection()
	if v := previousHTTP(src, previous, selection); v != nil {
		opts.IfNoneMatch, opts.IfModifiedSince = v.ETag, v.LastModified
	}
	s, err := corpus.OpenWith(ctx, src, workDir, nil, opts)
	if errors.Is(err, corpus.ErrNotModified) {
		res := *previous
		res.Error = ""
		log.Info("scanned: the HTTP archive has not changed since the last scan, not downloaded", "documents", res.Documents,
			"bytes", res.Bytes, "revision", res.Revision, "etag", opts.IfNoneMatch, "lastModified", opts.IfModifiedSince)
		return res, nil
	}
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
	if etag, modified := s.HTTPValidators(); src.HTTP != nil && (etag != "" || modified != "") {
		res.HTTP = &ragopsv1alpha1.HTTPValidator{ETag: etag, LastModified: modified, Selection: selection}
	}
	log.Info("scanned", "root", s.Root(), "documents", res.Documents, "bytes", res.Bytes, "revision", res.Revision, "commit", res.Commit)
	return res, nil
}

// previousHTTP returns the validators of previous when they can make src's download
// conditional: an HTTP source, a recorded revision, and the same Selection.
func previousHTTP(src plan.Source, previous *plan.ScanResult, selection string) *ragopsv1alpha1.HTTPValidator {
	if src.HTTP == nil || previous == nil || previous.Revision == "" || previous.HTTP == nil ||
		previous.HTTP.Selection != selection || previous.HTTP.ETag == "" && previous.HTTP.LastModified == "" {
		return nil
	}
	return previous.HTTP
}
