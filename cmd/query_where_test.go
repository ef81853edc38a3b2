package cmd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ragops/ragops/cmd"
	"github.com/ragops/ragops/query"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// Issue 52: `ragops query --where` filters on the chunks' metadata properties through the
// Index's alias, conditions ANDed and typed by the property (a date range, a text value, an
// int), prints the properties with -o json, and refuses a condition naming the field.
func TestQueryWhereFiltersOnMetadata(t *testing.T) {
	wv := weaviatetest.Start(t)
	ctx := t.Context()
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	coll, _ := vectorstore.CollectionName("raad", "moties", "r1")
	if err := store.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: coll, Revision: "r1", Dimensions: 3}); err != nil {
		t.Fatal(err)
	}
	if err := store.EnsureProperties(ctx, coll, []vectorstore.Property{{Name: "type", DataType: "text"},
		{Name: "datum", DataType: "date"}, {Name: "year", DataType: "int"}, {Name: "tags", DataType: "text[]"}}); err != nil {
		t.Fatal(err)
	}
	motions := []struct {
		id, typ, datum string
		year           int64
		tags           []string
	}{
		{"2017-wind", "motie", "2017-11-09T00:00:00Z", 2017, []string{"wind"}},
		{"2018-wind", "motie", "2018-03-22T00:00:00Z", 2018, []string{"wind", "energie"}},
		{"2020-wind-amendement", "amendement", "2020-06-04T00:00:00Z", 2020, []string{"wind"}},
		{"2022-wind", "motie", "2022-12-15T00:00:00Z", 2022, []string{"wind", "participatie"}},
		{"2023-wind", "motie", "2023-02-02T00:00:00Z", 2023, []string{"evaluatie"}},
	}
	var chunks []vectorstore.Chunk
	for i, m := range motions {
		text := fmt.Sprintf("De raad verzoekt het college over windenergie te besluiten (%s).", m.id)
		chunks = append(chunks, vectorstore.Chunk{DocID: m.id, End: len(text), Text: text, Vector: []float32{1, float32(i), 0},
			Properties: map[string]any{"type": m.typ, "datum": m.datum, "year": m.year, "tags": m.tags}, MetaHash: "h"})
	}
	if err := store.Upsert(ctx, coll, chunks); err != nil {
		t.Fatal(err)
	}
	alias, _ := vectorstore.AliasName("raad", "moties")
	if err := store.SetAlias(ctx, alias, coll); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) ([]query.Result, error) {
		t.Helper()
		c := cmd.NewRoot()
		var out, errb bytes.Buffer
		c.SetOut(&out)
		c.SetErr(&errb)
		c.SetArgs(append([]string{"query", "--weaviate-url", "http://" + wv.HTTPAddr, "--weaviate-grpc-address", wv.GRPCAddr,
			"-n", "raad", "--index", "moties", "--mode", "bm25", "-k", "10", "-o", "json"}, args...))
		if err := c.ExecuteContext(ctx); err != nil {
			return nil, err
		}
		var res []query.Result
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("%v:\n%s", err, out.String())
		}
		return res, nil
	}
	docs := func(res []query.Result) []string {
		var ids []string
		for _, r := range res {
			ids = append(ids, r.DocID)
		}
		sort.Strings(ids)
		return ids
	}
	for _, tc := range []struct {
		where []string
		want  []string
	}{
		{[]string{"type=motie", "datum>=2018-01-01", "datum<2023"}, []string{"2018-wind", "2022-wind"}},
		{[]string{"year>2018", "year<=2022"}, []string{"2020-wind-amendement", "2022-wind"}},
		{[]string{"type=amendement|motie", "datum>=2022-12-15T00:00:00Z"}, []string{"2022-wind", "2023-wind"}},
		{[]string{"type!=motie"}, []string{"2020-wind-amendement"}},
		{[]string{"tags=energie|participatie"}, []string{"2018-wind", "2022-wind"}},
		{[]string{"docId~2017*"}, []string{"2017-wind"}},
	} {
		res, err := run(append(whereFlags(tc.where), "windenergie")...)
		if err != nil {
			t.Fatalf("--where %v: %v", tc.where, err)
		}
		if got := docs(res); !slices.Equal(got, tc.want) {
			t.Errorf("--where %v: %v, want %v", tc.where, got, tc.want)
		}
	}
	res, err := run("--where", "year=2018", "windenergie")
	if err != nil || len(res) != 1 || res[0].Properties["type"] != "motie" || res[0].Properties["datum"] != "2018-03-22T00:00:00Z" {
		t.Errorf("properties of the 2018 motion (%v): %+v", err, res)
	}
	for cond, want := range map[string]string{
		"jaar>=2018":   "property jaar: the Index's collection has no such property",
		"datum>=mei":   `property datum is date, "mei" is not`,
		"year>=twee":   `property year is int, "twee" is not an integer`,
		"type>motie":   "property type is text: compare it with =, != or ~",
		"year between": "want PROPERTY OP VALUE",
	} {
		if _, err := run("--where", cond, "windenergie"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--where %q: error %v, want one containing %q", cond, err, want)
		}
	}
}

func whereFlags(conds []string) []string {
	var out []string
	for _, c := range conds {
		out = append(out, "--where", c)
	}
	return out
}
