package endpoint

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// Defaults of [CachedAuthenticator].
const (
	DefaultAuthCacheTTL  = 10 * time.Second
	DefaultAuthCacheSize = 4096
)

// CachedAuthenticator remembers the identities Next authenticated, so that a client sending
// many requests with one token costs one TokenReview per TTL instead of one per request.
//
// Only successes are kept: an unauthenticated token or a failed check (API server down) is
// asked again on its next request. An entry lives TTL or until the token's own exp claim
// (a JWT's, read after Next accepted the token), whichever comes first, so a cached token is
// never accepted after it expired; a revoked token (a deleted ServiceAccount) is accepted at
// most TTL longer. Entries are keyed by SHA-256 of the token (the cache holds no token) and
// at most Size are held: when full, expired entries go first, then those that expire soonest.
type CachedAuthenticator struct {
	Next Authenticator
	// TTL bounds an entry's life; zero is DefaultAuthCacheTTL.
	TTL time.Duration
	// Size bounds the entries; zero is DefaultAuthCacheSize.
	Size int
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	mu      sync.Mutex
	entries map[[sha256.Size]byte]authEntry
}

type authEntry struct {
	id      Identity
	expires time.Time
}

func (c *CachedAuthenticator) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Authenticate implements Authenticator.
func (c *CachedAuthenticator) Authenticate(ctx context.Context, token string) (Identity, error) {
	key := sha256.Sum256([]byte(token))
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return Identity{User: e.id.User, Groups: slices.Clone(e.id.Groups)}, nil
	}
	id, err := c.Next.Authenticate(ctx, token)
	if err != nil {
		return id, err
	}
	ttl := c.TTL
	if ttl <= 0 {
		ttl = DefaultAuthCacheTTL
	}
	expires := now.Add(ttl)
	if exp, ok := tokenExpiry(token); ok && exp.Before(expires) {
		expires = exp
	}
	if !now.Before(expires) {
		return id, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[[sha256.Size]byte]authEntry{}
	}
	size := c.Size
	if size <= 0 {
		size = DefaultAuthCacheSize
	}
	if _, held := c.entries[key]; !held && len(c.entries) >= size {
		c.evict(now, size)
	}
	c.entries[key] = authEntry{id: Identity{User: id.User, Groups: slices.Clone(id.Groups)}, expires: expires}
	return id, nil
}

// evict makes room for one entry: expired entries go; if none had, the one that expires
// soonest. Called with mu held on a full cache (O(size), once per new token on a full cache).
func (c *CachedAuthenticator) evict(now time.Time, size int) {
	var soonest [sha256.Size]byte
	var at time.Time
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
			continue
		}
		if at.IsZero() || e.expires.Before(at) {
			soonest, at = k, e.expires
		}
	}
	if len(c.entries) >= size {
		delete(c.entries, soonest)
	}
}

// Len is the number of entries held (expired ones included until evicted).
func (c *CachedAuthenticator) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// tokenExpiry returns the exp claim of a JWT (seconds since the epoch), unverified: call it
// only on a token the authenticator accepted.
func tokenExpiry(token string) (time.Time, bool) {
	var c struct {
		Exp *json.Number `json:"exp"`
	}
	if !unverifiedClaims(token, &c) || c.Exp == nil {
		return time.Time{}, false
	}
	s, err := c.Exp.Float64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(int64(s), 0), true
}
