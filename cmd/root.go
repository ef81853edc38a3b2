// Package cmd holds the ragops command line: the root command and its subcommands.
package cmd

import (
	"github.com/spf13/cobra"
)

// NewRoot returns the ragops root command with every subcommand attached.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "ragops",
		Short: "A Kubernetes operator that manages RAG indexes declaratively",
		Long: `ragops reconciles Corpus, ChunkingStrategy, Index, Evaluation and Experiment resources.
The same binary runs the operator (manager), its Job workers (scan, embed, evaluate, fetch),
the model server (serve) and the tools that read what it built (chunk, query, report,
compare, experiment).`,
		SilenceUsage: true,
	}
	root.AddCommand(newVersionCommand())
	root.AddCommand(newManagerCommand())
	root.AddCommand(newScanCommand())
	root.AddCommand(newEstimateCommand())
	root.AddCommand(newEmbedCommand())
	root.AddCommand(newEvaluateCommand())
	root.AddCommand(newFetchCommand())
	root.AddCommand(newReportCommand())
	root.AddCommand(newCompareCommand())
	root.AddCommand(newChunkCommand())
	root.AddCommand(newAccessEndpointCommand())
	root.AddCommand(newServeCommand())
	root.AddCommand(newQueryCommand())
	root.AddCommand(newExperimentCommand())
	return root
}
