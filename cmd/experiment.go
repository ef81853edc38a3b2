package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/experiment/winner"
)

// newExperimentCommand wires `ragops experiment winner|leaderboard NAME`; the logic is in
// experiment/winner.
func newExperimentCommand() *cobra.Command {
	var ns string
	c := &cobra.Command{Use: "experiment", Short: "Read an Experiment's outcome: its leaderboard and the winner to commit"}
	c.PersistentFlags().StringVarP(&ns, "namespace", "n", "default", "namespace of the Experiment")
	kube := func() (client.Client, error) {
		cfg, err := ctrl.GetConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig: %w", err)
		}
		return client.New(cfg, client.Options{Scheme: Scheme()})
	}
	c.AddCommand(&cobra.Command{
		Use:   "winner NAME",
		Short: "Print the winner's ChunkingStrategy and the Index patch (strategyRef, model) to commit",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k8s, err := kube()
			if err != nil {
				return err
			}
			res, err := winner.Get(cmd.Context(), k8s, ns, args[0])
			if err != nil {
				return err
			}
			return res.Write(cmd.OutOrStdout())
		},
	}, &cobra.Command{
		Use:   "leaderboard NAME",
		Short: "Print the Experiment's leaderboard (rank, candidate, objective, tokens, chunks, parameters)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k8s, err := kube()
			if err != nil {
				return err
			}
			var exp ragopsv1alpha1.Experiment
			if err := k8s.Get(cmd.Context(), client.ObjectKey{Namespace: ns, Name: args[0]}, &exp); err != nil {
				return err
			}
			return winner.Leaderboard(cmd.OutOrStdout(), &exp)
		},
	})
	return c
}
