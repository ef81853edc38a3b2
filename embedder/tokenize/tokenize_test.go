package tokenize

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

const prepare = "run hack/export-model/export.sh and set RAGOPS_MODEL_DIR to the folder it prints"

// modelDir returns RAGOPS_MODEL_DIR, failing under RAGOPS_REQUIRE_ALL=1 and skipping otherwise.
func modelDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("RAGOPS_MODEL_DIR")
	if dir == "" {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatalf("RAGOPS_MODEL_DIR is not set: %s", prepare)
		}
		t.Skipf("RAGOPS_MODEL_DIR is not set: %s", prepare)
	}
	return dir
}

type refLine struct {
	Source  string   `json:"source"`
	Text    string   `json:"text"`
	IDs     []int64  `json:"ids"`
	Offsets [][2]int `json:"offsets"`
}

func readRef(t *testing.T, path string) []refLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v: %s", err, prepare)
	}
	defer f.Close()
	var out []refLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l refLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestParityWithHF compares ids and byte offsets with HF tokenizers on the reference
// strings (SciFact, QMSum, Dutch, accents, NBSP, CJK, emoji, controls).
func TestParityWithHF(t *testing.T) {
	parity(t, modelDir(t))
}

// modelEnvs names the model folders hack/prepare.d/models.sh prints (hack/export-model/models.sh).
var modelEnvs = []string{"RAGOPS_BGE_SMALL_DIR", "RAGOPS_E5_SMALL_DIR", "RAGOPS_E5_SMALL_INT8_DIR", "RAGOPS_ME5_SMALL_DIR"}

// TestParityWithHFModels: the same parity on the tokenizer.json of every model folder beyond
// MiniLM: the BERT uncased WordPiece of bge-small-en-v1.5 and e5-small-v2, and the XLM-R
// Unigram (Replace normalisers, Metaspace) written for multilingual-e5-small, each with 200
// Dutch law paragraphs added to the strings.
func TestParityWithHFModels(t *testing.T) {
	for _, env := range modelEnvs {
		t.Run(env, func(t *testing.T) {
			dir := os.Getenv(env)
			if dir == "" {
				if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
					t.Fatalf("%s is not set: run hack/prepare.d/models.sh", env)
				}
				t.Skipf("%s is not set: run hack/prepare.d/models.sh", env)
			}
			parity(t, dir)
		})
	}
}

func parity(t *testing.T, dir string) {
	tok, err := Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	ref := readRef(t, filepath.Join(dir, "reference", "tokenizer.jsonl"))
	if len(ref) < 1000 {
		t.Fatalf("reference has %d strings, want >= 1000", len(ref))
	}
	nonASCII, bad := 0, 0
	for i, l := range ref {
		for _, r := range l.Text {
			if r >= utf8.RuneSelf {
				nonASCII++
				break
			}
		}
		enc := tok.Encode(l.Text, true)
		same := len(enc.IDs) == len(l.IDs)
		for k := 0; same && k < len(enc.IDs); k++ {
			same = enc.IDs[k] == l.IDs[k] && enc.Offsets[k].Start == l.Offsets[k][0] && enc.Offsets[k].End == l.Offsets[k][1]
		}
		if !same {
			bad++
			if bad <= 8 {
				k := 0
				for k < len(enc.IDs) && k < len(l.IDs) && enc.IDs[k] == l.IDs[k] &&
					enc.Offsets[k].Start == l.Offsets[k][0] && enc.Offsets[k].End == l.Offsets[k][1] {
					k++
				}
				t.Errorf("line %d (%s) %q: first difference at token %d of go=%d hf=%d\n go: %v\n hf: %v",
					i+1, l.Source, clip(l.Text), k, len(enc.IDs), len(l.IDs), window(enc, k), windowRef(l, k))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d strings differ", bad, len(ref))
	}
	if nonASCII < 150 {
		t.Errorf("only %d reference strings contain non-ASCII text, want >= 150", nonASCII)
	}
	t.Logf("%d strings (%d with non-ASCII characters) identical to HF tokenizers", len(ref)-bad, nonASCII)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func window(e Encoding, k int) []any {
	var out []any
	for i := max(0, k-2); i < min(len(e.IDs), k+3); i++ {
		out = append(out, [3]int64{e.IDs[i], int64(e.Offsets[i].Start), int64(e.Offsets[i].End)})
	}
	return out
}

func windowRef(l refLine, k int) []any {
	var out []any
	for i := max(0, k-2); i < min(len(l.IDs), k+3); i++ {
		out = append(out, [3]int64{l.IDs[i], int64(l.Offsets[i][0]), int64(l.Offsets[i][1])})
	}
	return out
}

// TestSizeCountsWithoutSpecials checks the chunkers.Sizer contract on real text.
func TestSizeCountsWithoutSpecials(t *testing.T) {
	dir := modelDir(t)
	tok, err := Load(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Café crème, très bien.", "", "中文 text 😀", "[SEP] inside"} {
		if got, want := tok.Size(s), len(tok.Encode(s, true).IDs)-2; got != want {
			t.Errorf("Size(%q) = %d, want %d", s, got, want)
		}
	}
}

// TestEncodePrefixJoins: for every model, the prefix ids followed by the text's ids equal
// the ids of prefix+text encoded at once (what the Python references feed the model).
func TestEncodePrefixJoins(t *testing.T) {
	for _, env := range append([]string{"RAGOPS_MODEL_DIR"}, modelEnvs...) {
		dir := os.Getenv(env)
		if dir == "" {
			continue
		}
		tok, err := Load(filepath.Join(dir, "tokenizer.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, pre := range []string{"query: ", "passage: ", "Represent this sentence for searching relevant passages: "} {
			for _, text := range []string{"Hello world", " leading space", "Coördinatie van de ruïne.", "\tTab first", "中文"} {
				want := tok.Encode(pre+text, false).IDs
				got := append(tok.EncodePrefix(pre), tok.Encode(text, false).IDs...)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: prefix %q + %q: got %v, want %v", env, pre, text, got, want)
				}
			}
		}
	}
}

func TestLoadRejectsNonBERT(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(p, []byte(`{"model":{"type":"BPE","vocab":{}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil {
		t.Fatal("Load accepted a BPE tokenizer")
	}
	// A Replace run whose output is replaced again depends on order: refused, naming it.
	uni := `{"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0],["a",-1]]},
		"normalizer":{"type":"Sequence","normalizers":[
			{"type":"Replace","pattern":{"String":"x"},"content":"y"},
			{"type":"Replace","pattern":{"String":"y"},"content":"z"}]},
		"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true},
		"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>"}},{"Sequence":{"id":"A"}},{"SpecialToken":{"id":"</s>"}}],
			"special_tokens":{"<s>":{"ids":[1]},"</s>":{"ids":[2]}}}}`
	if err := os.WriteFile(p, []byte(uni), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "U+0079") {
		t.Fatalf("Load of an order-dependent Replace run: err = %v, want one naming U+0079", err)
	}
}
