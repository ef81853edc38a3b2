// Package volumes turns a pod's volumes into local folders for the local node: emptyDir,
// configMap, secret, downwardAPI and projected volumes are materialised as files under the pod's
// folder (from the API, once at pod start: later updates of the ConfigMap or Secret do not reach a
// running pod); hostPath volumes and PersistentVolumeClaims bound to hostPath (or local)
// PersistentVolumes resolve to the host folder itself.
package volumes

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/ragops/ragops/hack/localnode/internal/podenv"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Volume is a pod volume as a host path.
type Volume struct {
	// Path is the host folder (or file, for a hostPath of type File).
	Path string
	// ReadOnly is true for volumes the kubelet mounts read-only (configMap, secret, downwardAPI,
	// projected) and for read-only hostPath-backed claims.
	ReadOnly bool
}

// Builder materialises volumes.
type Builder struct {
	// Client reads PersistentVolumeClaims and PersistentVolumes and requests service account
	// tokens for projected volumes.
	Client kubernetes.Interface
	// Sources reads ConfigMaps and Secrets.
	Sources podenv.Sources
}

// Prepare materialises every volume of pod under dir (one folder per volume, dir/NAME) and returns
// them by name. It may be called again for the same pod (files are rewritten). Errors:
// *podenv.ConfigError for what the pod's author must fix or wait for (a missing ConfigMap, an
// unbound claim, a hostPath of the wrong type), other errors for API or disk failures; the error
// names the volume.
func (b *Builder) Prepare(ctx context.Context, pod *corev1.Pod, dir string) (map[string]Volume, error) {
	out := make(map[string]Volume, len(pod.Spec.Volumes))
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		vol, err := b.prepare(ctx, pod, v, filepath.Join(dir, v.Name))
		if err != nil {
			var ce *podenv.ConfigError
			if errors.As(err, &ce) {
				return nil, &podenv.ConfigError{Msg: fmt.Sprintf("volume %q: %s", v.Name, ce.Msg)}
			}
			return nil, fmt.Errorf("volume %q: %w", v.Name, err)
		}
		out[v.Name] = vol
	}
	return out, nil
}

func configErr(format string, args ...any) error {
	return &podenv.ConfigError{Msg: fmt.Sprintf(format, args...)}
}

func (b *Builder) prepare(ctx context.Context, pod *corev1.Pod, v *corev1.Volume, dir string) (Volume, error) {
	src := v.VolumeSource
	switch {
	case src.EmptyDir != nil:
		return Volume{Path: dir}, os.MkdirAll(dir, 0o777)
	case src.HostPath != nil:
		return hostPath(src.HostPath)
	case src.PersistentVolumeClaim != nil:
		return b.claim(ctx, pod.Namespace, src.PersistentVolumeClaim)
	case src.ConfigMap != nil, src.Secret != nil, src.DownwardAPI != nil, src.Projected != nil:
		files, err := b.files(ctx, pod, src)
		if err != nil {
			return Volume{}, err
		}
		return Volume{Path: dir, ReadOnly: true}, writeFiles(dir, files)
	}
	return Volume{}, configErr("unsupported volume type (the local node supports emptyDir, hostPath, persistentVolumeClaim, configMap, secret, downwardAPI, projected)")
}

func hostPath(hp *corev1.HostPathVolumeSource) (Volume, error) {
	p := filepath.Clean(hp.Path)
	t := corev1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	fi, statErr := os.Stat(p)
	switch t {
	case corev1.HostPathDirectoryOrCreate:
		if statErr != nil {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return Volume{}, err
			}
			return Volume{Path: p}, nil
		}
		if !fi.IsDir() {
			return Volume{}, configErr("hostPath %s exists and is not a directory", p)
		}
	case corev1.HostPathFileOrCreate:
		if statErr != nil {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return Volume{}, err
			}
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return Volume{}, err
			}
			return Volume{Path: p}, f.Close()
		}
		if fi.IsDir() {
			return Volume{}, configErr("hostPath %s exists and is a directory, not a file", p)
		}
	case corev1.HostPathDirectory:
		if statErr != nil || !fi.IsDir() {
			return Volume{}, configErr("hostPath %s is not an existing directory", p)
		}
	case corev1.HostPathFile:
		if statErr != nil || !fi.Mode().IsRegular() {
			return Volume{}, configErr("hostPath %s is not an existing file", p)
		}
	case corev1.HostPathSocket:
		if statErr != nil || fi.Mode()&fs.ModeSocket == 0 {
			return Volume{}, configErr("hostPath %s is not an existing socket", p)
		}
	case corev1.HostPathCharDev, corev1.HostPathBlockDev:
		if statErr != nil || fi.Mode()&fs.ModeDevice == 0 {
			return Volume{}, configErr("hostPath %s is not an existing device", p)
		}
	default: // unset: like the kubelet, a missing path is created as a folder
		if statErr != nil {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return Volume{}, err
			}
		}
	}
	return Volume{Path: p}, nil
}

// claim resolves a PersistentVolumeClaim to the host folder of its bound PersistentVolume.
func (b *Builder) claim(ctx context.Context, ns string, src *corev1.PersistentVolumeClaimVolumeSource) (Volume, error) {
	pvc, err := b.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, src.ClaimName, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return Volume{}, configErr("persistentvolumeclaim %q not found", src.ClaimName)
		}
		return Volume{}, err
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return Volume{}, configErr("persistentvolumeclaim %q is not bound yet (phase %s)", src.ClaimName, pvc.Status.Phase)
	}
	pv, err := b.Client.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return Volume{}, configErr("persistentvolume %q of claim %q not found", pvc.Spec.VolumeName, src.ClaimName)
		}
		return Volume{}, err
	}
	var p string
	switch {
	case pv.Spec.HostPath != nil:
		vol, err := hostPath(pv.Spec.HostPath)
		if err != nil {
			return Volume{}, err
		}
		p = vol.Path
	case pv.Spec.Local != nil:
		p = pv.Spec.Local.Path
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			return Volume{}, configErr("local persistentvolume %q: %s is not an existing directory", pv.Name, p)
		}
	default:
		return Volume{}, configErr("persistentvolume %q of claim %q is neither hostPath nor local; the local node only mounts those", pv.Name, src.ClaimName)
	}
	ro := src.ReadOnly
	for _, m := range pv.Spec.AccessModes {
		if m == corev1.ReadOnlyMany && len(pv.Spec.AccessModes) == 1 {
			ro = true
		}
	}
	return Volume{Path: p, ReadOnly: ro}, nil
}

// file is one file of a materialised volume.
type file struct {
	path string
	data []byte
	mode os.FileMode
}

func mode(m *int32, def *int32) os.FileMode {
	if m != nil {
		return os.FileMode(*m) & 0o777
	}
	if def != nil {
		return os.FileMode(*def) & 0o777
	}
	return 0o644
}

func (b *Builder) files(ctx context.Context, pod *corev1.Pod, src corev1.VolumeSource) ([]file, error) {
	switch {
	case src.ConfigMap != nil:
		return b.configMapFiles(ctx, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, src.ConfigMap.DefaultMode)
	case src.Secret != nil:
		return b.secretFiles(ctx, pod.Namespace, src.Secret.SecretName, src.Secret.Items, src.Secret.Optional, src.Secret.DefaultMode)
	case src.DownwardAPI != nil:
		return downwardFiles(pod, src.DownwardAPI.Items, src.DownwardAPI.DefaultMode)
	}
	p := src.Projected
	var all []file
	for _, s := range p.Sources {
		var fs []file
		var err error
		switch {
		case s.ConfigMap != nil:
			fs, err = b.configMapFiles(ctx, pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, p.DefaultMode)
		case s.Secret != nil:
			fs, err = b.secretFiles(ctx, pod.Namespace, s.Secret.Name, s.Secret.Items, s.Secret.Optional, p.DefaultMode)
		case s.DownwardAPI != nil:
			fs, err = downwardFiles(pod, s.DownwardAPI.Items, p.DefaultMode)
		case s.ServiceAccountToken != nil:
			fs, err = b.tokenFile(ctx, pod, s.ServiceAccountToken, p.DefaultMode)
		default:
			err = configErr("unsupported projected volume source (configMap, secret, downwardAPI, serviceAccountToken are supported)")
		}
		if err != nil {
			return nil, err
		}
		all = append(all, fs...)
	}
	return all, nil
}

func keyFiles(kind, name string, data map[string][]byte, items []corev1.KeyToPath, def *int32) ([]file, error) {
	var out []file
	if len(items) == 0 {
		for k, v := range data {
			out = append(out, file{path: k, data: v, mode: mode(nil, def)})
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return nil, configErr("key %q not found in %s %q", it.Key, kind, name)
		}
		out = append(out, file{path: it.Path, data: v, mode: mode(it.Mode, def)})
	}
	return out, nil
}

func (b *Builder) configMapFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool, def *int32) ([]file, error) {
	cm, err := b.Sources.ConfigMap(ctx, ns, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			if optional != nil && *optional {
				return nil, nil
			}
			return nil, configErr("configmap %q not found", name)
		}
		return nil, err
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles("configmap", name, data, items, def)
}

func (b *Builder) secretFiles(ctx context.Context, ns, name string, items []corev1.KeyToPath, optional *bool, def *int32) ([]file, error) {
	s, err := b.Sources.Secret(ctx, ns, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			if optional != nil && *optional {
				return nil, nil
			}
			return nil, configErr("secret %q not found", name)
		}
		return nil, err
	}
	return keyFiles("secret", name, s.Data, items, def)
}

func downwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, def *int32) ([]file, error) {
	var out []file
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = podenv.FieldValue(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			var c *corev1.Container
			for i := range pod.Spec.Containers {
				if pod.Spec.Containers[i].Name == it.ResourceFieldRef.ContainerName {
					c = &pod.Spec.Containers[i]
				}
			}
			if c == nil {
				return nil, configErr("downwardAPI item %q names unknown container %q", it.Path, it.ResourceFieldRef.ContainerName)
			}
			v, err = podenv.ResourceValue(pod, c, it.ResourceFieldRef, nil)
		default:
			err = configErr("downwardAPI item %q has neither fieldRef nor resourceFieldRef", it.Path)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, file{path: it.Path, data: []byte(v), mode: mode(it.Mode, def)})
	}
	return out, nil
}

func (b *Builder) tokenFile(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection, def *int32) ([]file, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	tr, err := b.Client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, configErr("service account %q not found for a serviceAccountToken projection", sa)
		}
		return nil, fmt.Errorf("request token for service account %q: %w", sa, err)
	}
	return []file{{path: src.Path, data: []byte(tr.Status.Token), mode: mode(nil, def)}}, nil
}

// writeFiles replaces dir's content with files. Paths must be relative and stay inside dir.
func writeFiles(dir string, files []file) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		clean := filepath.Clean(f.path)
		if filepath.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
			return configErr("file path %q must be relative and stay inside the volume", f.path)
		}
		p := filepath.Join(dir, clean)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(p, f.mode); err != nil {
			return err
		}
	}
	return nil
}
