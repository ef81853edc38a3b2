package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/report"
)

func newReportCommand() *cobra.Command {
	var ns, out, format, index, from, experiment, cost, kubeconfig string
	var table bool
	c := &cobra.Command{
		Use:   "report",
		Short: "Chart the Evaluations of a namespace (recall@10, nDCG@10 by mode), one Index's recall@10 over its revisions, or an Experiment's leaderboard and Pareto front",
		Long: `Renders the Evaluations of a namespace as grouped bars (grouped by retrieval mode, sorted by
recall@10, the score axis zoomed to the data with its range printed), or with --index the
recall@10 of one Index over its revisions, or with --experiment NAME the Experiment's
leaderboard and its objective against cost (--cost tokens|storage) with the Pareto front
marked (the candidates no other beats on both). --format svg|png|markdown (default: the output
file's extension; "-" writes to stdout, Markdown unless --format says otherwise). With a picture format the Markdown table is also
printed to stdout unless --table=false. --from (-f) reads the objects from a file
(kubectl get evaluations,indexes -o yaml, or kubectl get experiment NAME -o yaml) instead of
the cluster.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if experiment != "" && !c.Flags().Changed("output") {
				out = experiment + "-pareto.svg"
			}
			switch {
			case format == "" && out == "-":
				format = "markdown"
			case format == "":
				format = strings.TrimPrefix(filepath.Ext(out), ".")
				if format == "md" {
					format = "markdown"
				}
			}
			if !slices.Contains(report.Formats, format) {
				return fmt.Errorf("--format %q: want one of %s (or an output file ending in .svg, .png, .md)", format, strings.Join(report.Formats, ", "))
			}
			var buf, md bytes.Buffer
			if experiment != "" {
				if index != "" {
					return fmt.Errorf("--experiment and --index: give one")
				}
				if !slices.Contains(report.Costs, report.Cost(cost)) {
					return fmt.Errorf("--cost %q: want tokens or storage", cost)
				}
				exp, err := loadExperiment(c.Context(), kubeconfig, ns, experiment, from)
				if err != nil {
					return err
				}
				title := fmt.Sprintf("Experiment %s/%s: %s against %s", ns, experiment, report.ObjectiveName(exp), cost)
				if err := report.WritePareto(&buf, exp, report.Cost(cost), title, format); err != nil {
					return err
				}
				if format != "markdown" && table {
					_ = report.WriteLeaderboard(&md, exp, report.Cost(cost))
				}
				return writeReport(c.OutOrStdout(), out, &buf, &md)
			}
			evals, indexes, err := loadReportObjects(c.Context(), kubeconfig, ns, from)
			if err != nil {
				return err
			}
			if index == "" {
				rows := report.Rows(evals)
				if err := report.Write(&buf, rows, "Evaluations in "+ns, format); err != nil {
					return err
				}
				if format != "markdown" && table {
					_ = report.WriteMarkdown(&md, rows)
				}
			} else {
				i := slices.IndexFunc(indexes, func(x ragopsv1alpha1.Index) bool { return x.Name == index })
				if i < 0 {
					return fmt.Errorf("--index: Index %s/%s not found", ns, index)
				}
				rows := report.Revisions(indexes[i], evals)
				if err := report.WriteRevisions(&buf, rows, "recall@10 of Index "+ns+"/"+index+" over its revisions", format); err != nil {
					return err
				}
				if format != "markdown" && table {
					_ = report.WriteRevisions(&md, rows, "", "markdown")
				}
			}
			return writeReport(c.OutOrStdout(), out, &buf, &md)
		},
	}
	f := c.Flags()
	f.StringVarP(&ns, "namespace", "n", "default", "namespace of the Evaluations (and the Index, or the Experiment)")
	f.StringVarP(&out, "output", "o", "evaluations.svg", `output file ("-" for stdout)`)
	f.StringVar(&format, "format", "", "svg, png or markdown (default: from the output file's extension)")
	f.StringVar(&index, "index", "", "chart this Index's recall@10 over its revisions instead")
	f.StringVarP(&from, "from", "f", "", "read Evaluations and Indexes (a List, as kubectl get -o yaml prints) or the Experiment (the object or a List) from this YAML or JSON file instead of the cluster")
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, else in-cluster, else ~/.kube/config)")
	f.StringVar(&experiment, "experiment", "", "print this Experiment's leaderboard and chart its objective against cost, the Pareto front marked (output default NAME-pareto.svg)")
	f.StringVar(&cost, "cost", string(report.CostTokens), "with --experiment, the cost axis: tokens (embedded) or storage (bytes of the collection)")
	f.BoolVar(&table, "table", true, "with svg or png, also print the Markdown table to stdout")
	return c
}

// writeReport writes the picture or table buf to the file out (stdout for "-"), then, when
// writing a file, the table md to stdout.
func writeReport(stdout io.Writer, out string, buf, md *bytes.Buffer) error {
	if out == "-" {
		_, err := io.Copy(stdout, buf)
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	_, err := io.Copy(stdout, md)
	return err
}

// loadExperiment reads the Experiment ns/name from the cluster, or from the file from: the
// object itself (kubectl get experiment NAME -o yaml) or a List holding it (objects of
// other kinds, names and namespaces are ignored; an object without a namespace matches
// any).
func loadExperiment(ctx context.Context, kubeconfig, ns, name, from string) (*ragopsv1alpha1.Experiment, error) {
	if from == "" {
		k8s, err := reportClient(kubeconfig)
		if err != nil {
			return nil, err
		}
		var exp ragopsv1alpha1.Experiment
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &exp); err != nil {
			return nil, err
		}
		return &exp, nil
	}
	b, err := os.ReadFile(from)
	if err != nil {
		return nil, err
	}
	var one ragopsv1alpha1.Experiment
	var list struct {
		Items []ragopsv1alpha1.Experiment `json:"items"`
	}
	for _, into := range []any{&one, &list} {
		if err := yaml.Unmarshal(b, into); err != nil {
			return nil, fmt.Errorf("--from %s: %w", from, err)
		}
	}
	if one.Kind == "Experiment" {
		list.Items = []ragopsv1alpha1.Experiment{one}
	}
	for i, e := range list.Items {
		if e.Kind == "Experiment" && e.Name == name && (e.Namespace == ns || e.Namespace == "") {
			return &list.Items[i], nil
		}
	}
	return nil, fmt.Errorf("--from %s: Experiment %s/%s not found", from, ns, name)
}

// reportClient is a client of the cluster of the kubeconfig file, or where it is empty of
// the one controller-runtime finds ($KUBECONFIG, in-cluster, ~/.kube/config).
func reportClient(kubeconfig string) (client.Client, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = ctrl.GetConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return client.New(cfg, client.Options{Scheme: Scheme()})
}

// loadReportObjects lists the Evaluations and Indexes of ns from the cluster, or from the
// List in the file from (objects of other kinds and namespaces are ignored).
func loadReportObjects(ctx context.Context, kubeconfig, ns, from string) ([]ragopsv1alpha1.Evaluation, []ragopsv1alpha1.Index, error) {
	if from != "" {
		b, err := os.ReadFile(from)
		if err != nil {
			return nil, nil, err
		}
		var list struct {
			Items []struct {
				Kind      string `json:"kind"`
				Namespace struct {
					Namespace string `json:"namespace"`
				} `json:"metadata"`
			} `json:"items"`
		}
		var evs struct {
			Items []ragopsv1alpha1.Evaluation `json:"items"`
		}
		var idxs struct {
			Items []ragopsv1alpha1.Index `json:"items"`
		}
		for _, into := range []any{&list, &evs, &idxs} {
			if err := yaml.Unmarshal(b, into); err != nil {
				return nil, nil, fmt.Errorf("--from %s: %w", from, err)
			}
		}
		var outE []ragopsv1alpha1.Evaluation
		var outI []ragopsv1alpha1.Index
		for i, it := range list.Items {
			if it.Namespace.Namespace != ns && it.Namespace.Namespace != "" {
				continue
			}
			switch it.Kind {
			case "Evaluation":
				outE = append(outE, evs.Items[i])
			case "Index":
				outI = append(outI, idxs.Items[i])
			}
		}
		return outE, outI, nil
	}
	k8s, err := reportClient(kubeconfig)
	if err != nil {
		return nil, nil, err
	}
	var evs ragopsv1alpha1.EvaluationList
	if err := k8s.List(ctx, &evs, client.InNamespace(ns)); err != nil {
		return nil, nil, err
	}
	var idxs ragopsv1alpha1.IndexList
	if err := k8s.List(ctx, &idxs, client.InNamespace(ns)); err != nil {
		return nil, nil, err
	}
	return evs.Items, idxs.Items, nil
}
