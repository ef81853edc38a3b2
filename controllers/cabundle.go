package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/vectorstore"
)

// Reasons of the conditions set for a CA bundle that cannot be used.
const (
	ReasonCABundleNotFound = "CABundleNotFound"
	ReasonCABundleInvalid  = "CABundleInvalid"
)

// weaviateCABundle reads spec.caBundle from its ConfigMap or Secret in namespace ns: nil when
// none is set. A missing object or key, or a value holding no PEM certificate, comes back as
// a condition message naming the field (and its reason) with a nil error; err is for
// transient API failures.
func weaviateCABundle(ctx context.Context, c client.Reader, ns string, spec ragopsv1alpha1.WeaviateSpec) (pem []byte, msg, reason string, err error) {
	ca := spec.CABundle
	if ca == nil {
		return nil, "", "", nil
	}
	var (
		field, kind string
		ref         *ragopsv1alpha1.SecretKeySelector
		data        map[string][]byte
	)
	switch {
	case ca.ConfigMapKeyRef != nil:
		field, kind, ref = "spec.weaviate.caBundle.configMapKeyRef", "ConfigMap", ca.ConfigMapKeyRef
		var cm corev1.ConfigMap
		err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &cm)
		data = map[string][]byte{}
		for k, v := range cm.Data {
			data[k] = []byte(v)
		}
		for k, v := range cm.BinaryData {
			data[k] = v
		}
	case ca.SecretKeyRef != nil:
		field, kind, ref = "spec.weaviate.caBundle.secretKeyRef", "Secret", ca.SecretKeyRef
		var sec corev1.Secret
		err = c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &sec)
		data = sec.Data
	default:
		return nil, "spec.weaviate.caBundle: neither configMapKeyRef nor secretKeyRef is set", ReasonCABundleInvalid, nil
	}
	if apierrors.IsNotFound(err) {
		return nil, fmt.Sprintf("%s: %s %q not found", field, kind, ref.Name), ReasonCABundleNotFound, nil
	}
	if err != nil {
		return nil, "", "", err
	}
	v, ok := data[ref.Key]
	if !ok {
		return nil, fmt.Sprintf("%s: %s %q has no key %q", field, kind, ref.Name, ref.Key), ReasonCABundleNotFound, nil
	}
	if _, err := vectorstore.ReadCABundle(v); err != nil {
		return nil, fmt.Sprintf("%s: %s %q key %q: %v", field, kind, ref.Name, ref.Key, err), ReasonCABundleInvalid, nil
	}
	return v, "", "", nil
}
