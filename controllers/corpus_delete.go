package controllers

// Delete: a Corpus's extraction cache goes with it. The cache (vectorstore.ExtractionCacheName,
// package pipeline/extractcache) is one vector-less collection on each Weaviate that an Index
// or Experiment of the Corpus writes to; the Corpus names no Weaviate itself, so its deletion
// drops the cache on the Weaviates its Indexes and Experiments name.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/vectorstore"
)

// corpusWeaviates returns the Weaviates the Indexes and Experiments of Corpus c (in its
// namespace) name, one per URL and gRPC address, by URL.
func (r *CorpusReconciler) corpusWeaviates(ctx context.Context, c *ragopsv1alpha1.Corpus) ([]ragopsv1alpha1.WeaviateSpec, error) {
	seen := map[[2]string]ragopsv1alpha1.WeaviateSpec{}
	var idxs ragopsv1alpha1.IndexList
	if err := r.List(ctx, &idxs, client.InNamespace(c.Namespace), client.MatchingFields{indexByCorpus: c.Name}); err != nil {
		return nil, err
	}
	for _, idx := range idxs.Items {
		seen[[2]string{idx.Spec.Weaviate.URL, idx.Spec.Weaviate.GRPCAddress}] = idx.Spec.Weaviate
	}
	var exps ragopsv1alpha1.ExperimentList
	if err := r.List(ctx, &exps, client.InNamespace(c.Namespace), client.MatchingFields{experimentByCorpus: c.Name}); err != nil {
		return nil, err
	}
	for _, e := range exps.Items {
		w := e.Spec.IndexTemplate.Weaviate
		seen[[2]string{w.URL, w.GRPCAddress}] = w
	}
	out := make([]ragopsv1alpha1.WeaviateSpec, 0, len(seen))
	for _, w := range seen {
		if w.URL != "" {
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].URL+out[i].GRPCAddress < out[j].URL+out[j].GRPCAddress })
	return out, nil
}

// dropExtractionCache deletes the Corpus's extraction cache collection on every Weaviate its
// Indexes and Experiments name (a missing one is no error), and returns the Weaviates it
// could not reach, with the errors.
func (r *CorpusReconciler) dropExtractionCache(ctx context.Context, c *ragopsv1alpha1.Corpus) ([]string, error) {
	cache, err := vectorstore.ExtractionCacheName(c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	weaviates, err := r.corpusWeaviates(ctx, c)
	if err != nil {
		return nil, err
	}
	var failed []string
	var errs []error
	for _, w := range weaviates {
		store, err := openWeaviate(ctx, r.Client, r.Options, c.Namespace, w)
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err = store.DeleteCollection(cctx, cache)
			cancel()
		}
		if err != nil {
			failed = append(failed, w.URL)
			errs = append(errs, fmt.Errorf("%s: %w", w.URL, err))
		}
	}
	return failed, errors.Join(errs...)
}

// reconcileDelete drops the extraction cache of a Corpus being deleted (unless it is
// annotated AnnotationSkipCleanup=true), then removes Finalizer. With a Weaviate unreachable it retries with the work queue's backoff; after
// Options.FinalizerTimeout it gives up with a Warning event naming the collection and the
// Weaviates it is left on.
func (r *CorpusReconciler) reconcileDelete(ctx context.Context, c *ragopsv1alpha1.Corpus) error {
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		return nil
	}
	if c.Annotations[AnnotationSkipCleanup] == "true" {
		// Weaviate left alone, as for an Index.
	} else if failed, err := r.dropExtractionCache(ctx, c); err != nil {
		if time.Since(c.DeletionTimestamp.Time) < r.Options.FinalizerTimeout {
			return fmt.Errorf("corpus %s/%s: drop the extraction cache: %w", c.Namespace, c.Name, err)
		}
		cache, _ := vectorstore.ExtractionCacheName(c.Namespace, c.Name)
		r.Events.Eventf(c, nil, corev1.EventTypeWarning, ReasonCleanupFailed, "Delete", "gave up after %s: left behind extraction cache %s on %s: %v",
			r.Options.FinalizerTimeout, cache, strings.Join(failed, ", "), err)
	}
	base := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, Finalizer)
	return r.Patch(ctx, c, client.MergeFrom(base))
}

// openWeaviate opens the Store for a Weaviate named in namespace ns, with its API key and CA
// bundle read from the Secrets and ConfigMaps spec names.
//
// Errors: the API key Secret or CA bundle cannot be read; the store cannot be opened.
func openWeaviate(ctx context.Context, c client.Client, o Options, ns string, spec ragopsv1alpha1.WeaviateSpec) (Store, error) {
	apiKey := ""
	if ref := spec.APIKeySecretRef; ref != nil {
		var sec corev1.Secret
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &sec); err != nil {
			return nil, fmt.Errorf("spec.weaviate.apiKeySecretRef: Secret %q cannot be read: %w", ref.Name, err)
		}
		apiKey = string(sec.Data[ref.Key])
	}
	ca, msg, _, err := weaviateCABundle(ctx, c, ns, spec)
	if err != nil {
		return nil, err
	}
	if msg != "" {
		return nil, errors.New(msg)
	}
	return o.NewStore(spec, apiKey, ca)
}
