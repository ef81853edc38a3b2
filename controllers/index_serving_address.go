package controllers

// Model server addressing: the URL a collection is wired to and the manager reads /meta from.

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/serving/specs"
)

// servingEndpoint is the base URL of a model server's Service.
func servingEndpoint(namespace string, k servingKey) string {
	s := specs.Server{Name: k.name(), Namespace: namespace}
	return s.Endpoint()
}

// Values of Options.ModelServerURLs.
const (
	ModelServerServiceDNS = "ServiceDNS"
	ModelServerClusterIP  = "ClusterIP"
)

// serverURL is the base URL a model server is addressed by (Options.ModelServerURLs): its
// Service's DNS name, or its ClusterIP ("" while the Service or its ClusterIP does not exist).
func (r *IndexReconciler) serverURL(ctx context.Context, namespace string, k servingKey) (string, error) {
	if r.Options.ModelServerURLs != ModelServerClusterIP {
		return servingEndpoint(namespace, k), nil
	}
	var svc corev1.Service
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: k.name()}, &svc) // cached (ScopeCache)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
		return "http://" + net.JoinHostPort(ip, strconv.Itoa(specs.Port)), nil
	}
	return "", nil
}

// modelServerFor is the model server URL a revision's new collection is wired to (plan
// modelServer), or "" when serving is disabled or Weaviate lacks the module. A full build
// needs a reading of Weaviate's modules (an unwired collection stays unwired for good); an
// incremental sync writes into a collection that keeps its wiring, so it takes "" instead.
// Errors: *ModulesUnknownError (full build, no reading yet); with ModelServerClusterIP, the
// server's Service has no ClusterIP yet (retried).
func (r *IndexReconciler) modelServerFor(ctx context.Context, st *indexState, rev *ragopsv1alpha1.RevisionStatus, incremental bool) (string, error) {
	idx := st.idx
	if !idx.Spec.Serving.ServingEnabled() {
		return "", nil
	}
	has, err := r.transformersForBuild(ctx, st)
	if err != nil && incremental {
		return "", nil
	}
	if err != nil || !has {
		return "", err
	}
	k := servingKeyFor(idx, rev, r.Options.WorkerImage)
	url, err := r.serverURL(ctx, idx.Namespace, k)
	if err == nil && url == "" {
		err = fmt.Errorf("model server Service %s/%s has no ClusterIP yet", idx.Namespace, k.name())
	}
	return url, err
}
