package packaging

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/embedder/ort"
	"github.com/ragops/ragops/internal/plan"
	"github.com/ragops/ragops/vectorstore"
)

// scifactDocs writes the first n SciFact documents as a BEIR corpus.jsonl into a folder.
func scifactDocs(t *testing.T, n int) string {
	t.Helper()
	datasets := os.Getenv("RAGOPS_DATASETS") // hack/datasets.sh; else ../shared beside the checkout
	if datasets == "" {
		datasets = filepath.Join(root, "..", "shared", "datasets")
	}
	src := filepath.Join(datasets, "scifact", "corpus.jsonl")
	f, err := os.Open(src)
	if err != nil {
		need(t, "SciFact corpus missing: "+err.Error()+" (RAGOPS_DATASETS, or shared/datasets beside the checkout)")
	}
	defer f.Close()
	var out bytes.Buffer
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for i := 0; i < n && sc.Scan(); i++ {
		out.Write(sc.Bytes())
		out.WriteByte('\n')
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "corpus.jsonl"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestImageLayoutEmbedsWithTheLibraryAtTheDockerfilePath runs `ragops embed` from a folder
// laid out like the image, with only the image's environment telling it where ONNX Runtime
// is: real model weights, real SciFact documents, a real Weaviate.
func TestImageLayoutEmbedsWithTheLibraryAtTheDockerfilePath(t *testing.T) {
	modelDir := os.Getenv("RAGOPS_MODEL_DIR")
	if modelDir == "" {
		need(t, "set RAGOPS_MODEL_DIR: run hack/export-model/export.sh and export the folder it prints")
	}
	rootDir, bin, _, imageEnv := fakeRoot(t)
	w := weaviate(t)
	const docs = 8
	corpusDir := scifactDocs(t, docs)
	collection, err := vectorstore.CollectionName("packaging", "image", "r1")
	if err != nil {
		t.Fatal(err)
	}
	p := plan.Build{
		Version: plan.Version, Namespace: "packaging", Index: "image", Revision: "r1", Collection: collection, Shards: 1,
		Source:   plan.Source{Dir: corpusDir, Format: ragopsv1alpha1.FormatBEIR},
		Strategy: ragopsv1alpha1.ChunkingStrategySpec{Type: ragopsv1alpha1.StrategyFixed, Unit: ragopsv1alpha1.UnitTokens, Size: 64},
		ModelDir: modelDir,
		Embedder: ragopsv1alpha1.EmbedderSpec{Device: ragopsv1alpha1.DeviceCPU, Threads: 1},
		Weaviate: plan.Weaviate{URL: "http://" + w.HTTPAddr, GRPCAddress: w.GRPCAddr},
	}
	planPath := filepath.Join(t.TempDir(), plan.File)
	raw, _ := json.Marshal(p)
	if err := os.WriteFile(planPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}

	run := func(env map[string]string) (plan.BuildResult, string, error) {
		term := filepath.Join(t.TempDir(), "termination-log")
		cmd := exec.CommandContext(context.Background(), bin, "embed", "--plan", planPath, "--termination-log", term)
		// Only what the image sets, re-rooted into the fake root, plus PATH.
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		for k, v := range env {
			if strings.HasPrefix(v, "/") {
				v = filepath.Join(rootDir, v)
			}
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		runErr := cmd.Run()
		var res plan.BuildResult
		if b, err := os.ReadFile(term); err == nil {
			_ = json.Unmarshal(b, &res)
		}
		return res, stderr.String(), runErr
	}

	res, logs, err := run(imageEnv)
	if err != nil || res.Error != "" {
		t.Fatalf("ragops embed in the image layout: %v, result error %q\n%s", err, res.Error, logs)
	}
	if !strings.Contains(logs, "model loaded") || !strings.Contains(logs, "provider=") {
		t.Errorf("no 'model loaded' log line naming the execution provider:\n%s", logs)
	}
	if res.Documents != docs || res.Chunks < docs || res.Tokens <= 0 {
		t.Errorf("result %+v, want %d documents, at least one chunk each, tokens > 0", res, docs)
	}
	n, err := mustStore(t).Count(context.Background(), collection)
	if err != nil || int64(n) != res.Chunks {
		t.Errorf("collection %s holds %d chunks (err %v), the result says %d", collection, n, err, res.Chunks)
	}

	// The same run with the variable pointing where the image has no library fails with a
	// message that names the variable and the script.
	broken := map[string]string{}
	for k, v := range imageEnv {
		broken[k] = v
	}
	broken[ort.EnvLibrary] = "/opt/onnxruntime/lib/missing.so"
	res, logs, err = run(broken)
	if err == nil {
		t.Fatalf("embed succeeded without a runtime library:\n%s", logs)
	}
	if !strings.Contains(res.Error, ort.EnvLibrary) || !strings.Contains(res.Error, "provision-onnxruntime.sh") {
		t.Errorf("error %q does not name %s and the provisioning script", res.Error, ort.EnvLibrary)
	}
}

func mustStore(t *testing.T) *vectorstore.Store {
	t.Helper()
	w := weaviate(t)
	s, err := vectorstore.New(vectorstore.Config{HTTPHost: w.HTTPAddr, GRPCHost: w.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
