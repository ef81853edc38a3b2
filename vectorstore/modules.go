package vectorstore

import (
	"context"
	"sort"
)

// Modules returns the names of the modules the Weaviate server has enabled (its /v1/meta
// "modules" keys, e.g. text2vec-transformers), sorted.
//
// Errors: the request fails (typed like the other calls).
func (s *Store) Modules(ctx context.Context) ([]string, error) {
	meta, err := s.client.Misc().MetaGetter().Do(ctx)
	if err != nil {
		return nil, classify("meta", "", err)
	}
	m, _ := meta.Modules.(map[string]any)
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names, nil
}
