package docmeta

import (
	"reflect"
	"testing"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

func declare(t *testing.T, fields ...ragopsv1alpha1.MetadataField) *Fields {
	t.Helper()
	f, err := Compile(&ragopsv1alpha1.MetadataSpec{Fields: fields})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func fromReader(name string, typ ragopsv1alpha1.MetadataFieldType, key string) ragopsv1alpha1.MetadataField {
	return ragopsv1alpha1.MetadataField{Name: name, Type: typ, From: ragopsv1alpha1.MetadataSource{Reader: key}}
}

// Issue 52: each origin gives its value, parsed as the field's type; values that do not
// parse are failures with a reason and leave the property unset.
func TestValuesFromEachOriginAndFailures(t *testing.T) {
	f := declare(t,
		fromReader("title", ragopsv1alpha1.MetadataText, "title"),
		fromReader("created", ragopsv1alpha1.MetadataDate, "created"),
		fromReader("tags", ragopsv1alpha1.MetadataTextArray, "frontmatter.tags"),
		fromReader("pages", ragopsv1alpha1.MetadataInt, "frontmatter.pages"),
		ragopsv1alpha1.MetadataField{Name: "changed", Type: ragopsv1alpha1.MetadataDate, From: ragopsv1alpha1.MetadataSource{Source: "source.modified"}},
		ragopsv1alpha1.MetadataField{Name: "size", Type: ragopsv1alpha1.MetadataInt, From: ragopsv1alpha1.MetadataSource{Source: "source.size"}},
		ragopsv1alpha1.MetadataField{Name: "year", Type: ragopsv1alpha1.MetadataInt, From: ragopsv1alpha1.MetadataSource{Path: "moties/{year}/"}},
		ragopsv1alpha1.MetadataField{Name: "kind", Type: ragopsv1alpha1.MetadataText, From: ragopsv1alpha1.MetadataSource{Path: "{org}/{kind}-*.pdf"}},
		ragopsv1alpha1.MetadataField{Name: "adopted", Type: ragopsv1alpha1.MetadataBoolean, From: ragopsv1alpha1.MetadataSource{Sidecar: "aangenomen"}},
		ragopsv1alpha1.MetadataField{Name: "score", Type: ragopsv1alpha1.MetadataNumber, From: ragopsv1alpha1.MetadataSource{Sidecar: "score"}},
	)
	got, fails := f.Values(Inputs{
		Path: "moties/2019/motie-wind.pdf",
		Fields: map[string]any{"title": "Motie windenergie", "created": "2019-03-05T10:00:00+01:00",
			"frontmatter.tags": []any{"wind", "energie"}, "frontmatter.pages": "twelve",
			"source.modified": "2024-01-02T03:04:05.123Z", "source.size": "2048"},
		Sidecar: []byte("aangenomen: true\nscore: 7.5\n"),
	})
	want := map[string]any{"title": "Motie windenergie", "created": "2019-03-05T09:00:00Z", "tags": []string{"wind", "energie"},
		"changed": "2024-01-02T03:04:05Z", "size": int64(2048), "year": int64(2019), "adopted": true, "score": 7.5}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("values\n got %#v\nwant %#v", got, want)
	}
	if len(fails) != 1 || fails[0].Field != "pages" || fails[0].Reason != ReasonInvalidValue {
		t.Errorf("failures = %+v, want pages InvalidValue", fails)
	}
	// The kind pattern: moties/2019/motie-wind.pdf has three segments, so it does not match.
	got, _ = f.Values(Inputs{Path: "raad/motie-wind.pdf", Sidecar: []byte("{not yaml")})
	if got["kind"] != "motie" {
		t.Errorf("kind of raad/motie-wind.pdf = %v, want motie", got["kind"])
	}
	_, fails = f.Values(Inputs{Path: "x", Sidecar: []byte("- a list\n")})
	if len(fails) != 2 || fails[0].Reason != ReasonInvalidSidecar {
		t.Errorf("a sidecar that is no mapping: failures %+v, want one InvalidSidecar per sidecar field", fails)
	}
}

// Issue 52: the metadata hash changes with a sidecar value, a source field or the
// declarations, and not with a reader field (that comes with the document's bytes).
func TestHashCoversWhatChangesWithoutTheBytes(t *testing.T) {
	decl := []ragopsv1alpha1.MetadataField{
		fromReader("title", ragopsv1alpha1.MetadataText, "title"),
		{Name: "type", Type: ragopsv1alpha1.MetadataText, From: ragopsv1alpha1.MetadataSource{Sidecar: "type"}},
		{Name: "changed", Type: ragopsv1alpha1.MetadataDate, From: ragopsv1alpha1.MetadataSource{Source: "source.modified"}},
	}
	f := declare(t, decl...)
	base := Inputs{Path: "a.md", Fields: map[string]any{"source.modified": "2024-01-01T00:00:00Z"}, Sidecar: []byte(`{"type": "motie"}`)}
	h := f.Hash(base)
	same := base
	same.Fields = map[string]any{"source.modified": "2024-01-01T00:00:00Z", "title": "other"}
	same.Sidecar = []byte("type: motie\nunused: 1\n")
	if f.Hash(same) != h {
		t.Error("hash changed with a reader field or an unread sidecar key")
	}
	side := base
	side.Sidecar = []byte(`{"type": "amendement"}`)
	src := base
	src.Fields = map[string]any{"source.modified": "2024-02-01T00:00:00Z"}
	other := declare(t, append(decl, fromReader("author", ragopsv1alpha1.MetadataText, "author"))...)
	for name, got := range map[string]string{"sidecar": f.Hash(side), "source": f.Hash(src), "declarations": other.Hash(base)} {
		if got == h {
			t.Errorf("hash did not change with the %s", name)
		}
	}
}
