package cmd

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragops/ragops/evaluator/compare"
	"github.com/ragops/ragops/evaluator/results"
)

func newCompareCommand() *cobra.Command {
	var (
		ns, output string
		fromFile   bool
		opts       compare.Options
	)
	c := &cobra.Command{
		Use:   "compare EVAL_A EVAL_B",
		Short: "Compare two Evaluations query by query: mean difference B − A, 95% bootstrap interval, paired randomization p-value, queries that changed most",
		Long: `Reads the per-query results of two Evaluations (ConfigMap <evaluation>-results, key
` + results.ConfigMapKey + `, in --namespace; with --from-file EVAL_A and EVAL_B are files holding
the same encoding) and prints, per metric, both means, the mean per-query difference B − A
with its 95% paired bootstrap interval (10,000 resamples), the two-sided paired
randomization test's p-value (10,000 sign flips) and the queries better, worse and tied;
then the queries whose primary metric changed most, with their text and the rank of the
first relevant document in both runs. Evaluations of different data sets, splits or query
sets are refused.`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return fmt.Errorf("-o %q: want text or json", output)
			}
			var sets [2]*results.Set
			var srcs [2]string
			if fromFile {
				for i, p := range args {
					s, err := compare.LoadFile(p)
					if err != nil {
						return err
					}
					sets[i], srcs[i] = s, p
				}
			} else {
				cfg, err := ctrl.GetConfig()
				if err != nil {
					return fmt.Errorf("kubeconfig: %w (--from-file reads files instead)", err)
				}
				k8s, err := client.New(cfg, client.Options{Scheme: Scheme()})
				if err != nil {
					return err
				}
				for i, name := range args {
					if sets[i], srcs[i], err = compare.LoadConfigMap(c.Context(), k8s, ns, name); err != nil {
						return err
					}
				}
			}
			if opts.Top == 0 {
				opts.Top = -1 // --top 0 lists none (Options' zero value means the default)
			}
			r, err := compare.Compare(sets[0], sets[1], srcs[0], srcs[1], opts)
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(c.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			return r.WriteText(c.OutOrStdout())
		},
	}
	f := c.Flags()
	f.StringVarP(&ns, "namespace", "n", "default", "namespace of the Evaluations")
	f.StringVarP(&output, "output", "o", "text", "text or json")
	f.BoolVar(&fromFile, "from-file", false, "EVAL_A and EVAL_B are per-query results files (gzip JSON, as in the ConfigMap)")
	f.StringSliceVar(&opts.Metrics, "metric", nil, "metrics to compare (default: all both runs hold)")
	f.StringVar(&opts.Primary, "by", "", "metric ordering the changed queries (default ndcg@10)")
	f.IntVar(&opts.Top, "top", 10, "number of changed queries listed (0: none)")
	return c
}
