// Package podenv computes a container's environment and command line the way the kubelet does:
// envFrom (ConfigMaps and Secrets, with prefix), env with valueFrom (configMapKeyRef,
// secretKeyRef, fieldRef, resourceFieldRef) and $(VAR) expansion in values, command and args.
//
// The local node resolves env itself (virtual-kubelet's own resolution leaves a pod using
// `fieldRef: status.podIP` Pending forever and drops resourceFieldRef): status.podIP and
// status.podIPs give the pod's own loopback address (status.podIP, set by the node before the
// containers start; package podip), status.hostIP and status.hostIPs the node's 127.0.0.1.
// Service links other than the `kubernetes` service are not injected (ClusterIPs are unreachable
// from local processes); KUBERNETES_SERVICE_HOST/PORT point at the local apiserver instead.
package podenv

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
)

// NodeIP is the local node's address (status.hostIP of its pods, and status.podIP of a pod
// whose status has none).
const NodeIP = "127.0.0.1"

// Sources fetches the objects env and volumes refer to. Missing objects give an error for which
// apierrors.IsNotFound is true.
type Sources interface {
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// ConfigError is a problem with the pod's configuration the kubelet reports as
// CreateContainerConfigError (a missing ConfigMap, Secret or key that is not optional, a field
// path that does not exist). The container waits and is retried.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

func configErrorf(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}

// Var is one resolved environment variable.
type Var struct{ Name, Value string }

// Resolve returns the environment of container c of pod, in definition order, on top of base
// (service variables, lowest precedence; later definitions replace earlier ones of the same name).
// alloc is the node's allocatable resources, used by resourceFieldRef when the container has no
// limit. Errors: *ConfigError for configuration problems, other errors for API failures.
func Resolve(ctx context.Context, pod *corev1.Pod, c *corev1.Container, src Sources, base []Var, alloc corev1.ResourceList) ([]Var, error) {
	env := newOrdered(base)
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			ref := from.ConfigMapRef
			cm, err := src.ConfigMap(ctx, pod.Namespace, ref.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && ref.Optional != nil && *ref.Optional {
					continue
				}
				return nil, wrapMissing(err, "configmap %q (envFrom)", ref.Name)
			}
			for _, k := range sortedKeys(cm.Data) {
				env.set(from.Prefix+k, cm.Data[k])
			}
		case from.SecretRef != nil:
			ref := from.SecretRef
			s, err := src.Secret(ctx, pod.Namespace, ref.Name)
			if err != nil {
				if apierrors.IsNotFound(err) && ref.Optional != nil && *ref.Optional {
					continue
				}
				return nil, wrapMissing(err, "secret %q (envFrom)", ref.Name)
			}
			keys := make([]string, 0, len(s.Data))
			for k := range s.Data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				env.set(from.Prefix+k, string(s.Data[k]))
			}
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env.set(e.Name, Expand(e.Value, env.lookup))
			continue
		}
		v, ok, err := valueFrom(ctx, pod, c, e.ValueFrom, src, alloc)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			env.set(e.Name, v)
		}
	}
	return env.vars(), nil
}

// Command returns the container's argv: command (else the image's entrypoint) followed by args
// (else, when command is not set, the image's default args), with $(VAR) expanded from env.
func Command(c *corev1.Container, entrypoint, imageArgs []string, env []Var) []string {
	m := newOrdered(env)
	var argv []string
	if len(c.Command) > 0 {
		for _, s := range c.Command {
			argv = append(argv, Expand(s, m.lookup))
		}
	} else {
		argv = append(argv, entrypoint...)
	}
	switch {
	case len(c.Args) > 0:
		for _, s := range c.Args {
			argv = append(argv, Expand(s, m.lookup))
		}
	case len(c.Command) == 0:
		argv = append(argv, imageArgs...)
	}
	return argv
}

func wrapMissing(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if apierrors.IsNotFound(err) {
		return configErrorf("%s not found", what)
	}
	return fmt.Errorf("get %s: %w", what, err)
}

func valueFrom(ctx context.Context, pod *corev1.Pod, c *corev1.Container, vf *corev1.EnvVarSource, src Sources, alloc corev1.ResourceList) (string, bool, error) {
	switch {
	case vf.ConfigMapKeyRef != nil:
		ref := vf.ConfigMapKeyRef
		optional := ref.Optional != nil && *ref.Optional
		cm, err := src.ConfigMap(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", false, nil
			}
			return "", false, wrapMissing(err, "configmap %q", ref.Name)
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, true, nil
		}
		if v, ok := cm.BinaryData[ref.Key]; ok {
			return string(v), true, nil
		}
		if optional {
			return "", false, nil
		}
		return "", false, configErrorf("key %q not found in configmap %q", ref.Key, ref.Name)
	case vf.SecretKeyRef != nil:
		ref := vf.SecretKeyRef
		optional := ref.Optional != nil && *ref.Optional
		s, err := src.Secret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			if apierrors.IsNotFound(err) && optional {
				return "", false, nil
			}
			return "", false, wrapMissing(err, "secret %q", ref.Name)
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), true, nil
		}
		if optional {
			return "", false, nil
		}
		return "", false, configErrorf("key %q not found in secret %q", ref.Key, ref.Name)
	case vf.FieldRef != nil:
		v, err := FieldValue(pod, vf.FieldRef.FieldPath)
		return v, err == nil, err
	case vf.ResourceFieldRef != nil:
		v, err := ResourceValue(pod, c, vf.ResourceFieldRef, alloc)
		return v, err == nil, err
	}
	return "", false, configErrorf("valueFrom names no source")
}

// FieldValue returns the downward API field fieldPath of pod (metadata.name, metadata.namespace,
// metadata.uid, metadata.labels['k'], metadata.annotations['k'], metadata.labels,
// metadata.annotations, spec.nodeName, spec.serviceAccountName, status.podIP(s), status.hostIP(s)).
// A missing label or annotation gives "" as in the kubelet. Errors: *ConfigError for an unknown path.
func FieldValue(pod *corev1.Pod, fieldPath string) (string, error) {
	if k, ok := mapKey(fieldPath, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := mapKey(fieldPath, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		if pod.Status.PodIP != "" {
			return pod.Status.PodIP, nil
		}
		return NodeIP, nil
	case "status.hostIP", "status.hostIPs":
		return NodeIP, nil
	}
	return "", configErrorf("unsupported downward API field path %q", fieldPath)
}

// mapKey parses `prefix['key']`.
func mapKey(path, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix+"[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return "", false
	}
	rest = strings.TrimSuffix(rest, "]")
	if len(rest) >= 2 && (rest[0] == '\'' || rest[0] == '"') && rest[len(rest)-1] == rest[0] {
		return rest[1 : len(rest)-1], true
	}
	return "", false
}

// formatMap renders a map as the kubelet does for downward API volumes: sorted key="value" lines.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range sortedKeys(m) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// ResourceValue returns the resourceFieldRef value (limits.cpu, limits.memory,
// limits.ephemeral-storage, requests.*, hugepages too) of container c (ref.ContainerName when set),
// divided by the divisor and rounded up as the kubelet does; a missing limit falls back to the
// node's allocatable. Errors: *ConfigError for an unknown resource or container.
func ResourceValue(pod *corev1.Pod, c *corev1.Container, ref *corev1.ResourceFieldSelector, alloc corev1.ResourceList) (string, error) {
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		c = nil
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == ref.ContainerName {
				c = &pod.Spec.Containers[i]
			}
		}
		for i := range pod.Spec.InitContainers {
			if pod.Spec.InitContainers[i].Name == ref.ContainerName {
				c = &pod.Spec.InitContainers[i]
			}
		}
		if c == nil {
			return "", configErrorf("resourceFieldRef names unknown container %q", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", configErrorf("unsupported resourceFieldRef resource %q", ref.Resource)
	}
	rn := corev1.ResourceName(name)
	var q resource.Quantity
	var found bool
	if kind == "limits" {
		q, found = c.Resources.Limits[rn]
		if !found {
			q, found = alloc[rn]
		}
	} else {
		q, found = c.Resources.Requests[rn]
		if !found {
			// An unset request is 0 (as in the kubelet), except a set limit defaults it.
			q, found = c.Resources.Limits[rn]
			if !found {
				q, found = resource.Quantity{}, true
			}
		}
	}
	if !found {
		return "", configErrorf("resourceFieldRef %q: the node has no allocatable %s", ref.Resource, name)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if rn == corev1.ResourceCPU {
		v := math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue()))
		return fmt.Sprintf("%d", int64(v)), nil
	}
	v := math.Ceil(float64(q.Value()) / float64(divisor.Value()))
	return fmt.Sprintf("%d", int64(v)), nil
}

// Expand replaces $(NAME) in s with the value lookup gives, keeps references it does not know,
// and turns $$ into $ (Kubernetes' expansion rules, k8s.io/kubernetes third_party/forked/golang/expansion).
func Expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString("$(" + name + ")")
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// ordered is an environment keeping first-definition order, later values replacing earlier ones.
type ordered struct {
	names []string
	vals  map[string]string
}

func newOrdered(base []Var) *ordered {
	o := &ordered{vals: map[string]string{}}
	for _, v := range base {
		o.set(v.Name, v.Value)
	}
	return o
}

func (o *ordered) set(k, v string) {
	if _, ok := o.vals[k]; !ok {
		o.names = append(o.names, k)
	}
	o.vals[k] = v
}

func (o *ordered) lookup(k string) (string, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *ordered) vars() []Var {
	out := make([]Var, 0, len(o.names))
	for _, n := range o.names {
		out = append(out, Var{Name: n, Value: o.vals[n]})
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
