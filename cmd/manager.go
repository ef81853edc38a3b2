package cmd

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/controllers"
	"github.com/ragops/ragops/internal/tracing"
)

// Scheme holds the core, batch and ragops types the manager uses.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(ragopsv1alpha1.AddToScheme(s))
	return s
}

func newManagerCommand() *cobra.Command {
	var (
		metricsAddr, probeAddr, workerImage string
		leaderElectionNS                    string
		leaderElect                         bool
		progress, drift, finalizerTimeout   time.Duration
		outageWait, jobStopTimeout          time.Duration
		indexConcurrency, maxSyncs          int
		watchNamespaces                     []string
		managerNamespace, modelServerURLs   string
		zapOpts                             = zap.Options{}
	)
	c := &cobra.Command{
		Use:   "manager",
		Short: "Run the ragops controllers",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
			if limit, ok := softMemoryLimit(os.Getenv, cgroupRoot); ok {
				debug.SetMemoryLimit(limit)
				ctrl.Log.Info("soft memory limit at 90% of the container's", "bytes", limit)
			}
			if modelServerURLs != controllers.ModelServerServiceDNS && modelServerURLs != controllers.ModelServerClusterIP {
				return fmt.Errorf("--model-server-urls %q: want %s or %s", modelServerURLs, controllers.ModelServerServiceDNS, controllers.ModelServerClusterIP)
			}
			cfg, err := ctrl.GetConfig()
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			var cacheOpts cache.Options
			if len(watchNamespaces) > 0 {
				cacheOpts.DefaultNamespaces = map[string]cache.Config{}
				for _, ns := range watchNamespaces {
					cacheOpts.DefaultNamespaces[ns] = cache.Config{}
				}
			}
			opts := ctrl.Options{
				Scheme:                  Scheme(),
				Cache:                   cacheOpts,
				Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
				HealthProbeBindAddress:  probeAddr,
				LeaderElection:          leaderElect,
				LeaderElectionID:        "ragops-manager.ragops.dev",
				LeaderElectionNamespace: leaderElectionNS,
			}
			controllers.ScopeCache(&opts)
			mgr, err := ctrl.NewManager(cfg, opts)
			if err != nil {
				return err
			}
			ctx := ctrl.SetupSignalHandler()
			// Reconcile spans over OTLP when OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT is set; the Jobs get the same settings.
			shutdown, err := tracing.Setup(ctx, "ragops-manager")
			if err != nil {
				return err
			}
			defer flushTraces(shutdown, slog.Default())
			if err := controllers.SetupWithManager(ctx, mgr, controllers.Options{
				WorkerImage: workerImage, ManagerNamespace: managerNamespace, ProgressInterval: progress, DriftInterval: drift, FinalizerTimeout: finalizerTimeout,
				IndexConcurrency: indexConcurrency, WeaviateOutageWait: outageWait, JobStopTimeout: jobStopTimeout,
				MaxConcurrentSyncs: maxSyncs,
				ModelServerURLs:    modelServerURLs,
				// The key that provisions each access Index's Weaviate reader (chart value
				// weaviateAdminKeySecret); empty: the Index's own key.
				WeaviateAdminKey: os.Getenv("RAGOPS_WEAVIATE_ADMIN_KEY"),
			}); err != nil {
				return err
			}
			if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
				return err
			}
			if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
				return err
			}
			return mgr.Start(ctx)
		},
	}
	f := c.Flags()
	f.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "address of the Prometheus metrics endpoint (0 disables it)")
	f.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz probes")
	f.BoolVar(&leaderElect, "leader-elect", false, "elect a leader so only one replica reconciles")
	f.StringVar(&leaderElectionNS, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the pod's own namespace; needed outside a cluster)")
	f.StringVar(&workerImage, "worker-image", envOr("RAGOPS_WORKER_IMAGE", "ghcr.io/ragops/ragops:latest"), "image of the scan, embed and evaluate Jobs (env RAGOPS_WORKER_IMAGE)")
	f.DurationVar(&progress, "progress-interval", 10*time.Second, "how often a running build's progress is refreshed (at most 30s)")
	f.DurationVar(&drift, "drift-interval", 5*time.Minute, "how often a serving Index checks that its collection and alias still exist in Weaviate")
	f.IntVar(&indexConcurrency, "index-concurrency", 4, "how many Indexes reconcile at once")
	f.IntVar(&maxSyncs, "max-concurrent-syncs", 0, "how many corpus sync Jobs run at once across all Indexes; a revision that needs a sync waits for a slot, longest-waiting first (0: no bound)")
	f.DurationVar(&outageWait, "worker-weaviate-outage-wait", 0, "how long embedder workers wait out an unavailable Weaviate before their shard fails (0: the worker's default, 5m)")
	f.StringSliceVar(&watchNamespaces, "watch-namespaces", nil, "namespaces whose Corpora, Indexes and Evaluations (and their Jobs, ConfigMaps, Secrets) the manager watches, comma-separated (default: all)")
	f.StringVar(&managerNamespace, "manager-namespace", envOr("POD_NAMESPACE", inClusterNamespace()), "the manager's namespace, whose manager pods model server NetworkPolicies admit to read /meta (env POD_NAMESPACE; default: the service account's namespace)")
	f.StringVar(&modelServerURLs, "model-server-urls", controllers.ModelServerServiceDNS, "how collections' text2vec-transformers URLs and status.serving address model servers: ServiceDNS (http://NAME.NAMESPACE.svc:8080, for a Weaviate in the cluster) or ClusterIP (http://CLUSTERIP:8080, for a Weaviate that reaches Service IPs but not cluster DNS, like the local cluster's)")
	f.DurationVar(&jobStopTimeout, "job-stop-timeout", 5*time.Minute, "how long an Index's deletion waits for its running Jobs' pods to stop before force-deleting them")
	f.DurationVar(&finalizerTimeout, "finalizer-timeout", 15*time.Minute, "how long deletion waits for Weaviate before leaving collections behind")
	gfs := flag.NewFlagSet("", flag.ContinueOnError)
	zapOpts.BindFlags(gfs)
	f.AddGoFlagSet(gfs)
	return c
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// inClusterNamespace is the namespace of the pod's service account; empty outside a cluster.
func inClusterNamespace() string {
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
