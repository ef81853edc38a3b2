package v1alpha1

import corev1 "k8s.io/api/core/v1"

// Condition types, following kstatus (sigs.k8s.io/cli-utils/pkg/kstatus), so Flux and Argo CD
// read health without custom checks.
const (
	// ConditionReady is True when the resource is fully reconciled and usable.
	ConditionReady = "Ready"
	// ConditionReconciling is True while work is in progress (abnormal-true).
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when progress needs a change from the user (abnormal-true).
	ConditionStalled = "Stalled"
	// ConditionDeletionBlocked is True while cleanup on deletion cannot finish.
	ConditionDeletionBlocked = "DeletionBlocked"
)

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name of the referent.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`
	// Namespace must be left empty: references never leave the referring object's namespace
	// (docs/security.md). It exists so that a namespace given here is refused at admission
	// instead of silently pruned.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="size(self) == 0",reason=FieldValueForbidden,message="cross-namespace references are not allowed: the referent must be in this object's namespace (omit namespace)"
	Namespace string `json:"namespace,omitempty"`
}

// SecretKeySelector names one key of a Secret in the same namespace.
type SecretKeySelector struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`
	// Namespace must be left empty: the Secret is always read from the referring object's
	// namespace (docs/security.md).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="size(self) == 0",reason=FieldValueForbidden,message="cross-namespace references are not allowed: the Secret must be in this object's namespace (omit namespace)"
	Namespace string `json:"namespace,omitempty"`
	// Key within the Secret's data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// PVCSource is a folder on a PersistentVolumeClaim.
type PVCSource struct {
	// ClaimName of the PersistentVolumeClaim in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	ClaimName string `json:"claimName"`
	// Namespace must be left empty: the claim is always in the referring object's namespace
	// (docs/security.md).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="size(self) == 0",reason=FieldValueForbidden,message="cross-namespace references are not allowed: the PersistentVolumeClaim must be in this object's namespace (omit namespace)"
	Namespace string `json:"namespace,omitempty"`
	// Path of the folder inside the volume; empty means its root.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('..')",message="path must be relative and must not contain '..'"
	Path string `json:"path,omitempty"`
}

// HTTPSource is an archive (tar, tar.gz or zip) or single file fetched over HTTP(S).
type HTTPSource struct {
	// URL of the archive or file.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://') || self.startsWith('http://')",message="url must start with http:// or https://"
	URL string `json:"url"`
	// SHA256 is the expected hex digest of the downloaded bytes; a mismatch fails the sync.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-f0-9]{64}$`
	SHA256 string `json:"sha256,omitempty"`
	// HeadersSecretRef names a Secret whose keys are sent as HTTP request headers
	// (for example Authorization).
	// +optional
	HeadersSecretRef *LocalObjectReference `json:"headersSecretRef,omitempty"`
}

// JobTemplate holds the scheduling settings of the pods a controller starts.
type JobTemplate struct {
	// Image of the ragops binary; empty means the operator's own image.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`
	// Resources of the worker container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// NodeSelector of the worker pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations of the worker pods.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// ServiceAccountName of the worker pods.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// BackoffLimit is the number of retries before the Job fails; per shard for sharded
	// (Indexed) Jobs, whose other shards then still finish.
	// +optional
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
	// ActiveDeadlineSeconds bounds the Job's run time.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
}

// CABundleSource names a PEM bundle of CA certificates: one key of a ConfigMap or of a
// Secret in the same namespace.
// +kubebuilder:validation:XValidation:rule="has(self.configMapKeyRef) != has(self.secretKeyRef)",message="exactly one of configMapKeyRef and secretKeyRef must be set"
type CABundleSource struct {
	// ConfigMapKeyRef is a ConfigMap key holding the PEM bundle.
	// +optional
	ConfigMapKeyRef *SecretKeySelector `json:"configMapKeyRef,omitempty"`
	// SecretKeyRef is a Secret key holding the PEM bundle.
	// +optional
	SecretKeyRef *SecretKeySelector `json:"secretKeyRef,omitempty"`
}
