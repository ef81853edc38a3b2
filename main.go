// Command ragops is the ragops operator, its workers and its command-line tools: one binary,
// one image. Subcommands:
//
//   - manager: the operator (the Corpus, ChunkingStrategy, Index, Evaluation and Experiment
//     reconcilers);
//   - scan, embed, evaluate, estimate, fetch: the Job workers (list a corpus, build or sync a
//     revision, run an Evaluation, estimate an Experiment's trials, fetch a model or data set);
//   - serve: the model server that embeds queries for a revision (text2vec-transformers API);
//   - chunk: preview a ChunkingStrategy on local files;
//   - query: search an Index through its alias;
//   - endpoint: the access-enforcing query endpoint of a namespace's Indexes (authenticated,
//     filtered by the caller's groups);
//   - report, compare: render Evaluations, and compare two paired;
//   - experiment winner|leaderboard: read an Experiment's outcome;
//   - version.
package main

import (
	"os"

	"github.com/ragops/ragops/cmd"
)

func main() {
	if err := cmd.NewRoot().Execute(); err != nil {
		os.Exit(1)
	}
}
