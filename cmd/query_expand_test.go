package cmd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ragops/ragops/cmd"
	"github.com/ragops/ragops/query"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// Issue 52, small-to-big: `ragops query --expand` prints each hit with its context, in
// ordinal order: its neighbours (neighbours:N) or its heading section (section[:N], the
// consecutive chunks with its heading path), in the table under the hit and in JSON with the
// whole text; a bad --expand is refused before any query.
func TestQueryExpandPrintsTheContext(t *testing.T) {
	wv := weaviatetest.Start(t)
	ctx := t.Context()
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	coll, _ := vectorstore.CollectionName("raad", "nota", "r1")
	if err := store.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: coll, Revision: "r1", Dimensions: 3}); err != nil {
		t.Fatal(err)
	}
	// Chunk 0 under [Nota], 1-3 under [Nota, Wind], 4 under [Nota, Zon]; the query hits 2.
	headings := [][]string{{"Nota"}, {"Nota", "Wind"}, {"Nota", "Wind"}, {"Nota", "Wind"}, {"Nota", "Zon"}}
	var chunks []vectorstore.Chunk
	off := 0
	for o, h := range headings {
		text := fmt.Sprintf("alinea%d van de nota", o)
		if o == 2 {
			text += " over windturbines"
		}
		chunks = append(chunks, vectorstore.Chunk{DocID: "nota.md", Ordinal: o, Start: off, End: off + len(text), Text: text,
			HeadingPath: h, Vector: []float32{1, float32(o), 0}, DocHash: "h"})
		off += len(text)
	}
	if err := store.Upsert(ctx, coll, chunks); err != nil {
		t.Fatal(err)
	}
	alias, _ := vectorstore.AliasName("raad", "nota")
	if err := store.SetAlias(ctx, alias, coll); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		t.Helper()
		c := cmd.NewRoot()
		var out, errb bytes.Buffer
		c.SetOut(&out)
		c.SetErr(&errb)
		c.SetArgs(append([]string{"query", "--weaviate-url", "http://" + wv.HTTPAddr, "--weaviate-grpc-address", wv.GRPCAddr,
			"-n", "raad", "--index", "nota", "--mode", "bm25", "-k", "1"}, append(args, "windturbines")...))
		err := c.ExecuteContext(ctx)
		return out.String(), err
	}
	for _, tc := range []struct {
		expand     string
		neighbours []string
		section    []string
	}{
		{"neighbours:1", []string{"alinea1", "alinea2", "alinea3"}, nil},
		{"section", nil, []string{"alinea1", "alinea2", "alinea3"}},
		{"section:1", nil, []string{"alinea2"}},
	} {
		out, err := run("--expand", tc.expand, "-o", "json")
		if err != nil {
			t.Fatalf("--expand %s: %v", tc.expand, err)
		}
		var res []query.Expanded
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("--expand %s: %v\n%s", tc.expand, err, out)
		}
		first := func(rs []query.Result) []string {
			var w []string
			for _, r := range rs {
				w = append(w, strings.Fields(r.Text)[0])
			}
			return w
		}
		if len(res) != 1 || res[0].Chunk != 2 || !slices.Equal(first(res[0].Neighbours), tc.neighbours) || !slices.Equal(first(res[0].Section), tc.section) {
			t.Errorf("--expand %s: %s\nwant the hit chunk 2 with neighbours %v, section %v", tc.expand, out, tc.neighbours, tc.section)
		}
	}
	// The table: the hit, then its context under it, one row a chunk with its heading.
	out, err := run("--expand", "section")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[1], "1 ") {
		t.Fatalf("table:\n%s\nwant a header, the hit and its 3 section chunks", out)
	}
	for i, want := range []string{"nota.md#1", "nota.md#2", "nota.md#3"} {
		if l := lines[2+i]; !strings.Contains(l, want) || !strings.Contains(l, "Nota > Wind") || !strings.Contains(l, fmt.Sprintf("alinea%d", i+1)) {
			t.Errorf("table row %d: %q, want %s under Nota > Wind", 2+i, l, want)
		}
	}
	for _, bad := range []string{"neighbours", "neighbours:9", "section:0", "paragraph"} {
		if _, err := run("--expand", bad); err == nil || !strings.Contains(err.Error(), "expand") {
			t.Errorf("--expand %s: error %v, want a refusal", bad, err)
		}
	}
}
