package controllers

// Module discovery: whether Weaviate has the text2vec-transformers module the collections' vectorizers need.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/ragops/ragops/vectorstore"
)

// transformersModules remembers, per Weaviate URL, whether the server has the
// text2vec-transformers module (as the serving step last read it), for the build step's plan.
// It is read again after a minute.
var transformersModules sync.Map // URL -> moduleAnswer

// moduleAnswer is one reading of a Weaviate's modules.
type moduleAnswer struct {
	has bool
	at  time.Time
}

// moduleStore is a Store that lists Weaviate's modules and reads a collection's settings
// (vectorstore.Store does).
type moduleStore interface {
	Modules(ctx context.Context) ([]string, error)
	Collection(ctx context.Context, name string) (vectorstore.CollectionInfo, error)
}

// unwrapStore returns the Store behind the manager's instrumenting wrapper.
func unwrapStore(s Store) Store {
	for {
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return s
		}
		s = u.Unwrap()
	}
}

// moduleMissing says what to set on a Weaviate without text2vec-transformers.
func moduleMissing(url, endpoint string) string {
	m := vectorstore.ModuleTransformers
	return fmt.Sprintf("Weaviate at %s lacks the %s module, so revisions are built without a vectorizer and nearText through the alias fails: "+
		"set ENABLE_MODULES=%s (beside any modules it lists), TRANSFORMERS_INFERENCE_API=%s (any URL; collections name their own) and "+
		"TRANSFORMERS_WAIT_FOR_STARTUP=false on Weaviate, and let it reach the model-server Services; revisions built meanwhile keep no vectorizer (the next revision gets one)", url, m, m, endpoint)
}

// weaviateHasTransformers asks Weaviate whether it has the text2vec-transformers module and
// remembers the answer for the build step. A Store that cannot tell answers an error.
func (r *IndexReconciler) weaviateHasTransformers(ctx context.Context, st *indexState) (bool, error) {
	url := st.idx.Spec.Weaviate.URL
	if v, ok := transformersModules.Load(url); ok && time.Since(v.(moduleAnswer).at) < time.Minute {
		return v.(moduleAnswer).has, nil
	}
	ms, ok := unwrapStore(st.store).(moduleStore)
	if !ok {
		return false, fmt.Errorf("the store does not list modules")
	}
	mods, err := ms.Modules(ctx)
	if err != nil {
		return false, err
	}
	has := slices.Contains(mods, vectorstore.ModuleTransformers)
	transformersModules.Store(url, moduleAnswer{has: has, at: time.Now()})
	return has, nil
}
