package budget

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/ragops/ragops/embedder"
	"github.com/ragops/ragops/embedder/tokenize"
)

// LoadModel reads a model folder's ragops.json and tokenizer.json (no ONNX Runtime); set
// Model.Embedder for Semantic and Cluster strategies.
func LoadModel(dir string) (Model, error) {
	cfg, err := embedder.ReadConfig(dir)
	if err != nil {
		return Model{}, err
	}
	tok, err := tokenize.Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return Model{}, err
	}
	return Model{Tokenizer: tok, Config: cfg}, nil
}

// Decision says whether a trial may start under a token budget, with the numbers.
type Decision struct {
	// Fits is true when Spent + Reserved + Estimate.Tokens stays within MaxTokens (always
	// true without a budget).
	Fits bool
	// Trial is the trial's name.
	Trial string
	// MaxTokens is the budget (0: none); Spent the tokens finished builds embedded; Reserved
	// the estimates of builds running now; Left = MaxTokens - Spent - Reserved (may be < 0).
	MaxTokens, Spent, Reserved, Left int64
	// Estimate is the trial's.
	Estimate Estimate
}

// Check decides whether trial, estimated at est, may start when spent tokens are spent and
// reserved are held by running builds, under maxTokens (nil: no token budget).
func Check(trial string, maxTokens *int64, spent, reserved int64, est Estimate) Decision {
	d := Decision{Fits: true, Trial: trial, Spent: spent, Reserved: reserved, Estimate: est}
	if maxTokens == nil {
		return d
	}
	d.MaxTokens = *maxTokens
	d.Left = d.MaxTokens - spent - reserved
	d.Fits = est.Tokens <= d.Left
	return d
}

// Message is the BudgetExhausted condition's message for a trial that does not fit, e.g.
// "trial sweep-fixed-512-minilm not started: it needs about 1,412,000 tokens (estimated from
// 259 of 5,183 documents, scaled by bytes, ±1.2%), 900,000 of the budget's 5,000,000 are left
// (3,600,000 spent, 500,000 held by running trials)".
func (d Decision) Message() string {
	e := d.Estimate
	return fmt.Sprintf("trial %s not started: it needs about %s tokens (estimated from %s of %s documents, scaled by %s, ±%.1f%%), %s of the budget's %s are left (%s spent, %s held by running trials)",
		d.Trial, thousands(e.Tokens), thousands(int64(e.SampleDocuments)), thousands(e.Population.Documents), e.ScaledBy,
		100*e.RelativeStandardError, thousands(max(d.Left, 0)), thousands(d.MaxTokens), thousands(d.Spent), thousands(d.Reserved))
}

// thousands writes n with comma thousands separators.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
