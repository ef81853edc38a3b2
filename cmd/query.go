package cmd

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragops/ragops/internal/tracing"
	"github.com/ragops/ragops/query"
	"github.com/ragops/ragops/query/expand"
	"github.com/ragops/ragops/vectorstore"
)

func newQueryCommand() *cobra.Command {
	var (
		kubeconfig, kubeContext, namespace, index string
		mode, output, weaviateURL, grpcAddress    string
		expandFlag                                string
		k                                         int
		alpha                                     float32
		timeout                                   time.Duration
		where                                     []string
	)
	c := &cobra.Command{
		Use:   "query [flags] TEXT",
		Short: "Query an Index through its alias and print the top chunks",
		Long: `query finds the Index's Weaviate (spec.weaviate, through the kubeconfig) and sends TEXT through the
Index's alias: dense as nearText and hybrid with text only, embedded by the active revision's own
model server, or bm25. It prints rank, score, document ID, byte span, pages, heading path and the
first words of each chunk, or JSON with -o json (with the chunks' metadata properties when
filtered).

--where filters on the chunks' properties (the Corpus's spec.metadata.fields, and docId), each
PROPERTY OP VALUE with OP one of = != < <= > >= ~; repeated conditions are ANDed:
  --where 'type=motie|amendement' --where 'datum>=2018-01-01' --where 'datum<2023'
Values are typed by the property (int, number, boolean, date as RFC 3339, 2006-01-02 or a
year); = on a text[] property matches any of the values; ~ is Like (* and ?).

--expand widens each hit to its context (small-to-big), printed under it: neighbours:N, the
chunks of its document within N ordinals (1..5); section or section:N, the consecutive chunks
sharing its heading path, at most N (default 8, up to 20) centred on it. See docs/querying.md.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := query.ParseMode(mode)
			if err != nil {
				return err
			}
			spread, err := expand.Parse(expandFlag)
			if err != nil {
				return err
			}
			shutdown, err := tracing.Setup(cmd.Context(), "ragops-query")
			if err != nil {
				return err
			}
			defer flushTraces(shutdown, slog.Default())
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
				&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
				&clientcmd.ConfigOverrides{CurrentContext: kubeContext})
			if namespace == "" {
				ns, _, err := cc.Namespace()
				if err != nil && weaviateURL == "" {
					return err
				}
				namespace = ns
			}
			var target query.Target
			if weaviateURL != "" {
				cfg, err := vectorstore.EndpointConfig(weaviateURL, grpcAddress, os.Getenv(vectorstore.EnvAPIKey))
				if err != nil {
					return err
				}
				alias, err := vectorstore.AliasName(namespace, index)
				if err != nil {
					return err
				}
				target = query.Target{Alias: alias, Store: cfg}
			} else {
				rc, err := cc.ClientConfig()
				if err != nil {
					return err
				}
				kc, err := client.New(rc, client.Options{Scheme: Scheme()})
				if err != nil {
					return err
				}
				if target, err = query.Resolve(ctx, kc, namespace, index); err != nil {
					return err
				}
			}
			store, err := vectorstore.New(target.Store)
			if err != nil {
				return err
			}
			hits, err := query.Run(ctx, store, target.Alias, query.Request{Text: args[0], Mode: m, K: k, Alpha: alpha, Where: where})
			if err != nil {
				return err
			}
			if spread.Mode == expand.None {
				return query.Print(cmd.OutOrStdout(), hits, output)
			}
			res, err := query.Expand(ctx, store, target.Alias, hits, spread)
			if err != nil {
				return err
			}
			return query.PrintExpanded(cmd.OutOrStdout(), res, output)
		},
	}
	f := c.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default $KUBECONFIG, else ~/.kube/config)")
	f.StringVar(&kubeContext, "context", "", "kubeconfig context (default the current one)")
	f.StringVarP(&namespace, "namespace", "n", "", "namespace of the Index (default the context's)")
	f.StringVar(&index, "index", "", "name of the Index")
	f.StringVar(&mode, "mode", "dense", "dense (nearText, embedded by the revision's model server), bm25 or hybrid")
	f.IntVarP(&k, "k", "k", 10, "number of chunks")
	f.Float32Var(&alpha, "alpha", 0.5, "hybrid weight: 1 is pure dense, 0 pure BM25")
	f.StringVarP(&output, "output", "o", query.FormatTable, "table or json")
	f.StringVar(&weaviateURL, "weaviate-url", "", "Weaviate HTTP URL instead of the Index's spec.weaviate.url (no Kubernetes lookup; API key from $"+vectorstore.EnvAPIKey+")")
	f.StringVar(&grpcAddress, "weaviate-grpc-address", "", "Weaviate gRPC host:port with --weaviate-url (default the URL's host, port 50051)")
	f.StringArrayVar(&where, "where", nil, "filter PROPERTY OP VALUE (OP = != < <= > >= ~), repeatable, ANDed; e.g. --where 'datum>=2018-01-01'")
	f.StringVar(&expandFlag, "expand", "", "return each hit with its context: neighbours:N (1..5) or section[:N] (at most N chunks of its heading section, default 8)")
	f.DurationVar(&timeout, "timeout", 30*time.Second, "time limit of the lookup and the query")
	_ = c.MarkFlagRequired("index")
	return c
}
