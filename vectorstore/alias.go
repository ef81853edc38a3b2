package vectorstore

import (
	"context"
	"errors"
	"net/http"
	"sort"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/alias"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/fault"
)

// SetAlias points the alias name at collection, creating the alias if needed. Repointing is
// atomic on the server: a query through the alias sees the old or the new collection, never
// neither (requires Weaviate >= 1.32).
//
// Errors: invalid name; [*CollectionNotFoundError] when collection does not exist (asked of the
// server, not the cache); typed server errors.
func (s *Store) SetAlias(ctx context.Context, name, collection string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if _, err := s.fetchInfo(ctx, collection); err != nil {
		return err
	}
	return s.retry(ctx, func() error {
		cur, found, err := s.getAlias(ctx, name)
		if err != nil {
			return err
		}
		a := &alias.Alias{Alias: name, Class: collection}
		switch {
		case found && cur == collection:
			return nil
		case found:
			err = s.client.Alias().AliasUpdater().WithAlias(a).Do(ctx)
		default:
			err = s.client.Alias().AliasCreator().WithAlias(a).Do(ctx)
			if isAlreadyExists(err) {
				// Another writer created it meanwhile: go round again and update.
				return &RetryableError{Op: "set alias", Collection: name, Err: err}
			}
		}
		return classify("set alias", name, err)
	})
}

// GetAlias returns the collection the alias name points at; found is false when there is no
// such alias.
func (s *Store) GetAlias(ctx context.Context, name string) (collection string, found bool, err error) {
	err = s.retry(ctx, func() error {
		collection, found, err = s.getAlias(ctx, name)
		return err
	})
	return collection, found, err
}

func (s *Store) getAlias(ctx context.Context, name string) (string, bool, error) {
	a, err := s.client.Alias().AliasGetter().WithAliasName(name).Do(ctx)
	if err != nil {
		var wce *fault.WeaviateClientError
		if errors.As(err, &wce) && wce.StatusCode == http.StatusNotFound {
			return "", false, nil
		}
		return "", false, classify("get alias", name, err)
	}
	return a.Class, true, nil
}

// DeleteAlias removes the alias name; a missing alias is not an error. The collection it
// pointed at is kept.
func (s *Store) DeleteAlias(ctx context.Context, name string) error {
	return s.retry(ctx, func() error {
		err := s.client.Alias().AliasDeleter().WithAliasName(name).Do(ctx)
		if err != nil {
			var wce *fault.WeaviateClientError
			if errors.As(err, &wce) && wce.StatusCode == http.StatusNotFound {
				return nil
			}
			return classify("delete alias", name, err)
		}
		return nil
	})
}

// AliasesOf returns the aliases pointing at collection, sorted.
func (s *Store) AliasesOf(ctx context.Context, collection string) ([]string, error) {
	var names []string
	err := s.retry(ctx, func() error {
		as, err := s.client.Alias().Getter().WithClassName(collection).Do(ctx)
		if err != nil {
			return classify("list aliases", collection, err)
		}
		names = names[:0]
		for _, a := range as {
			if a.Class == collection {
				names = append(names, a.Alias)
			}
		}
		return nil
	})
	sort.Strings(names)
	return names, err
}
