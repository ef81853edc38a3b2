package cmd

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/testenv"
)

// TestReportExperimentFromTheCluster: the report package's Experiment fixture created in an
// envtest API server (its status written through the status subresource) and read back with
// --kubeconfig gives the same leaderboard as the file, and a name the namespace does not
// hold is refused with the API's NotFound.
func TestReportExperimentFromTheCluster(t *testing.T) {
	env := testenv.StartTest(t)
	ctx := t.Context()
	from := filepath.Join("..", "report", "testdata", "experiment.yaml")
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	var exp ragopsv1alpha1.Experiment
	if err := yaml.UnmarshalStrict(b, &exp); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: exp.Namespace}}); err != nil {
		t.Fatal(err)
	}
	status := *exp.Status.DeepCopy()
	if err := env.Client.Create(ctx, &exp); err != nil {
		t.Fatal(err)
	}
	exp.Status = status
	if err := env.Client.Status().Update(ctx, &exp); err != nil {
		t.Fatal(err)
	}
	kubeconfig := env.Kubeconfig(t, exp.Namespace)

	want, err := runReport(t, "--experiment", "grid", "-f", from, "-n", exp.Namespace, "-o", "-")
	if err != nil {
		t.Fatal(err)
	}
	got, err := runReport(t, "--experiment", "grid", "--kubeconfig", kubeconfig, "-n", exp.Namespace, "-o", "-")
	if err != nil || got != want {
		t.Errorf("from the cluster (err %v):\n%s\nwant, as from the file:\n%s", err, got, want)
	}
	if _, err := runReport(t, "--experiment", "other", "--kubeconfig", kubeconfig, "-n", exp.Namespace, "-o", "-"); err == nil {
		t.Error("an Experiment the namespace does not hold: no error")
	}
}
