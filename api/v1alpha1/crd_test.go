package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		println(err.Error())
		os.Exit(1)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

func loadSample(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(), "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &u.Object); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return u
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

var samples = []string{
	"ragops_v1alpha1_corpus.yaml",
	"ragops_v1alpha1_chunkingstrategy.yaml",
	"ragops_v1alpha1_index.yaml",
	"ragops_v1alpha1_evaluation.yaml",
	"models/index_multilingual-e5-small.yaml",
	"models/index_bge-small-en-v1.5.yaml",
	"models/index_e5-small-v2.yaml",
	"models/index_e5-small-v2-int8.yaml",
	"models/index_e5-small-v2-fp16-gpu.yaml",
}

func TestSamplesAreAccepted(t *testing.T) {
	ctx := context.Background()
	for _, f := range samples {
		u := loadSample(t, f)
		ensureNamespace(t, u.GetNamespace())
		if err := env.Client.Create(ctx, u); err != nil {
			t.Errorf("%s rejected: %v", f, err)
			continue
		}
		t.Cleanup(func() { _ = env.Client.Delete(ctx, u) })
	}

	// Defaults land in the stored object.
	var idx ragopsv1alpha1.Index
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: "gemeente-archief", Name: "raadsbesluiten"}, &idx); err != nil {
		t.Fatal(err)
	}
	if idx.Spec.VectorIndex.Type != "hnsw" || idx.Spec.Rollout.RevisionHistoryLimit != 3 || idx.Spec.Embedder.Precision != ragopsv1alpha1.PrecisionFP32 {
		t.Errorf("index defaults: vectorIndex.type=%q revisionHistoryLimit=%d embedder.precision=%q", idx.Spec.VectorIndex.Type, idx.Spec.Rollout.RevisionHistoryLimit, idx.Spec.Embedder.Precision)
	}
	if got := idx.Spec.Rollout.Gate.Evaluation.Dataset.Split; got != "test" {
		t.Errorf("gate dataset split default = %q, want test", got)
	}
	var cs ragopsv1alpha1.ChunkingStrategy
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: "gemeente-archief", Name: "besluit-koppen-late"}, &cs); err != nil {
		t.Fatal(err)
	}
	if cs.Spec.Heading.Patterns[0].Pattern != "^Beslispunt" || cs.Spec.Heading.Markdown == nil || !*cs.Spec.Heading.Markdown {
		t.Errorf("strategy round trip: %+v", cs.Spec.Heading)
	}
}

// mutation edits a sample's object before it is submitted.
type mutation func(obj map[string]any)

func set(path string, v any) mutation {
	return func(obj map[string]any) {
		keys := strings.Split(path, ".")
		m := obj
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[keys[len(keys)-1]] = v
	}
}

func del(path string) mutation {
	return func(obj map[string]any) {
		keys := strings.Split(path, ".")
		m := obj
		for _, k := range keys[:len(keys)-1] {
			m = m[k].(map[string]any)
		}
		delete(m, keys[len(keys)-1])
	}
}

func TestBadSpecsAreRejected(t *testing.T) {
	cases := []struct {
		name   string
		sample string
		edits  []mutation
		// want are substrings the API server's message must contain: the field and the problem.
		want []string
	}{
		{"corpus with two sources", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.pvc", map[string]any{"claimName": "docs"})},
			[]string{"spec", "exactly one source must be set"}},
		{"corpus with no source", "ragops_v1alpha1_corpus.yaml",
			[]mutation{del("spec.s3")},
			[]string{"spec", "exactly one source must be set"}},
		{"corpus pvc path escaping the volume", "ragops_v1alpha1_corpus.yaml",
			[]mutation{del("spec.s3"), set("spec.pvc", map[string]any{"claimName": "docs", "path": "../etc"})},
			[]string{"spec.pvc.path", "must be relative"}},
		{"corpus unknown format", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.format", "RTF")},
			[]string{"spec.format", "Unsupported value"}},
		{"corpus ocr dpi below 72", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.ocr", map[string]any{"dpi": int64(50)})},
			[]string{"spec.ocr.dpi", "should be greater than or equal to 72"}},
		{"corpus ocr dpi above 600", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.ocr", map[string]any{"dpi": int64(1200)})},
			[]string{"spec.ocr.dpi", "should be less than or equal to 600"}},
		{"corpus ocr language not a tesseract code", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.ocr", map[string]any{"languages": []any{"nld", "NL"}})},
			[]string{"spec.ocr.languages[1]", "should match"}},
		{"corpus ocr language twice", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.ocr", map[string]any{"languages": []any{"nld", "nld"}})},
			[]string{"spec.ocr.languages[1]", "Duplicate value"}},
		{"corpus ocr unknown mode", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.ocr", map[string]any{"mode": "Sometimes"})},
			[]string{"spec.ocr.mode", "Unsupported value"}},
		{"corpus ocr minConfidence above 100", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.ocr", map[string]any{"minConfidence": int64(101)})},
			[]string{"spec.ocr.minConfidence", "should be less than or equal to 100"}},
		{"metadata field with two froms", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.metadata", metadataFields(map[string]any{"name": "title", "type": "text",
				"from": map[string]any{"reader": "title", "sidecar": "title"}}))},
			[]string{"spec.metadata.fields[0].from", "from must set exactly one of reader, source, path, sidecar"}},
		{"metadata field with no from", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.metadata", metadataFields(map[string]any{"name": "title", "type": "text", "from": map[string]any{}}))},
			[]string{"spec.metadata.fields[0].from", "from must set exactly one of reader, source, path, sidecar"}},
		{"metadata path pattern without the field's capture", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.metadata", metadataFields(map[string]any{"name": "year", "type": "int",
				"from": map[string]any{"path": "moties/{jaar}/"}}))},
			[]string{"spec.metadata.fields[0].from.path", "from.path must capture the field"}},
		{"metadata field named like a chunk property", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.metadata", metadataFields(map[string]any{"name": "docId", "type": "text",
				"from": map[string]any{"reader": "title"}}))},
			[]string{"spec.metadata.fields[0].name", "one of ragops's own chunk properties"}},
		{"metadata field name not a property name", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.metadata", metadataFields(map[string]any{"name": "publication-date", "type": "date",
				"from": map[string]any{"reader": "created"}}))},
			[]string{"spec.metadata.fields[0].name", "should match"}},
		{"metadata field name starting with a capital", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.metadata", metadataFields(map[string]any{"name": "Datum", "type": "date",
				"from": map[string]any{"sidecar": "datum"}}))},
			[]string{"spec.metadata.fields[0].name", "should match"}},
		{"metadata field of an unknown type", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.metadata", metadataFields(map[string]any{"name": "year", "type": "year",
				"from": map[string]any{"sidecar": "year"}}))},
			[]string{"spec.metadata.fields[0].type", "Unsupported value"}},
		{"metadata source field outside source.", "ragops_v1alpha1_corpus.yaml",
			[]mutation{set("spec.metadata", metadataFields(map[string]any{"name": "changed", "type": "date",
				"from": map[string]any{"source": "modified"}}))},
			[]string{"spec.metadata.fields[0].from.source", "source fields start with source."}},
		{"overlap equal to size", "ragops_v1alpha1_chunkingstrategy.yaml",
			[]mutation{set("spec.size", int64(256)), set("spec.overlap", int64(256))},
			[]string{"spec.overlap", "overlap must be less than size"}},
		{"size zero", "ragops_v1alpha1_chunkingstrategy.yaml",
			[]mutation{set("spec.size", int64(0))},
			[]string{"spec.size", "should be greater than or equal to 1"}},
		{"heading type without heading block", "ragops_v1alpha1_chunkingstrategy.yaml",
			[]mutation{del("spec.heading")},
			[]string{"spec.heading", "heading is required when type is Heading"}},
		{"sliding window without stride block", "ragops_v1alpha1_chunkingstrategy.yaml",
			[]mutation{set("spec.type", "SlidingWindow"), del("spec.heading")},
			[]string{"spec.slidingWindow", "slidingWindow is required when type is SlidingWindow"}},
		{"heading block on a Fixed strategy", "ragops_v1alpha1_chunkingstrategy.yaml",
			[]mutation{set("spec.type", "Fixed")},
			[]string{"spec.heading", "heading may only be set when type is Heading"}},
		{"empty heading pattern", "ragops_v1alpha1_chunkingstrategy.yaml",
			[]mutation{set("spec.heading.patterns", []any{map[string]any{"pattern": ""}})},
			[]string{"spec.heading.patterns[0].pattern", "at least 1 chars long"}},
		{"invalid heading regex", "ragops_v1alpha1_chunkingstrategy.yaml",
			[]mutation{set("spec.heading.patterns", []any{map[string]any{"pattern": "^Beslispunt ("}})},
			[]string{"spec.heading.patterns[0].pattern", "pattern must be a valid regular expression"}},
		{"late window not above its overlap", "ragops_v1alpha1_chunkingstrategy.yaml",
			[]mutation{set("spec.late.window", int64(128)), set("spec.late.windowOverlap", int64(128))},
			[]string{"spec.late.windowOverlap", "windowOverlap must be less than window"}},
		{"kmeans cluster without k", "ragops_v1alpha1_chunkingstrategy.yaml",
			[]mutation{set("spec.type", "Cluster"), del("spec.heading"), set("spec.cluster", map[string]any{"mode": "KMeans"})},
			[]string{"spec.cluster.clusters", "clusters is required when mode is KMeans"}},
		{"sample fraction of 0", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.sample", map[string]any{"fraction": 0.0})},
			[]string{"spec.sample.fraction", "fraction must be in (0, 1]"}},
		{"sample judged by a dataset with no source", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.sample", map[string]any{"fraction": 0.5, "judged": map[string]any{"split": "dev"}})},
			[]string{"spec.sample.judged", "exactly one dataset source must be set"}},
		{"zero shards", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.embedder.shards", int64(0))},
			[]string{"spec.embedder.shards", "should be greater than or equal to 1"}},
		{"unknown precision", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.embedder.precision", "bf16")},
			[]string{"spec.embedder.precision", "Unsupported value", `"fp16"`}},
		{"model with two sources", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.model.imagePath", "/models/minilm")},
			[]string{"spec.model", "exactly one model source must be set"}},
		{"gated rollout without gate", "ragops_v1alpha1_index.yaml",
			[]mutation{del("spec.rollout.gate")},
			[]string{"spec.rollout.gate", "gate is required when policy is EvaluationGated"}},
		{"gate regression above 1", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.rollout.gate.maxRegression", 1.5)},
			[]string{"spec.rollout.gate.maxRegression", "maxRegression must be between 0 and 1"}},
		{"gate confidence of 1", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.rollout.gate.confidence", 1.0)},
			[]string{"spec.rollout.gate.confidence", "confidence must be between 0.5 and 0.999"}},
		{"weaviate url without scheme", "ragops_v1alpha1_index.yaml",
			[]mutation{set("spec.weaviate.url", "weaviate:8080")},
			[]string{"spec.weaviate.url", "url must start with http:// or https://"}},
		{"k of zero", "ragops_v1alpha1_evaluation.yaml",
			[]mutation{set("spec.k", []any{int64(0), int64(10)})},
			[]string{"spec.k", "every k must be between 1 and 1000"}},
		{"k above 1000", "ragops_v1alpha1_evaluation.yaml",
			[]mutation{set("spec.k", []any{int64(1001)})},
			[]string{"spec.k", "every k must be between 1 and 1000"}},
		{"hybrid alpha above 1", "ragops_v1alpha1_evaluation.yaml",
			[]mutation{set("spec.hybrid.alpha", 1.2)},
			[]string{"spec.hybrid.alpha", "alpha must be between 0 and 1"}},
		{"hybrid options on a dense evaluation", "ragops_v1alpha1_evaluation.yaml",
			[]mutation{set("spec.mode", "Dense")},
			[]string{"spec.hybrid", "hybrid may only be set when mode is Hybrid"}},
		{"dataset with two sources", "ragops_v1alpha1_evaluation.yaml",
			[]mutation{set("spec.dataset.pvc", map[string]any{"claimName": "beir"})},
			[]string{"spec.dataset", "exactly one dataset source must be set"}},
		{"expand neighbours above 5", "ragops_v1alpha1_evaluation.yaml",
			[]mutation{set("spec.expand", map[string]any{"mode": "Neighbours", "size": int64(6)})},
			[]string{"spec.expand.size", "Neighbours size must be between 1 and 5"}},
		{"expand section above 20", "ragops_v1alpha1_evaluation.yaml",
			[]mutation{set("spec.expand", map[string]any{"mode": "Section", "size": int64(21)})},
			[]string{"spec.expand.size", "should be less than or equal to 20"}},
		{"expand unknown mode", "ragops_v1alpha1_evaluation.yaml",
			[]mutation{set("spec.expand", map[string]any{"mode": "Paragraph"})},
			[]string{"spec.expand.mode", "Unsupported value"}},
		{"expand k above 100", "ragops_v1alpha1_evaluation.yaml",
			[]mutation{set("spec.expand", map[string]any{"mode": "Section", "k": int64(101)})},
			[]string{"spec.expand.k", "should be less than or equal to 100"}},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := loadSample(t, tc.sample)
			ensureNamespace(t, u.GetNamespace())
			u.SetName("bad-" + strings.ReplaceAll(tc.name, " ", "-"))
			for _, e := range tc.edits {
				e(u.Object)
			}
			requireRejected(t, ctx, u, tc.want)
		})
	}
}

// requireRejected creates u and requires the apiserver to refuse it as Invalid with a message
// holding every string of want (a created object is deleted again).
func requireRejected(t *testing.T, ctx context.Context, u *unstructured.Unstructured, want []string) {
	t.Helper()
	err := env.Client.Create(ctx, u)
	if err == nil {
		_ = env.Client.Delete(ctx, u)
		t.Fatalf("accepted; want rejection mentioning %q", want)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want an Invalid error, got %v", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("message %q does not contain %q", err.Error(), w)
		}
	}
}

func TestInstalledCRDsShowColumnsAndShortNames(t *testing.T) {
	want := map[string]struct {
		shortNames []string
		columns    []string
	}{
		"evaluations.ragops.dev":        {[]string{"eval", "evals"}, []string{"Index", "Mode", "Recall@10", "nDCG@10", "MRR@10", "Queries", "Ready", "Age"}},
		"indexes.ragops.dev":            {[]string{"idx"}, []string{"Corpus", "Strategy", "Revision", "Chunks", "Progress", "Ready", "Age"}},
		"corpora.ragops.dev":            {[]string{"corp"}, []string{"Source", "Documents", "Ready", "Age"}},
		"chunkingstrategies.ragops.dev": {[]string{"cs", "chunking"}, []string{"Type", "Size", "Overlap", "Late", "Age"}},
	}
	for name, w := range want {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, &crd); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Join(crd.Spec.Names.ShortNames, ",") != strings.Join(w.shortNames, ",") {
			t.Errorf("%s short names %v, want %v", name, crd.Spec.Names.ShortNames, w.shortNames)
		}
		if len(crd.Spec.Names.Categories) != 1 || crd.Spec.Names.Categories[0] != "rag" {
			t.Errorf("%s categories %v, want [rag]", name, crd.Spec.Names.Categories)
		}
		var shown []string
		for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
			if c.Priority == 0 {
				shown = append(shown, c.Name)
			}
		}
		if strings.Join(shown, ",") != strings.Join(w.columns, ",") {
			t.Errorf("%s columns %v, want %v", name, shown, w.columns)
		}
		if crd.Spec.Versions[0].Subresources == nil || crd.Spec.Versions[0].Subresources.Status == nil {
			t.Errorf("%s has no status subresource", name)
		}
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "evaluations.ragops.dev"}, &crd); err != nil {
		t.Fatal(err)
	}
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		if c.Name == "Recall@10" && (c.JSONPath != ".status.recallAt10" || c.Type != "number") {
			t.Errorf("Recall@10 column = %+v", c)
		}
	}
}

// metadataFields is a Corpus spec.metadata declaring fields.
func metadataFields(fields ...map[string]any) map[string]any {
	list := make([]any, len(fields))
	for i, f := range fields {
		list[i] = f
	}
	return map[string]any{"fields": list}
}

// Issue 52: one field of each origin is admitted, and the sidecar suffix is defaulted.
func TestMetadataFieldsAreAccepted(t *testing.T) {
	ctx := context.Background()
	u := loadSample(t, "ragops_v1alpha1_corpus.yaml")
	ensureNamespace(t, u.GetNamespace())
	u.SetName("metadata-fields")
	set("spec.metadata", metadataFields(
		map[string]any{"name": "title", "type": "text", "from": map[string]any{"reader": "title"}},
		map[string]any{"name": "changed", "type": "date", "from": map[string]any{"source": "source.modified"}},
		map[string]any{"name": "year", "type": "int", "from": map[string]any{"path": "moties/{year}/"}},
		map[string]any{"name": "type", "type": "text", "from": map[string]any{"sidecar": "type"}},
	))(u.Object)
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatalf("rejected: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, u) })
	var c ragopsv1alpha1.Corpus
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}, &c); err != nil {
		t.Fatal(err)
	}
	if m := c.Spec.Metadata; m == nil || len(m.Fields) != 4 || m.SidecarSuffix != ".meta.json" || m.Fields[2].From.Path != "moties/{year}/" {
		t.Errorf("stored metadata = %+v", c.Spec.Metadata)
	}
}

// Issue 52, small-to-big: spec.expand is accepted at its bounds (Neighbours 5, Section 20)
// and k defaults to 10.
func TestEvaluationExpandIsAccepted(t *testing.T) {
	ctx := context.Background()
	for i, x := range []map[string]any{{"mode": "Neighbours", "size": int64(5)}, {"mode": "Section", "size": int64(20), "k": int64(100)}, {"mode": "Section"}} {
		u := loadSample(t, "ragops_v1alpha1_evaluation.yaml")
		ensureNamespace(t, u.GetNamespace())
		u.SetName(fmt.Sprintf("expand-%d", i))
		set("spec.expand", x)(u.Object)
		if err := env.Client.Create(ctx, u); err != nil {
			t.Fatalf("spec.expand %v rejected: %v", x, err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(ctx, u) })
		var ev ragopsv1alpha1.Evaluation
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: u.GetNamespace(), Name: u.GetName()}, &ev); err != nil {
			t.Fatal(err)
		}
		if want, _ := x["k"].(int64); ev.Spec.Expand == nil || ev.Spec.Expand.K != int32(max(want, 10)) {
			t.Errorf("spec.expand %v stored as %+v, want k %d", x, ev.Spec.Expand, max(want, 10))
		}
	}
}
