package controllers_test

import (
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragops/ragops/cmd"
)

func restClient() (rest.Interface, error) {
	cfg := rest.CopyConfig(env.Config)
	cfg.GroupVersion = nil
	cfg.NegotiatedSerializer = nil
	return rest.UnversionedRESTClientFor(withCodec(cfg))
}

func withCodec(cfg *rest.Config) *rest.Config {
	cfg.NegotiatedSerializer = clientSerializer()
	return cfg
}

func watchClient() client.WithWatch {
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: cmd.Scheme()})
	if err != nil {
		panic(err)
	}
	return c
}
