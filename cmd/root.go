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
		Long: `ragops reconciles Corpus, ChunkingStrategy, Index and Evaluation resources.
The same binary runs the operator (manager) and its Job workers (embed, evaluate).`,
		SilenceUsage: true,
	}
	root.AddCommand(newVersionCommand())
	root.AddCommand(newManagerCommand())
	root.AddCommand(newScanCommand())
	root.AddCommand(newEmbedCommand())
	root.AddCommand(newEvaluateCommand())
	root.AddCommand(newFetchCommand())
	root.AddCommand(newReportCommand())
	root.AddCommand(newCompareCommand())
	root.AddCommand(newChunkCommand())
	root.AddCommand(newServeCommand())
	root.AddCommand(newQueryCommand())
	root.AddCommand(newExperimentCommand())
	return root
}
