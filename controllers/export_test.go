package controllers

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PatchStatus is the reconcilers' status write for the external tests: obj's status as it
// differs from before, which obj was read as.
func PatchStatus(ctx context.Context, c client.Client, before, obj statusObject) error {
	return (&statusPatcher{before: before}).patch(ctx, c, nil, obj)
}
