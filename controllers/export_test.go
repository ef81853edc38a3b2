package controllers

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ragops/ragops/internal/reconcile"
)

// PatchStatus is the reconcilers' last step for the external tests: obj's status written as
// it differs from before, which obj was read as, and the reconcile's result and error after.
func PatchStatus(ctx context.Context, c client.Client, before, obj reconcile.Object) (ctrl.Result, error) {
	var res ctrl.Result
	var err error
	reconcile.NewStatusPatcher(before, needsAPerson).Done(ctx, c, nil, obj, &res, &err)
	return res, err
}
