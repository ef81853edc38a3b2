// Package testenv starts a real etcd and kube-apiserver (controller-runtime envtest) with
// the ragops CRDs installed, for tests.
//
// The binaries come from KUBEBUILDER_ASSETS, or bin/ at the module root, where
// hack/build-tools.sh builds them (etcd v3.7.3, kube-apiserver v1.37.2). When they are
// missing, Start fails with a message naming that script.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// Env is a running control plane with the ragops CRDs installed.
type Env struct {
	// Config reaches the kube-apiserver as an administrator.
	Config *rest.Config
	// Client is a client for core, batch and ragops types.
	Client client.Client
	env    *envtest.Environment
}

// ModuleRoot returns the repository root (the folder holding go.mod).
func ModuleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// AssetsDir returns the folder holding etcd and kube-apiserver.
func AssetsDir() string {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d
	}
	return filepath.Join(ModuleRoot(), "bin")
}

// ErrNoAssets reports missing control-plane binaries.
var ErrNoAssets = errors.New("control-plane binaries missing")

// Start starts etcd and kube-apiserver and installs the CRDs from config/crd/bases.
// It stops whatever it started when installation fails.
func Start() (*Env, error) {
	dir := AssetsDir()
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return nil, fmt.Errorf("%w: %s not found in %s; run hack/build-tools.sh controlplane etcd (or set KUBEBUILDER_ASSETS)", ErrNoAssets, b, dir)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: dir,
		CRDDirectoryPaths:     []string{filepath.Join(ModuleRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("start envtest: %w", err)
	}
	if err := ragopsv1alpha1.AddToScheme(scheme.Scheme); err != nil {
		_ = env.Stop()
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, env: env}, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error { return e.env.Stop() }

// Kubeconfig writes a kubeconfig file reaching the kube-apiserver as e.Config does, its
// current context in namespace, into t's temporary folder, and returns its path: for
// tests that run a command the way a user does.
func (e *Env) Kubeconfig(t testing.TB, namespace string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: e.Config.Host, CertificateAuthorityData: e.Config.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: e.Config.CertData, ClientKeyData: e.Config.KeyData, Token: e.Config.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: namespace}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// GVK returns the GroupVersionKind of a ragops kind.
func GVK(kind string) schema.GroupVersionKind { return ragopsv1alpha1.GroupVersion.WithKind(kind) }

// Need returns the environment variable env that a test needs (a prepared part: a model folder,
// a library, a binary), skipping the test without it, or failing it under RAGOPS_REQUIRE_ALL=1;
// how says how to provide it.
func Need(t testing.TB, env, how string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatalf("%s is not set: %s", env, how)
		}
		t.Skipf("%s is not set: %s", env, how)
	}
	return v
}

// StartTest starts an Env for one test and stops it when the test ends. Missing binaries
// skip the test, or fail it under RAGOPS_REQUIRE_ALL=1; other failures fail it.
func StartTest(t testing.TB) *Env {
	t.Helper()
	env, err := Start()
	if err != nil {
		if errors.Is(err, ErrNoAssets) && os.Getenv("RAGOPS_REQUIRE_ALL") != "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return env
}
