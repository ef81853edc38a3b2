package controllers

import (
	"context"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/metrics"
	"github.com/ragops/ragops/vectorstore"
)

// InstrumentStores wraps the Stores next opens so that every call is counted in
// ragops_weaviate_requests_total and every failed one in ragops_weaviate_request_errors_total
// (by operation, the Store method's name). A Store that reads replica health
// (CollectionHealth, as vectorstore.Store does) keeps that method through the wrapper; the
// manager's default factory is InstrumentStores over NewWeaviateStore (cached).
func InstrumentStores(next StoreFactory) StoreFactory {
	return func(spec ragopsv1alpha1.WeaviateSpec, apiKey string, caBundle []byte) (Store, error) {
		s, err := next(spec, apiKey, caBundle)
		if err != nil {
			return nil, err
		}
		if _, ok := s.(healthStore); ok {
			return instrumentedHealthStore{instrumentedStore{s}}, nil
		}
		return instrumentedStore{s}, nil
	}
}

type instrumentedStore struct{ next Store }

// Unwrap returns the wrapped Store (for its optional methods, such as modules and collections).
func (s instrumentedStore) Unwrap() Store { return s.next }

// instrumentedHealthStore is an instrumentedStore whose next Store reads replica health.
type instrumentedHealthStore struct{ instrumentedStore }

func (s instrumentedHealthStore) CollectionHealth(ctx context.Context, collection string) (vectorstore.Health, error) {
	h, err := s.next.(healthStore).CollectionHealth(ctx, collection)
	metrics.ObserveWeaviateCall("CollectionHealth", err)
	return h, err
}

func (s instrumentedStore) SetAlias(ctx context.Context, alias, collection string) error {
	err := s.next.SetAlias(ctx, alias, collection)
	metrics.ObserveWeaviateCall("SetAlias", err)
	return err
}

func (s instrumentedStore) GetAlias(ctx context.Context, alias string) (string, bool, error) {
	c, found, err := s.next.GetAlias(ctx, alias)
	metrics.ObserveWeaviateCall("GetAlias", err)
	return c, found, err
}

func (s instrumentedStore) DeleteAlias(ctx context.Context, alias string) error {
	err := s.next.DeleteAlias(ctx, alias)
	metrics.ObserveWeaviateCall("DeleteAlias", err)
	return err
}

func (s instrumentedStore) DeleteCollection(ctx context.Context, collection string) error {
	err := s.next.DeleteCollection(ctx, collection)
	metrics.ObserveWeaviateCall("DeleteCollection", err)
	return err
}

func (s instrumentedStore) CollectionExists(ctx context.Context, collection string) (bool, error) {
	ok, err := s.next.CollectionExists(ctx, collection)
	metrics.ObserveWeaviateCall("CollectionExists", err)
	return ok, err
}

func (s instrumentedStore) Count(ctx context.Context, collection string) (int, error) {
	n, err := s.next.Count(ctx, collection)
	metrics.ObserveWeaviateCall("Count", err)
	return n, err
}

func (s instrumentedStore) CountDocuments(ctx context.Context, collection string) (int, error) {
	n, err := s.next.CountDocuments(ctx, collection)
	metrics.ObserveWeaviateCall("CountDocuments", err)
	return n, err
}
