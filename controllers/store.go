package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/vectorstore"
)

// Store is what the controllers need from Weaviate: aliases, collection lookup and deletion,
// and counts.
// Errors follow vectorstore's typing (vectorstore.IsRetryable).
type Store interface {
	SetAlias(ctx context.Context, alias, collection string) error
	GetAlias(ctx context.Context, alias string) (collection string, found bool, err error)
	DeleteAlias(ctx context.Context, alias string) error
	DeleteCollection(ctx context.Context, collection string) error
	// CollectionExists asks Weaviate whether a collection exists (a missing one is false, nil).
	CollectionExists(ctx context.Context, collection string) (bool, error)
	// Count returns the number of chunks in a collection.
	Count(ctx context.Context, collection string) (int, error)
	// CountDocuments returns the number of distinct documents with chunks in a collection.
	CountDocuments(ctx context.Context, collection string) (int, error)
}

// StoreFactory opens a Store for a Weaviate endpoint with an optional API key and an optional
// CA bundle (PEM; spec.weaviate.caBundle as read from its ConfigMap or Secret).
type StoreFactory func(spec ragopsv1alpha1.WeaviateSpec, apiKey string, caBundle []byte) (Store, error)

// NewWeaviateStore opens a vectorstore.Store for spec. The gRPC address defaults to the URL's
// host with port 50051.
func NewWeaviateStore(spec ragopsv1alpha1.WeaviateSpec, apiKey string, caBundle []byte) (Store, error) {
	cfg, err := StoreConfig(spec, apiKey, caBundle)
	if err != nil {
		return nil, err
	}
	return vectorstore.New(cfg)
}

// StoreTimeout bounds each Weaviate request a reconciler makes. Reconcilers do not retry
// within a reconcile: a failed call returns, and the work queue backs off, so one
// unreachable endpoint holds a worker for seconds, not the workers' minutes.
const StoreTimeout = 10 * time.Second

// StoreConfig converts a WeaviateSpec to the vectorstore.Config of a reconciler: requests
// bounded by StoreTimeout and a single attempt each.
//
// Errors: the URL does not parse or has no host; the message names spec.weaviate.url.
func StoreConfig(spec ragopsv1alpha1.WeaviateSpec, apiKey string, caBundle []byte) (vectorstore.Config, error) {
	cfg, err := vectorstore.EndpointConfig(spec.URL, spec.GRPCAddress, apiKey)
	if err != nil {
		return cfg, fmt.Errorf("spec.weaviate.url: %w", err)
	}
	cfg.CABundle = caBundle
	cfg.Timeout = StoreTimeout
	cfg.Retry = wait.Backoff{Steps: 1}
	return cfg, nil
}

// cachedStores wraps a StoreFactory so each (URL, gRPC address, API key) gets one Store for
// the manager's lifetime: the Weaviate client holds a gRPC connection it cannot close, so a
// client per reconcile would leak goroutines and memory.
func cachedStores(next StoreFactory) StoreFactory {
	var mu sync.Mutex
	stores := map[[4]string]Store{}
	return func(spec ragopsv1alpha1.WeaviateSpec, apiKey string, caBundle []byte) (Store, error) {
		key := [4]string{spec.URL, spec.GRPCAddress, apiKey, string(caBundle)}
		mu.Lock()
		defer mu.Unlock()
		if s, ok := stores[key]; ok {
			return s, nil
		}
		s, err := next(spec, apiKey, caBundle)
		if err != nil {
			return nil, err
		}
		stores[key] = s
		return s, nil
	}
}
