package plan

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// Defect 11 of issue 16: a plan of another version, or with a field this worker does not
// know, is refused instead of misread.
func TestReadRefusesOtherVersionsAndUnknownFields(t *testing.T) {
	good, err := json.Marshal(Build{Version: Version, Namespace: "ns", Index: "ix", Revision: "r1", Collection: "C", Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	read := func(raw string) (Build, error) {
		p := filepath.Join(dir, File)
		if err := os.WriteFile(p, []byte(raw), 0o644); err != nil {
			t.Fatal(err)
		}
		var b Build
		return b, Read(p, &b)
	}
	b, err := read(string(good))
	if err != nil || b.Shards != 2 || b.Collection != "C" {
		t.Fatalf("current plan: %+v, %v", b, err)
	}
	for name, raw := range map[string]string{
		"no version (an older manager)": strings.Replace(string(good), `"version":"`+Version+`",`, "", 1),
		"a newer version":               strings.Replace(string(good), Version, "ragops.dev/plan/v2", 1),
		"an unknown field":              strings.Replace(string(good), `"shards":2`, `"shards":2,"shardKey":"docId"`, 1),
	} {
		if raw == string(good) {
			t.Fatalf("%s: the fixture did not change", name)
		}
		if _, err := read(raw); err == nil {
			t.Errorf("%s: read without error", name)
		}
	}
}

// SumOCR adds the shards' page counts; shards that read nothing by OCR add nothing, and no
// OCR at all gives nil (status without an ocr block).
func TestSumOCR(t *testing.T) {
	if got := SumOCR([]BuildResult{{Shard: 0}, {Shard: 1}}); got != nil {
		t.Errorf("no OCR: %+v, want nil", got)
	}
	got := SumOCR([]BuildResult{
		{Shard: 0, OCR: &ragopsv1alpha1.OCRStatus{Pages: 7, SecondPass: 2, LowConfidence: 1}},
		{Shard: 1},
		{Shard: 2, OCR: &ragopsv1alpha1.OCRStatus{Pages: 5, SecondPass: 1}},
	})
	if want := (ragopsv1alpha1.OCRStatus{Pages: 12, SecondPass: 3, LowConfidence: 1}); got == nil || *got != want {
		t.Errorf("SumOCR = %+v, want %+v", got, want)
	}
}

// SumReads adds the shards' read counts and keeps the longest planning time; no shard
// reporting reads gives nil.
func TestSumReads(t *testing.T) {
	if got := SumReads([]BuildResult{{Shard: 0}}); got != nil {
		t.Errorf("no reads: %+v, want nil", got)
	}
	got := SumReads([]BuildResult{
		{Shard: 0, Reads: &ragopsv1alpha1.DocumentReads{Extracted: 3, Unchanged: 500, CacheMisses: 3, PlanMilliseconds: 900}},
		{Shard: 1},
		{Shard: 2, Reads: &ragopsv1alpha1.DocumentReads{Extracted: 7, Unchanged: 490, CacheHits: 2, CacheMisses: 7, PlanMilliseconds: 1200}},
	})
	want := ragopsv1alpha1.DocumentReads{Extracted: 10, Unchanged: 990, CacheHits: 2, CacheMisses: 10, PlanMilliseconds: 1200}
	if got == nil || *got != want {
		t.Errorf("SumReads = %+v, want %+v", got, want)
	}
}
