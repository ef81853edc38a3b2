package v1alpha1_test

import (
	"context"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A Corpus without spec.ocr gets the archive defaults at admission: Auto, nld+eng, 300 DPI,
// minConfidence 70; a partial spec.ocr gets the rest.
func TestCorpusOCRDefaults(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		ocr  map[string]any
		want map[string]any
	}{
		{"absent", nil, map[string]any{"mode": "Auto", "languages": []any{"nld", "eng"}, "dpi": int64(300), "minConfidence": int64(70)}},
		{"partial", map[string]any{"mode": "Always", "dpi": int64(200)}, map[string]any{"mode": "Always", "languages": []any{"nld", "eng"}, "dpi": int64(200), "minConfidence": int64(70)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := loadSample(t, "ragops_v1alpha1_corpus.yaml")
			ensureNamespace(t, u.GetNamespace())
			u.SetName("ocr-defaults-" + tc.name)
			if tc.ocr != nil {
				set("spec.ocr", tc.ocr)(u.Object)
			}
			if err := env.Client.Create(ctx, u); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(ctx, u) })
			got, _, _ := unstructured.NestedMap(u.Object, "spec", "ocr")
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("spec.ocr = %v, want %v", got, tc.want)
			}
		})
	}
}
