package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ragops/ragops/preview"
	"github.com/ragops/ragops/reader/ocr"
)

func newChunkCommand() *cobra.Command {
	var c preview.Config
	var ocrModeFlag string
	cmd := &cobra.Command{
		Use:   "chunk -f strategy.yaml [--model DIR] FILE...",
		Short: "Preview a ChunkingStrategy on local files: spans, pages, tokens, headings per chunk (no cluster needed)",
		Long: `chunk reads each FILE with the readers a build uses (PDF, DOCX, ODT, HTML, Markdown, text,
BEIR corpus.jsonl), checks the ChunkingStrategy manifest as the cluster would (the CRD's schema,
defaults and CEL rules, then the controller's validation), chunks every document exactly as
an Index build does, and prints per chunk its ordinal, byte span, page span, size, heading
path and first and last words, with a summary per document.

With --model the sizes are counted by that model folder's tokenizer, chunks over the model's
positions are flagged, and a late strategy shows the macro windows each chunk is pooled from.
Without it a Tokens strategy is sized in words. --compare prints two strategies' chunk
boundaries side by side.

Scanned PDF pages and image documents (PNG, JPEG, TIFF, multi-page TIFF) are read by
Tesseract as a Corpus's spec.ocr reads them (--ocr Auto, nld+eng, 300 DPI by default); the
header counts the pages read by OCR. --ocr Never skips them as a build would.`,
		Example: `  ragops chunk -f fixed-510.yaml --model models/all-minilm-l6-v2 raadsbesluit.pdf
  ragops chunk -f fixed-510.yaml --compare heading.yaml raadsbesluit.docx
  ragops chunk -f sentence.yaml -o json --limit 3 scifact/corpus.jsonl | jq .tokens
  ragops chunk -f heading.yaml --ocr-languages nld raadsbesluit-scan.tiff`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			c.Files = files
			mode, err := ocrMode(ocrModeFlag)
			if err != nil {
				return err
			}
			c.OCR.Mode = mode
			return preview.Run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), c)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&c.Strategy, "filename", "f", "", "ChunkingStrategy manifest (YAML)")
	f.StringVar(&c.Compare, "compare", "", "a second ChunkingStrategy manifest to compare boundaries with")
	f.StringVar(&c.ModelDir, "model", "", "model folder (ragops.json, tokenizer.json, model.onnx) for token counts and late chunking windows")
	f.StringVar(&c.LibraryPath, "onnxruntime-lib", "", "ONNX Runtime library for Semantic and Cluster strategies (default $RAGOPS_ONNXRUNTIME_LIB)")
	f.StringVarP(&c.Output, "output", "o", preview.OutputTable, "output format: table or json (JSON lines, one chunk per line)")
	f.IntVar(&c.Limit, "limit", 0, "chunk only the first N documents of a BEIR corpus.jsonl (0: all)")
	f.IntVar(&c.MaxDocumentBytes, "max-document-bytes", 0, "largest document read (default 512 MiB)")
	f.StringVar(&ocrModeFlag, "ocr", string(ocr.Auto), "OCR of scanned PDF pages and images: Auto, Always or Never (as a Corpus's spec.ocr.mode)")
	f.StringSliceVar(&c.OCR.Languages, "ocr-languages", []string{"nld", "eng"}, "Tesseract language codes, tried together in this order")
	f.IntVar(&c.OCR.DPI, "ocr-dpi", ocr.DefaultDPI, "resolution PDF pages are rendered at for OCR (pixels per inch)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// ocrMode parses --ocr (any letter case) as an ocr.Mode.
func ocrMode(s string) (ocr.Mode, error) {
	for _, m := range []ocr.Mode{ocr.Auto, ocr.Always, ocr.Never} {
		if strings.EqualFold(s, string(m)) {
			return m, nil
		}
	}
	return "", fmt.Errorf("--ocr %q: want Auto, Always or Never", s)
}
