package beir_test

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/beir"
)

// datasetsDir is RAGOPS_DATASETS (hack/datasets.sh) or, without it, ../shared beside the clone.
func datasetsDir() string {
	if d := os.Getenv("RAGOPS_DATASETS"); d != "" {
		return d
	}
	return "../../../shared/datasets"
}

func open(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(datasetsDir() + "/" + name + "/corpus.jsonl")
	if err != nil {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatalf("BEIR data set %s missing (RAGOPS_DATASETS or ../shared/datasets): %v", name, err)
		}
		t.Skipf("BEIR data set %s missing (RAGOPS_DATASETS or ../shared/datasets): %v", name, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// rawTexts decodes the corpus independently of the package under test.
func rawTexts(t *testing.T, name string) map[string][2]string {
	out := map[string][2]string{}
	sc := bufio.NewScanner(open(t, name))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var rec struct{ ID, Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &struct {
			ID    *string `json:"_id"`
			Title *string `json:"title"`
			Text  *string `json:"text"`
		}{&rec.ID, &rec.Title, &rec.Text}); err != nil {
			t.Fatal(err)
		}
		out[rec.ID] = [2]string{rec.Title, rec.Text}
	}
	return out
}

func TestScanRealCorpora(t *testing.T) {
	for _, c := range []struct {
		name   string
		docs   int
		titled bool
	}{{"scifact", 5183, true}, {"qmsum", 232, false}} {
		t.Run(c.name, func(t *testing.T) {
			raw := rawTexts(t, c.name)
			n := 0
			err := beir.Scan(open(t, c.name), func(e beir.Entry) error {
				if e.Err != nil {
					t.Errorf("line %d: %v", e.Line, e.Err)
					return nil
				}
				n++
				want, ok := raw[e.ID]
				if !ok {
					t.Fatalf("line %d: id %q not in the corpus", e.Line, e.ID)
				}
				if e.Doc.Text[e.BodyStart:] != want[1] {
					t.Fatalf("%s: body at BodyStart differs from the corpus text", e.ID)
				}
				if c.titled {
					if len(e.Doc.Outline) != 1 || e.Doc.Outline[0].Level != 1 || e.Doc.Outline[0].Title != reader.CollapseSpace(want[0]) ||
						e.Doc.Outline[0].End != len(e.Doc.Text) || !strings.HasPrefix(e.Doc.Text, e.Doc.Outline[0].Title+"\n\n") {
						t.Fatalf("%s: outline %+v for title %q", e.ID, e.Doc.Outline, want[0])
					}
				} else if len(e.Doc.Outline) != 0 || e.BodyStart != 0 {
					t.Fatalf("%s: untitled document has outline %v, body start %d", e.ID, e.Doc.Outline, e.BodyStart)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != c.docs {
				t.Errorf("%d documents, want %d", n, c.docs)
			}
		})
	}
}

func TestScanBadLines(t *testing.T) {
	in := strings.Join([]string{
		`{"_id": "a", "title": "T", "text": "body"}`,
		`{"_id": 42, "text": "numeric id"}`,
		`not json`,
		``,
		`{"_id": "b", "title": "no text field"}`,
		`{"_id": "c", "title": " ", "text": "  "}`,
		`{"text": "no id"}`,
	}, "\n")
	type got struct {
		line   int
		id     string
		reason reader.SkipReason
	}
	var gots []got
	err := beir.Scan(strings.NewReader(in), func(e beir.Entry) error {
		r, _ := reader.ReasonOf(e.Err)
		gots = append(gots, got{e.Line, e.ID, r})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []got{{1, "a", ""}, {2, "42", ""}, {3, "", reader.Corrupt}, {5, "b", reader.Corrupt}, {6, "c", reader.Empty}, {7, "", reader.Corrupt}}
	if len(gots) != len(want) {
		t.Fatalf("entries %v, want %v", gots, want)
	}
	for i := range want {
		if gots[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i, gots[i], want[i])
		}
	}
}

// TestMetadataFromRecords: a record's "title" and its "metadata" object's fields reach
// Document.Metadata, as in legalqa-nl's first record (its source file name); a
// "metadata" that is not an object is ignored, the record still read.
func TestMetadataFromRecords(t *testing.T) {
	_, doc, _, err := beir.ParseLine([]byte(`{"_id": 7, "text": "x", "metadata": ["not", "an", "object"]}`))
	if err != nil || doc.Metadata != nil || doc.Text != "x" {
		t.Errorf("metadata not an object: doc %+v, err %v", doc, err)
	}
	sc := bufio.NewScanner(open(t, "legalqa-nl"))
	sc.Buffer(nil, 64<<20)
	if !sc.Scan() {
		t.Fatal("legalqa-nl corpus is empty")
	}
	_, doc, _, err = beir.ParseLine(sc.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"title": "Afschaffingswet", "meta.source_file": "BWBR0001835_1829-06-16_0.xml"}
	if !reflect.DeepEqual(doc.Metadata, want) {
		t.Errorf("legalqa-nl BWBR0001835 metadata %#v, want %#v", doc.Metadata, want)
	}
}
