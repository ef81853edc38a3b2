package podenv

import (
	"context"
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type fakeSources struct {
	cms     map[string]*corev1.ConfigMap
	secrets map[string]*corev1.Secret
}

func (f fakeSources) ConfigMap(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
	if cm, ok := f.cms[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f fakeSources) Secret(_ context.Context, _, name string) (*corev1.Secret, error) {
	if s, ok := f.secrets[name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "1", "B": "two"}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	for in, want := range map[string]string{
		"$(A)-$(B)":  "1-two",
		"$$(A)":      "$(A)",
		"$(MISSING)": "$(MISSING)",
		"cost $5":    "cost $5",
		"$(A":        "$(A",
		"plain":      "plain",
	} {
		if got := Expand(in, lookup); got != want {
			t.Errorf("Expand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResolve(t *testing.T) {
	src := fakeSources{
		cms:     map[string]*corev1.ConfigMap{"cfg": {Data: map[string]string{"mode": "fast", "LEVEL": "3"}}},
		secrets: map[string]*corev1.Secret{"sec": {Data: map[string][]byte{"token": []byte("t0k")}}},
	}
	optional := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-2", Namespace: "ns",
		Annotations: map[string]string{"batch.kubernetes.io/job-completion-index": "2"}},
		Status: corev1.PodStatus{PodIP: "127.1.0.7", HostIP: NodeIP}}
	c := &corev1.Container{
		Name:    "main",
		EnvFrom: []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		Env: []corev1.EnvVar{
			{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "mode"}}},
			{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "token"}}},
			{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}},
			{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "MEM_MI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k", Optional: &optional}}},
			{Name: "SHARD", Value: "shard-$(JOB_COMPLETION_INDEX)-of-$(KUBERNETES_SERVICE_HOST)"},
		},
	}
	alloc := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
	got, err := Resolve(context.Background(), pod, c, src, []Var{{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"}}, alloc)
	if err != nil {
		t.Fatal(err)
	}
	want := []Var{
		{"KUBERNETES_SERVICE_HOST", "127.0.0.1"}, {"CFG_LEVEL", "3"}, {"CFG_mode", "fast"}, {"MODE", "fast"},
		{"TOKEN", "t0k"}, {"JOB_COMPLETION_INDEX", "2"}, {"IP", "127.1.0.7"}, {"HOST_IP", "127.0.0.1"}, {"MEM_MI", "2048"},
		{"SHARD", "shard-2-of-127.0.0.1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Resolve =\n%v\nwant\n%v", got, want)
	}

	c.Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "missing"}}}}
	var ce *ConfigError
	if _, err := Resolve(context.Background(), pod, c, src, nil, alloc); !errors.As(err, &ce) {
		t.Errorf("missing secret key: err = %v, want a ConfigError", err)
	}
}

func TestCommand(t *testing.T) {
	env := []Var{{"N", "3"}}
	c := &corev1.Container{Args: []string{"--shards=$(N)"}}
	if got, want := Command(c, []string{"/usr/local/bin/ragops"}, []string{"--help"}, env), []string{"/usr/local/bin/ragops", "--shards=3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Command = %v, want %v", got, want)
	}
	c = &corev1.Container{}
	if got, want := Command(c, []string{"/e"}, []string{"--help"}, env), []string{"/e", "--help"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Command = %v, want %v", got, want)
	}
}
