package controllers

import (
	"context"
)

// ModelServerClientFunc is a ModelServerClient made of a function.
type ModelServerClientFunc func(ctx context.Context, endpoint string) (string, error)

// ModelHash implements ModelServerClient.
func (f ModelServerClientFunc) ModelHash(ctx context.Context, endpoint string) (string, error) {
	return f(ctx, endpoint)
}
