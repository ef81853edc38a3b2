// Package authz provisions Weaviate RBAC (v1.30+) for an Index whose Corpus has access rules:
// a role that may read only the Index's revision collections and its alias, and a dynamic
// database user holding that role, whose API key the access endpoint uses. A key of one
// Index reads nothing else and writes nothing (docs/security.md). It calls Weaviate's
// /v1/authz and /v1/users/db APIs through weaviate-go-client with a key that may manage roles
// and users (a root user, AUTHORIZATION_RBAC_ROOT_USERS).
package authz

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/weaviate/weaviate-go-client/v5/weaviate"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/fault"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/rbac"
	"github.com/weaviate/weaviate/entities/models"
)

// maxName is the longest role or user name Weaviate accepts.
const maxName = 128

// name returns prefix+alias, shortened to maxName with the first 16 hex digits of
// SHA-256(alias) when longer (aliases are at most 255 bytes).
func name(prefix, alias string) string {
	n := prefix + alias
	if len(n) <= maxName {
		return n
	}
	sum := sha256.Sum256([]byte(alias))
	return n[:maxName-17] + "-" + hex.EncodeToString(sum[:8])
}

// ReaderRole is the role of the Index behind alias: read_data and read_collections on each
// of its collections, read_aliases on alias.
func ReaderRole(alias string) string { return name("ragops-read-", alias) }

// ReaderUser is the database user holding ReaderRole (the access endpoint's identity).
func ReaderUser(alias string) string { return name("ragops-endpoint-", alias) }

// Enforced reports whether the Weaviate c talks to enforces RBAC: with
// AUTHORIZATION_RBAC_ENABLED it lists its built-in roles (admin, viewer, root), without it
// none. Errors: Weaviate unreachable, or c's key may not read roles (403).
func Enforced(ctx context.Context, c *weaviate.Client) (bool, error) {
	roles, err := c.Roles().AllGetter().Do(ctx)
	if err != nil {
		return false, fmt.Errorf("weaviate roles: %w", err)
	}
	return len(roles) > 0, nil
}

// permission is one granted action on one resource, comparable.
type permission struct{ kind, action, resource string }

func readerPermissions(alias string, collections []string) []permission {
	var out []permission
	for _, c := range collections {
		out = append(out, permission{"data", models.PermissionActionReadData, c}, permission{"collections", models.PermissionActionReadCollections, c})
	}
	out = append(out, permission{"aliases", models.PermissionActionReadAliases, alias})
	slices.SortFunc(out, comparePermission)
	return slices.Compact(out)
}

func comparePermission(a, b permission) int {
	return cmp.Or(strings.Compare(a.kind, b.kind), strings.Compare(a.action, b.action), strings.Compare(a.resource, b.resource))
}

// toRBAC turns permissions into the client's kind.
func toRBAC(ps []permission) []rbac.Permission {
	out := make([]rbac.Permission, 0, len(ps))
	for _, p := range ps {
		switch p.kind {
		case "data":
			out = append(out, rbac.DataPermission{Actions: []string{p.action}, Collection: p.resource})
		case "collections":
			out = append(out, rbac.CollectionsPermission{Actions: []string{p.action}, Collection: p.resource})
		case "aliases":
			out = append(out, rbac.AliasPermission{Actions: []string{p.action}, Alias: p.resource, Collection: "*"})
		}
	}
	return out
}

// held returns the permissions role r holds of the kinds readerPermissions grants; any
// other kind is returned as other (a reader role holds none: they are removed).
func held(r rbac.Role) (ps []permission, other []rbac.Permission) {
	for _, d := range r.Data {
		for _, a := range d.Actions {
			ps = append(ps, permission{"data", a, d.Collection})
		}
	}
	for _, c := range r.Collections {
		for _, a := range c.Actions {
			ps = append(ps, permission{"collections", a, c.Collection})
		}
	}
	for _, al := range r.Alias {
		for _, a := range al.Actions {
			ps = append(ps, permission{"aliases", a, al.Alias})
		}
	}
	other = appendAll(other, r.Backups)
	other = appendAll(other, r.Cluster)
	other = appendAll(other, r.Nodes)
	other = appendAll(other, r.Roles)
	other = appendAll(other, r.Replicate)
	other = appendAll(other, r.Tenants)
	other = appendAll(other, r.Users)
	other = appendAll(other, r.Groups)
	other = appendAll(other, r.MCP)
	return ps, other
}

// EnsureReader makes ReaderRole(alias) grant exactly reads of collections and alias (adding
// before removing permissions of an existing role, which Weaviate deletes once empty) and
// ReaderUser(alias) exist with that role. It returns the user's API key when it created the
// user or, with rotate (the caller lost the key), rotated its key; "" otherwise (the key the
// caller holds stays valid). A user deactivated by hand stays so. Errors: an empty
// collections list; any Weaviate error (403: c's key may not manage roles or users).
func EnsureReader(ctx context.Context, c *weaviate.Client, alias string, collections []string, rotate bool) (key string, err error) {
	if len(collections) == 0 {
		return "", errors.New("authz: a reader of no collections")
	}
	role, user := ReaderRole(alias), ReaderUser(alias)
	want := readerPermissions(alias, collections)
	cur, err := c.Roles().Getter().WithName(role).Do(ctx)
	switch {
	case isStatus(err, http.StatusNotFound):
		if err := c.Roles().Creator().WithRole(rbac.NewRole(role, toRBAC(want)...)).Do(ctx); err != nil {
			return "", fmt.Errorf("create weaviate role %s: %w", role, err)
		}
	case err != nil:
		return "", fmt.Errorf("weaviate role %s: %w", role, err)
	default:
		have, other := held(cur)
		var add, remove []permission
		for _, p := range want {
			if !slices.Contains(have, p) {
				add = append(add, p)
			}
		}
		for _, p := range have {
			if !slices.Contains(want, p) {
				remove = append(remove, p)
			}
		}
		if len(add) > 0 {
			if err := c.Roles().PermissionAdder().WithRole(role).WithPermissions(toRBAC(add)...).Do(ctx); err != nil {
				return "", fmt.Errorf("weaviate role %s: add permissions: %w", role, err)
			}
		}
		if rm := append(toRBAC(remove), other...); len(rm) > 0 {
			if err := c.Roles().PermissionRemover().WithRole(role).WithPermissions(rm...).Do(ctx); err != nil {
				return "", fmt.Errorf("weaviate role %s: remove permissions: %w", role, err)
			}
		}
	}
	// Create, and on 409 (the user exists) rotate only when asked: the getter of
	// weaviate-go-client v5.7.3 cannot decode Weaviate 1.37's user (roles as names).
	key, err = c.Users().DB().Creator().WithUserID(user).Do(ctx)
	switch {
	case isStatus(err, http.StatusConflict):
		key = ""
		if rotate {
			if key, err = c.Users().DB().KeyRotator().WithUserID(user).Do(ctx); err != nil {
				return "", fmt.Errorf("rotate the key of weaviate user %s: %w", user, err)
			}
		}
	case err != nil:
		return "", fmt.Errorf("create weaviate user %s: %w", user, err)
	}
	if err := c.Users().DB().RolesAssigner().WithUserID(user).WithRoles(role).Do(ctx); err != nil {
		return "", fmt.Errorf("assign weaviate role %s to %s: %w", role, user, err)
	}
	return key, nil
}

// DeleteReader deletes ReaderUser(alias) (its key stops working) and ReaderRole(alias);
// either already gone is no error.
func DeleteReader(ctx context.Context, c *weaviate.Client, alias string) error {
	if _, err := c.Users().DB().Deleter().WithUserID(ReaderUser(alias)).Do(ctx); err != nil && !isStatus(err, http.StatusNotFound) {
		return fmt.Errorf("delete weaviate user %s: %w", ReaderUser(alias), err)
	}
	if err := c.Roles().Deleter().WithName(ReaderRole(alias)).Do(ctx); err != nil && !isStatus(err, http.StatusNotFound) {
		return fmt.Errorf("delete weaviate role %s: %w", ReaderRole(alias), err)
	}
	return nil
}

func appendAll[P rbac.Permission](out []rbac.Permission, ps []P) []rbac.Permission {
	for _, p := range ps {
		out = append(out, p)
	}
	return out
}

func isStatus(err error, code int) bool {
	var wce *fault.WeaviateClientError
	return errors.As(err, &wce) && wce.StatusCode == code
}
