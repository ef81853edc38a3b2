package workload

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// RestrictPod makes a worker pod spec pass the Pod Security Standard "restricted"
// (https://kubernetes.io/docs/concepts/security/pod-security-standards/#restricted), so the
// Jobs run in namespaces labelled pod-security.kubernetes.io/enforce: restricted:
//
//   - the pod and every container and init container: runAsNonRoot, seccompProfile
//     RuntimeDefault;
//   - every container and init container: allowPrivilegeEscalation false, capabilities drop
//     ALL, a read-only root filesystem (workers write only to the /tmp emptyDir and their
//     volumes);
//   - no ServiceAccount token: automountServiceAccountToken false. Workers never call the
//     Kubernetes API (results travel in termination messages); S3 workload identity mounts its
//     own audience-bound projected token (Workload.MountS3Identity), not the API token.
//
// Settings a template already made stricter (a runAsUser, say) are kept.
func RestrictPod(spec *corev1.PodSpec) {
	spec.AutomountServiceAccountToken = ptr.To(false)
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	psc := spec.SecurityContext
	psc.RunAsNonRoot = ptr.To(true)
	if psc.SeccompProfile == nil || psc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined {
		psc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	for i := range spec.InitContainers {
		RestrictContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		RestrictContainer(&spec.Containers[i])
	}
}

// RestrictContainer sets the container-level settings of the restricted profile.
func RestrictContainer(c *corev1.Container) {
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	sc := c.SecurityContext
	sc.AllowPrivilegeEscalation = ptr.To(false)
	sc.Privileged = nil
	sc.RunAsNonRoot = ptr.To(true)
	sc.ReadOnlyRootFilesystem = ptr.To(true)
	sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined {
		sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
}
