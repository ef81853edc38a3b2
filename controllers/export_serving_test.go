package controllers

import (
	"context"
	"time"
)

// SetServingGrace sets how long a model server no Index needs is kept after its creation.
func SetServingGrace(d time.Duration) { servingGrace = d }

// SetServerModelHash replaces how the model hash is read from a model server's /meta; it
// returns a function that restores the default.
func SetServerModelHash(fn func(ctx context.Context, endpoint string) (string, error)) (restore func()) {
	old := serverModelHash
	serverModelHash = fn
	return func() { serverModelHash = old }
}
