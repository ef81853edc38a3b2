package embedder

import (
	"fmt"

	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/embedder/tokenize"
)

// LateWindow is one macro window of long late chunking, encoded as [CLS] window [SEP].
type LateWindow struct {
	// TokenStart and TokenEnd bound the window's content tokens [TokenStart, TokenEnd),
	// counted over the document prefix's tokens followed by the document's tokens.
	TokenStart int `json:"tokenStart"`
	TokenEnd   int `json:"tokenEnd"`
	// Start and End are the byte span of the document text that the window's document
	// tokens cover (from the first token's start to the last token's end).
	Start int `json:"start"`
	End   int `json:"end"`
}

// LatePlan is how late chunking encodes one document and pools its chunks.
type LatePlan struct {
	// Tokens is the number of content tokens (document prefix plus document).
	Tokens int
	// Windows are the macro windows in document order; a document that fits one window has
	// exactly one.
	Windows []LateWindow
	// ChunkWindows lists, for each chunk in the order given, the indexes into Windows of the
	// windows whose token states the chunk's vector averages, ascending. Each token's state
	// comes from the window where it has the most context; the chunk holding the document's
	// first token also pools [CLS] of window 0, the one holding its last token [SEP] of the
	// last window.
	ChunkWindows [][]int
}

// PlanLate returns the windows and the per-chunk window assignment that late chunking
// (Model.EmbedDocuments in Late mode) uses for text and its chunks, without running the
// model: tok and cfg come from the model folder (tokenize.Load, ReadConfig), and
// o.WindowTokens and o.WindowOverlap are defaulted and checked as Load does, with the same
// errors. A chunk whose spans cover no token is an error, as in Late mode.
func PlanLate(tok *tokenize.Tokenizer, cfg Config, o Options, text string, chunks []chunkers.Chunk) (LatePlan, error) {
	if err := o.windowDefaults(cfg); err != nil {
		return LatePlan{}, err
	}
	var docPre []int64
	if cfg.DocumentPrefix != "" {
		docPre = tok.Encode(cfg.DocumentPrefix, false).IDs
	}
	ld := prepareLate(tok, docPre, o, text)
	n, pre := len(ld.content), len(docPre)
	nDoc := n - pre
	plan := LatePlan{Tokens: n, Windows: make([]LateWindow, len(ld.wins)), ChunkWindows: make([][]int, len(chunks))}
	for i, w := range ld.wins {
		lw := LateWindow{TokenStart: w[0], TokenEnd: w[1]}
		if first, last := max(w[0]-pre, 0), w[1]-pre; first < last {
			lw.Start, lw.End = ld.offsets[first].Start, ld.offsets[last-1].End
		}
		plan.Windows[i] = lw
	}
	best := bestWindow(n, ld.wins)
	for ci, c := range chunks {
		pool := poolOf(ld.offsets, c, nDoc)
		used := make([]bool, len(ld.wins))
		count := 0
		for _, r := range pool.ranges {
			for t := r[0]; t < r[1]; t++ {
				used[best[pre+t]] = true
				count++
			}
		}
		if pool.heads > 0 {
			used[0] = true // [CLS]
			for p := 0; p < pre; p++ {
				used[best[p]] = true
			}
		}
		if pool.tails > 0 {
			used[len(ld.wins)-1] = true // [SEP]
		}
		if count == 0 {
			return LatePlan{}, fmt.Errorf("embedder: chunk %d: span [%d, %d) covers no token (empty or whitespace only)", c.Ordinal, c.Start, c.End)
		}
		for w, u := range used {
			if u {
				plan.ChunkWindows[ci] = append(plan.ChunkWindows[ci], w)
			}
		}
	}
	return plan, nil
}
