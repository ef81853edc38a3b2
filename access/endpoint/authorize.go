package endpoint

import (
	"context"
	"fmt"
	"slices"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// GroupResolver turns an identity into the groups it reads as.
type GroupResolver interface {
	// Groups returns the identity's groups. An error fails the request (503), never
	// widens nor narrows it silently.
	Groups(ctx context.Context, id Identity) ([]string, error)
}

// TokenGroups is the default GroupResolver: the groups the token states, plus, when set,
// those Users maps the username to (a configured mapping, e.g. for ServiceAccounts, whose
// groups the API server fixes).
type TokenGroups struct {
	// Users maps a username to extra groups.
	Users map[string][]string `json:"users,omitempty"`
}

// Groups implements GroupResolver.
func (t TokenGroups) Groups(_ context.Context, id Identity) ([]string, error) {
	return append(slices.Clone(id.Groups), t.Users[id.User]...), nil
}

// Grant is what one authorized request may read: its identity's groups and
// ragopsv1alpha1.PublicGroup. Only [Authorizer.Authorize] makes one; the zero Grant has no
// groups and [Searcher.Search] refuses it.
type Grant struct {
	user   string
	groups []string
}

// User is the identity the grant was made for.
func (g Grant) User() string { return g.user }

// Groups returns the groups the grant reads as, sorted.
func (g Grant) Groups() []string { return slices.Clone(g.groups) }

// Authorizer authenticates a token and resolves its groups into a Grant.
type Authorizer struct {
	Authn  Authenticator
	Groups GroupResolver
}

// GroupError is a failure to resolve an identity's groups (the resolver failed or returned
// an unusable group): the request fails (503), it is not served with fewer or no groups.
type GroupError struct {
	User string
	Err  error
}

func (e *GroupError) Error() string { return fmt.Sprintf("groups of %s: %v", e.User, e.Err) }
func (e *GroupError) Unwrap() error { return e.Err }

// Authorize returns the Grant of token. Errors: *UnauthenticatedError (401); an
// authenticator that could not check the token (503); *GroupError (503).
func (a *Authorizer) Authorize(ctx context.Context, token string) (Grant, error) {
	if token == "" {
		return Grant{}, &UnauthenticatedError{Reason: "empty token"}
	}
	if a.Authn == nil {
		return Grant{}, fmt.Errorf("endpoint: no authenticator configured")
	}
	id, err := a.Authn.Authenticate(ctx, token)
	if err != nil {
		return Grant{}, err
	}
	if id.User == "" {
		return Grant{}, &UnauthenticatedError{Reason: "identity without a username"}
	}
	res := a.Groups
	if res == nil {
		res = TokenGroups{}
	}
	groups, err := res.Groups(ctx, id)
	if err != nil {
		return Grant{}, &GroupError{User: id.User, Err: err}
	}
	if slices.Contains(groups, "") {
		return Grant{}, &GroupError{User: id.User, Err: fmt.Errorf("an empty group name")}
	}
	groups = append(groups, ragopsv1alpha1.PublicGroup)
	slices.Sort(groups)
	return Grant{user: id.User, groups: slices.Compact(groups)}, nil
}
