package cmd

import (
	"github.com/spf13/cobra"

	"github.com/ragops/ragops/preview"
)

func newChunkCommand() *cobra.Command {
	var c preview.Config
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
boundaries side by side.`,
		Example: `  ragops chunk -f fixed-512.yaml --model models/all-minilm-l6-v2 raadsbesluit.pdf
  ragops chunk -f fixed-512.yaml --compare heading.yaml raadsbesluit.docx
  ragops chunk -f sentence.yaml -o json --limit 3 scifact/corpus.jsonl | jq .tokens`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			c.Files = files
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
	f.IntVar(&c.MaxDocumentBytes, "max-document-bytes", 0, "largest document read (default 256 MiB)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}
