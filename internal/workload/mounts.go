package workload

import (
	"path"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/vectorstore"
)

// Files inside the volumes mounted by MountS3Identity and MountWeaviateCA.
const (
	s3IdentityTokenFile = "token"
	weaviateCAFile      = "ca.crt"
)

// MountSource maps a Corpus or dataset source into the workload: a PVC or ConfigMap
// becomes the read-only volume name at dir, and the folder the worker reads is returned
// (dir, or the PVC's path under it); "" for the sources the worker fetches itself.
func (w *Workload) MountSource(name, dir string, pvc *ragopsv1alpha1.PVCSource, cm *ragopsv1alpha1.LocalObjectReference) string {
	switch {
	case pvc != nil:
		w.Volumes = append(w.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.ClaimName, ReadOnly: true},
		}})
		w.Mounts = append(w.Mounts, corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true})
		return path.Join(dir, pvc.Path)
	case cm != nil:
		w.Volumes = append(w.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}},
		}})
		w.Mounts = append(w.Mounts, corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true})
		return dir
	}
	return ""
}

// MountHeaders mounts an HTTP source's header Secret read-only at plan.HeadersDir.
func (w *Workload) MountHeaders(h *ragopsv1alpha1.HTTPSource) {
	if h == nil || h.HeadersSecretRef == nil {
		return
	}
	w.Volumes = append(w.Volumes, corev1.Volume{Name: "http-headers", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: h.HeadersSecretRef.Name},
	}})
	w.Mounts = append(w.Mounts, corev1.VolumeMount{Name: "http-headers", MountPath: plan.HeadersDir, ReadOnly: true})
}

// MountModel mounts a model folder at dir and returns the folder the worker loads: a PVC
// folder, a folder of the image (m.ImagePath), or an emptyDir (sizeLimit ScratchUnknown)
// filled by an init container (running image) that fetches the archive and checks its SHA-256.
func (w *Workload) MountModel(name, dir string, m ragopsv1alpha1.ModelSpec, image string) string {
	switch {
	case m.PVC != nil:
		w.Volumes = append(w.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: m.PVC.ClaimName, ReadOnly: true},
		}})
		w.Mounts = append(w.Mounts, corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true})
		return path.Join(dir, m.PVC.Path)
	case m.HTTP != nil:
		// Room for the archive and its unpacked files, each at most the fetch's cap.
		limit := resource.NewQuantity(ScratchUnknown, resource.BinarySI)
		w.Volumes = append(w.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: limit}}})
		w.Mounts = append(w.Mounts, corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true})
		w.Init = append(w.Init, corev1.Container{
			Name:         "fetch-" + name,
			Image:        image,
			Command:      []string{"ragops"},
			Args:         []string{"fetch", "--url", m.HTTP.URL, "--sha256", m.HTTP.SHA256, "--dest", dir},
			VolumeMounts: []corev1.VolumeMount{{Name: name, MountPath: dir}},
		})
		return dir
	default:
		return m.ImagePath
	}
}

// SecretEnv returns an env var read from a Secret key.
func SecretEnv(name string, ref ragopsv1alpha1.SecretKeySelector) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: ref.Key,
	}}}
}

// MountCorpus fills src from a Corpus's spec and gives the workload the Corpus's mounts and
// credentials: the PVC or ConfigMap at plan.CorpusDir, the HTTP header Secret, the S3 web
// identity or access keys, the Git credentials (optional keys). A remote source's size
// counts toward the scratch volume's limit (ScratchLimit).
func (w *Workload) MountCorpus(c *ragopsv1alpha1.Corpus, src *plan.Source) {
	src.Format, src.Include, src.Exclude, src.MaxDocumentBytes = c.Spec.Format, c.Spec.Include, c.Spec.Exclude, c.Spec.MaxDocumentBytes
	src.OCR = c.Spec.OCR
	src.Metadata = c.Spec.Metadata
	src.Dir = w.MountSource("corpus", plan.CorpusDir, c.Spec.PVC, c.Spec.ConfigMap)
	src.HTTP, src.S3, src.Git = c.Spec.HTTP, c.Spec.S3, c.Spec.Git
	w.fetchesCorpus(c)
	w.MountHeaders(c.Spec.HTTP)
	w.MountS3Identity(c.Spec.S3)
	if s3 := c.Spec.S3; s3 != nil && s3.SecretRef != nil {
		w.Env = append(w.Env,
			SecretEnv(plan.EnvS3AccessKey, ragopsv1alpha1.SecretKeySelector{Name: s3.SecretRef.Name, Key: "accesskey"}),
			SecretEnv(plan.EnvS3SecretKey, ragopsv1alpha1.SecretKeySelector{Name: s3.SecretRef.Name, Key: "secretkey"}))
	}
	if g := c.Spec.Git; g != nil && g.SecretRef != nil {
		opt := true
		for _, kv := range [][2]string{{plan.EnvGitUsername, "username"}, {plan.EnvGitPassword, "password"}} {
			e := SecretEnv(kv[0], ragopsv1alpha1.SecretKeySelector{Name: g.SecretRef.Name, Key: kv[1]})
			e.ValueFrom.SecretKeyRef.Optional = &opt
			w.Env = append(w.Env, e)
		}
	}
}

// pinGit makes a Git source read the commit the Corpus's last scan counted (status.commit),
// not wherever its ref is now: builds, syncs and estimates read what the scan listed, and a
// commit is what a partial clone fetches at depth 1 (corpus.fetchGit). Other sources, and a
// Corpus not scanned yet, are left as they are.
func pinGit(c *ragopsv1alpha1.Corpus, src *plan.Source) {
	if g := c.Spec.Git; g != nil && c.Status.Commit != "" {
		pinned := *g
		pinned.Ref = c.Status.Commit
		src.Git = &pinned
	}
}

// JobUIDLabel is the label the Job controller puts on its pods: the Job's UID.
const JobUIDLabel = "batch.kubernetes.io/controller-uid"

// shareHTTPDownload gives the shards of an embed Job of an HTTP Corpus their Job's UID in
// plan.EnvJobUID (from the pod's JobUIDLabel), under which they share one download of the
// archive (package pipeline/stage); one shard has nothing to share.
func (w *Workload) shareHTTPDownload(c *ragopsv1alpha1.Corpus) {
	if c.Spec.HTTP == nil || w.Shards < 2 {
		return
	}
	w.Env = append(w.Env, corev1.EnvVar{Name: plan.EnvJobUID, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['" + JobUIDLabel + "']"}}})
}

// MountS3Identity gives the workload the credentials source of an S3 web identity: a
// projected ServiceAccount token bound to the identity's audience and expiry, mounted
// read-only at plan.S3IdentityDir, its path in $RAGOPS_S3_WEB_IDENTITY_TOKEN_FILE. The pod
// still mounts no API token (RestrictPod): this token is only accepted by the STS audience.
// Other sources and the IAM type (whose environment a cloud's webhook injects) add nothing.
func (w *Workload) MountS3Identity(s3 *ragopsv1alpha1.S3Source) {
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
	w.Volumes = append(w.Volumes, corev1.Volume{Name: "s3-identity", VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{
			ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: aud, ExpirationSeconds: &exp, Path: s3IdentityTokenFile},
		}}},
	}})
	w.Mounts = append(w.Mounts, corev1.VolumeMount{Name: "s3-identity", MountPath: plan.S3IdentityDir, ReadOnly: true})
	w.Env = append(w.Env, corev1.EnvVar{Name: plan.EnvS3WebIdentityTokenFile, Value: path.Join(plan.S3IdentityDir, s3IdentityTokenFile)})
	// A projected token needs a named ServiceAccount (the API server refuses it otherwise
	// where no admission plugin fills the default in): the template's, else "default".
	if w.Template.ServiceAccountName == "" {
		w.Template.ServiceAccountName = "default"
	}
}

// MountWeaviateCA mounts an Index's Weaviate CA bundle read-only at plan.WeaviateCADir and
// names the file in $RAGOPS_WEAVIATE_CA_FILE (vectorstore.EnvCAFile).
func (w *Workload) MountWeaviateCA(spec ragopsv1alpha1.WeaviateSpec) {
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
	w.Volumes = append(w.Volumes, corev1.Volume{Name: "weaviate-ca", VolumeSource: src})
	w.Mounts = append(w.Mounts, corev1.VolumeMount{Name: "weaviate-ca", MountPath: plan.WeaviateCADir, ReadOnly: true})
	w.Env = append(w.Env, corev1.EnvVar{Name: vectorstore.EnvCAFile, Value: path.Join(plan.WeaviateCADir, weaviateCAFile)})
}

// mountWeaviate gives the workload an Index's Weaviate credentials: the API key Secret and
// the CA bundle.
func (w *Workload) mountWeaviate(spec ragopsv1alpha1.WeaviateSpec) {
	if ref := spec.APIKeySecretRef; ref != nil {
		w.Env = append(w.Env, SecretEnv(plan.EnvWeaviateAPIKey, *ref))
	}
	w.MountWeaviateCA(spec)
}
