package controllers

import (
	"context"
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/vectorstore"
)

// Reasons of the conditions set for a CA bundle that cannot be used.
const (
	ReasonCABundleNotFound = "CABundleNotFound"
	ReasonCABundleInvalid  = "CABundleInvalid"
)

// Files inside the volumes mounted by s3IdentityMounts and weaviateCAMounts.
const (
	s3IdentityTokenFile = "token"
	weaviateCAFile      = "ca.crt"
)

// s3IdentityMounts gives a workload the credentials source of an S3 web identity: a
// projected ServiceAccount token bound to the identity's audience and expiry, mounted
// read-only at plan.S3IdentityDir, its path in $RAGOPS_S3_WEB_IDENTITY_TOKEN_FILE. The pod
// still mounts no API token (restrictPod): this token is only accepted by the STS audience.
// Other sources and the IAM type (whose environment a cloud's webhook injects) add nothing.
func s3IdentityMounts(w *workload, s3 *ragopsv1alpha1.S3Source) {
	if s3 == nil || s3.Identity == nil || s3.Identity.WebIdentity == nil {
		return
	}
	wi := s3.Identity.WebIdentity
	exp := wi.ExpirationSeconds
	if exp == 0 {
		exp = 3600
	}
	aud := wi.Audience
	if aud == "" {
		aud = "sts.amazonaws.com"
	}
	w.volumes = append(w.volumes, corev1.Volume{Name: "s3-identity", VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{
			ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: aud, ExpirationSeconds: &exp, Path: s3IdentityTokenFile},
		}}},
	}})
	w.mounts = append(w.mounts, corev1.VolumeMount{Name: "s3-identity", MountPath: plan.S3IdentityDir, ReadOnly: true})
	w.env = append(w.env, corev1.EnvVar{Name: plan.EnvS3WebIdentityTokenFile, Value: path.Join(plan.S3IdentityDir, s3IdentityTokenFile)})
	// A projected token needs a named ServiceAccount (the API server refuses it otherwise
	// where no admission plugin fills the default in): the template's, else "default".
	if w.template.ServiceAccountName == "" {
		w.template.ServiceAccountName = "default"
	}
}

// weaviateCAMounts mounts an Index's Weaviate CA bundle read-only at plan.WeaviateCADir and
// names the file in $RAGOPS_WEAVIATE_CA_FILE (vectorstore.EnvCAFile).
func weaviateCAMounts(w *workload, spec ragopsv1alpha1.WeaviateSpec) {
	ca := spec.CABundle
	if ca == nil {
		return
	}
	var src corev1.VolumeSource
	switch {
	case ca.ConfigMapKeyRef != nil:
		src.ConfigMap = &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ca.ConfigMapKeyRef.Name},
			Items:                []corev1.KeyToPath{{Key: ca.ConfigMapKeyRef.Key, Path: weaviateCAFile}},
		}
	case ca.SecretKeyRef != nil:
		src.Secret = &corev1.SecretVolumeSource{
			SecretName: ca.SecretKeyRef.Name,
			Items:      []corev1.KeyToPath{{Key: ca.SecretKeyRef.Key, Path: weaviateCAFile}},
		}
	default:
		return
	}
	w.volumes = append(w.volumes, corev1.Volume{Name: "weaviate-ca", VolumeSource: src})
	w.mounts = append(w.mounts, corev1.VolumeMount{Name: "weaviate-ca", MountPath: plan.WeaviateCADir, ReadOnly: true})
	w.env = append(w.env, corev1.EnvVar{Name: vectorstore.EnvCAFile, Value: path.Join(plan.WeaviateCADir, weaviateCAFile)})
}

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
