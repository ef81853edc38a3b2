package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/report"
)

func newReportCommand() *cobra.Command {
	var ns, out string
	c := &cobra.Command{
		Use:   "report",
		Short: "Render the Evaluations of a namespace as a recall@10 / nDCG@10 chart (SVG or PNG by the file's extension)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			k8s, err := client.New(cfg, client.Options{Scheme: Scheme()})
			if err != nil {
				return err
			}
			var list ragopsv1alpha1.EvaluationList
			if err := k8s.List(c.Context(), &list, client.InNamespace(ns)); err != nil {
				return err
			}
			f, err := os.Create(out)
			if err != nil {
				return err
			}
			format := strings.TrimPrefix(filepath.Ext(out), ".")
			if err := report.Write(f, report.Rows(list.Items), "Evaluations in "+ns, format); err != nil {
				f.Close()
				os.Remove(out)
				return err
			}
			return f.Close()
		},
	}
	c.Flags().StringVarP(&ns, "namespace", "n", "default", "namespace of the Evaluations")
	c.Flags().StringVarP(&out, "output", "o", "evaluations.svg", "output file (.svg or .png)")
	return c
}
