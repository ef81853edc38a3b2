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

// moduleCache remembers, per Weaviate URL, whether the server has the
// text2vec-transformers module (as the serving step last read it), for the build step's plan.
// An answer is read again after moduleTTL; the zero value is ready to use.
type moduleCache struct {
	m sync.Map // URL -> moduleAnswer
}

// moduleTTL is how long a reading of a Weaviate's modules is taken as current.
const moduleTTL = time.Minute

// moduleAnswer is one reading of a Weaviate's modules.
type moduleAnswer struct {
	has bool
	at  time.Time
}

// load returns the last reading for url (ok false when none was made since the manager
// started).
func (c *moduleCache) load(url string) (moduleAnswer, bool) {
	v, ok := c.m.Load(url)
	if !ok {
		return moduleAnswer{}, false
	}
	return v.(moduleAnswer), true
}

// store records a reading for url made now.
func (c *moduleCache) store(url string, has bool) {
	c.m.Store(url, moduleAnswer{has: has, at: time.Now()})
}

// ModulesUnknownError says that whether a Weaviate has the text2vec-transformers module is
// not known (no reading since the manager started, and the last read failed): a revision's
// collection cannot be built yet, since it would be built without a vectorizer for good.
type ModulesUnknownError struct {
	URL string
	Err error
}

func (e *ModulesUnknownError) Error() string {
	return fmt.Sprintf("cannot tell whether Weaviate at %s has the %s module (%v): the build waits, so that the revision's collection is not built without a vectorizer",
		e.URL, vectorstore.ModuleTransformers, e.Err)
}

func (e *ModulesUnknownError) Unwrap() error { return e.Err }

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
// remembers the answer for the build step; a reading younger than moduleTTL is reused. A
// Store that cannot list modules (not a Weaviate) has none. Errors: the read failed.
func (r *IndexReconciler) weaviateHasTransformers(ctx context.Context, st *indexState) (bool, error) {
	url := st.idx.Spec.Weaviate.URL
	if v, ok := r.modules.load(url); ok && time.Since(v.at) < moduleTTL {
		return v.has, nil
	}
	ms, ok := unwrapStore(st.store).(moduleStore)
	if !ok {
		r.modules.store(url, false)
		return false, nil
	}
	mods, err := ms.Modules(ctx)
	if err != nil {
		return false, err
	}
	has := slices.Contains(mods, vectorstore.ModuleTransformers)
	r.modules.store(url, has)
	return has, nil
}

// transformersForBuild is whether a new collection on st's Weaviate gets a vectorizer: a
// fresh reading, or the last one when Weaviate cannot be read now. Errors:
// *ModulesUnknownError when there is no reading at all.
func (r *IndexReconciler) transformersForBuild(ctx context.Context, st *indexState) (bool, error) {
	has, err := r.weaviateHasTransformers(ctx, st)
	if err == nil {
		return has, nil
	}
	if v, ok := r.modules.load(st.idx.Spec.Weaviate.URL); ok {
		return v.has, nil
	}
	return false, &ModulesUnknownError{URL: st.idx.Spec.Weaviate.URL, Err: err}
}
