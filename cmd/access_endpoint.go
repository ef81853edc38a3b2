package cmd

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragops/ragops/access/endpoint"
)

func newAccessEndpointCommand() *cobra.Command {
	var namespace, listen, config string
	c := &cobra.Command{
		Use:   "endpoint",
		Short: "Serve the access-enforcing query endpoint of a namespace's Indexes",
		Long: `endpoint serves POST /v1/indexes/{index}/search for the Indexes of one namespace whose
Corpus has spec.access. Every request needs a bearer token (a Kubernetes ServiceAccount token,
checked by TokenReview, or a token of an OIDC issuer the --config file names); the identity's
groups filter every search. Missing or invalid tokens are 401; a failure to check a token or to
resolve groups is 503, never an unfiltered result (docs/security.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if namespace == "" {
				namespace = os.Getenv("POD_NAMESPACE")
			}
			if namespace == "" {
				return errors.New("endpoint: --namespace (or POD_NAMESPACE) is required")
			}
			cfg, err := endpoint.LoadConfig(config)
			if err != nil {
				return err
			}
			kube, err := ctrl.GetConfig()
			if err != nil {
				return err
			}
			reader, err := client.New(kube, client.Options{Scheme: Scheme()})
			if err != nil {
				return err
			}
			log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil))
			srv, err := endpoint.NewServer(cfg, kube, reader, namespace, log)
			if err != nil {
				return err
			}
			hs := &http.Server{Addr: listen, Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-cmd.Context().Done()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = hs.Shutdown(ctx)
			}()
			log.Info("access endpoint listening", "address", listen, "namespace", namespace, "oidcIssuers", len(cfg.OIDC))
			if err := hs.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	c.Flags().StringVar(&namespace, "namespace", "", "namespace whose Indexes are served (default $POD_NAMESPACE)")
	c.Flags().StringVar(&listen, "listen", ":8080", "address to listen on")
	c.Flags().StringVar(&config, "config", "", "JSON config file (OIDC issuers, user group mapping); empty: ServiceAccount tokens only")
	return c
}
