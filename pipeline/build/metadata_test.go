package build

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
	"github.com/ragops/ragops/vectorstore"
)

// councilDoc is one Dutch council motion of the metadata fixture: its path gives the year,
// its sidecar the type, the date of the vote and whether it was adopted.
type councilDoc struct {
	path, title, body string
	sidecar           map[string]any
}

var councilDocs = []councilDoc{
	{"moties/2017/wind.md", "Motie windmolens Noordpolder", "De raad verzoekt het college windmolens te plaatsen in de Noordpolder. Beslispunt: onderzoek naar draagvlak.",
		map[string]any{"type": "motie", "datum": "2017-11-09", "aangenomen": false}},
	{"moties/2018/wind.md", "Motie windenergie op bedrijventerreinen", "De raad verzoekt het college windenergie op bedrijventerreinen mogelijk te maken. Beslispunt: een uitvoeringsplan.",
		map[string]any{"type": "motie", "datum": "2018-03-22", "aangenomen": true}},
	{"moties/2020/zon.md", "Motie zonnepanelen op scholen", "De raad verzoekt het college zonnepanelen op alle scholen te leggen. Beslispunt: subsidie.",
		map[string]any{"type": "motie", "datum": "2020-06-04", "aangenomen": true}},
	{"moties/2020/wind-amendement.md", "Amendement windturbines", "Het amendement wijzigt het beslispunt over de windturbines langs de A7.",
		map[string]any{"type": "amendement", "datum": "2020-06-04", "aangenomen": false}},
	{"moties/2022/wind.md", "Motie windpark Zuiderveen", "De raad verzoekt het college een windpark met inwoners te ontwikkelen. Beslispunt: participatie.",
		map[string]any{"type": "motie", "datum": "2022-12-15", "aangenomen": true}},
	{"moties/2023/wind.md", "Motie windenergie evaluatie", "De raad verzoekt het college de windenergie te evalueren. Beslispunt: een rapportage.",
		map[string]any{"type": "motie", "datum": "2023-02-02", "aangenomen": true}},
	// A date written the Dutch way does not parse: the field stays unset, the motion is indexed.
	{"moties/2019/wind.md", "Motie windenergie coöperaties", "De raad verzoekt het college energiecoöperaties te steunen. Beslispunt: een lening.",
		map[string]any{"type": "motie", "datum": "14 mei 2019", "aangenomen": true}},
}

// councilFields are the fixture's declarations: one field of each origin.
var councilFields = &ragopsv1alpha1.MetadataSpec{SidecarSuffix: ".meta.json", Fields: []ragopsv1alpha1.MetadataField{
	{Name: "title", Type: ragopsv1alpha1.MetadataText, From: ragopsv1alpha1.MetadataSource{Reader: "title"}},
	{Name: "year", Type: ragopsv1alpha1.MetadataInt, From: ragopsv1alpha1.MetadataSource{Path: "moties/{year}/"}},
	{Name: "type", Type: ragopsv1alpha1.MetadataText, From: ragopsv1alpha1.MetadataSource{Sidecar: "type"}},
	{Name: "datum", Type: ragopsv1alpha1.MetadataDate, From: ragopsv1alpha1.MetadataSource{Sidecar: "datum"}},
	{Name: "aangenomen", Type: ragopsv1alpha1.MetadataBoolean, From: ragopsv1alpha1.MetadataSource{Sidecar: "aangenomen"}},
	{Name: "size", Type: ragopsv1alpha1.MetadataInt, From: ragopsv1alpha1.MetadataSource{Source: "source.size"}},
}}

// newCouncilFixture is a fixture (real Weaviate and model) over the council motions, with
// their sidecars and the metadata declarations.
func newCouncilFixture(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, 0)
	for _, d := range councilDocs {
		writeFile(t, f.dir, d.path, fmt.Sprintf("---\ntitle: %s\n---\n# %s\n\n%s\n", d.title, d.title, d.body))
		writeSidecar(t, f.dir, d.path, d.sidecar)
	}
	f.plan.Source.Metadata = councilFields
	return f
}

func writeFile(t *testing.T, dir, rel, body string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeSidecar(t *testing.T, dir, rel string, v map[string]any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, rel+".meta.json", string(raw))
}

// whereDocs runs a plain weaviate-go-client search (gRPC, the client's Search) with where on
// target (a collection or an alias) and returns the distinct document IDs it finds, sorted.
func whereDocs(t *testing.T, f *fixture, target string, where *filters.WhereBuilder) []string {
	t.Helper()
	res, err := f.store.Client().Experimental().Search().WithCollection(target).WithWhere(where).WithLimit(1000).
		WithProperties(vectorstore.PropDocID).Do(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range res {
		seen[fmt.Sprint(r.Properties[vectorstore.PropDocID])] = true
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// motionsBetween is the archive's example question as a filter: motions voted on from
// 2018 up to 2022 inclusive.
func motionsBetween() *filters.WhereBuilder {
	return filters.Where().WithOperator(filters.And).WithOperands([]*filters.WhereBuilder{
		filters.Where().WithPath([]string{"type"}).WithOperator(filters.Equal).WithValueText("motie"),
		filters.Where().WithPath([]string{"datum"}).WithOperator(filters.GreaterThanEqual).WithValueDate(time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC)),
		filters.Where().WithPath([]string{"datum"}).WithOperator(filters.LessThan).WithValueDate(time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)),
	})
}

// Issue 52: the Corpus's declared fields become properties of every chunk of the document,
// and a stock Weaviate client filters with where through the Index's alias: the motions
// between 2018 and 2022 are exactly the ones the sidecars date so. A date that does not
// parse is counted with its reason and its motion is still indexed, without the property.
func TestMetadataPropertiesFilterThroughTheAlias(t *testing.T) {
	f := newCouncilFixture(t)
	res, err := f.run(t, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Documents != int64(len(councilDocs)) {
		t.Fatalf("built %d documents, want %d (sidecars are no documents): %+v", res.Documents, len(councilDocs), res)
	}
	if want := map[string]int64{"datum/InvalidValue": 1}; !reflect.DeepEqual(res.InvalidMetadata, want) {
		t.Errorf("invalid metadata %v, want %v", res.InvalidMetadata, want)
	}
	ctx := context.Background()
	alias, err := vectorstore.AliasName("t", "besluiten")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.SetAlias(ctx, alias, f.plan.Collection); err != nil {
		t.Fatal(err)
	}
	if got, want := whereDocs(t, f, alias, motionsBetween()), []string{"moties/2018/wind.md", "moties/2020/zon.md", "moties/2022/wind.md"}; !slices.Equal(got, want) {
		t.Errorf("motions 2018-2022 through the alias: %v, want %v", got, want)
	}
	// A path capture (int, range) and a reader field (text) filter too.
	year := filters.Where().WithPath([]string{"year"}).WithOperator(filters.GreaterThan).WithValueInt(2020)
	if got, want := whereDocs(t, f, alias, year), []string{"moties/2022/wind.md", "moties/2023/wind.md"}; !slices.Equal(got, want) {
		t.Errorf("year > 2020: %v, want %v", got, want)
	}
	title := filters.Where().WithPath([]string{"title"}).WithOperator(filters.Equal).WithValueText("Amendement windturbines")
	if got, want := whereDocs(t, f, alias, title), []string{"moties/2020/wind-amendement.md"}; !slices.Equal(got, want) {
		t.Errorf("title = Amendement windturbines: %v, want %v", got, want)
	}
	// The motion with the unparsable date is indexed, without a datum: it has chunks and its
	// type, but no date range holds it.
	dated := filters.Where().WithPath([]string{"datum"}).WithOperator(filters.GreaterThan).WithValueDate(time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC))
	if got := whereDocs(t, f, alias, dated); len(got) != len(councilDocs)-1 || slices.Contains(got, "moties/2019/wind.md") {
		t.Errorf("motions with a datum: %v, want all but moties/2019/wind.md", got)
	}
	// Every chunk of a document carries its properties: as many chunks match the document's
	// type as the document has.
	total, err := f.store.Count(ctx, alias)
	if err != nil {
		t.Fatal(err)
	}
	if int64(total) != res.Chunks {
		t.Fatalf("collection holds %d chunks, build wrote %d", total, res.Chunks)
	}
	for _, d := range councilDocs {
		n, err := f.store.CountDocument(ctx, f.plan.Collection, d.path) // GraphQL where does not resolve aliases (Weaviate 1.37)
		if err != nil {
			t.Fatal(err)
		}
		typed := whereCount(t, f, alias, filters.Where().WithOperator(filters.And).WithOperands([]*filters.WhereBuilder{
			filters.Where().WithPath([]string{vectorstore.PropDocID}).WithOperator(filters.Equal).WithValueText(d.path),
			filters.Where().WithPath([]string{"type"}).WithOperator(filters.Equal).WithValueText(d.sidecar["type"].(string)),
		}))
		if n == 0 || typed != n {
			t.Errorf("%s: %d chunks, %d of them with its type", d.path, n, typed)
		}
	}
}

// whereCount counts the chunks of target matching where.
func whereCount(t *testing.T, f *fixture, target string, where *filters.WhereBuilder) int {
	t.Helper()
	res, err := f.store.Client().Experimental().Search().WithCollection(target).WithWhere(where).WithLimit(1000).
		WithProperties(vectorstore.PropDocID).Do(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(res)
}

// chunkVectors returns the vectors of a document's chunks by object ID.
func chunkVectors(t *testing.T, f *fixture, docID string) map[string][]float32 {
	t.Helper()
	res, err := f.store.Client().Experimental().Search().WithCollection(f.plan.Collection).WithLimit(100).
		WithWhere(filters.Where().WithPath([]string{vectorstore.PropDocID}).WithOperator(filters.Equal).WithValueText(docID)).
		WithProperties(vectorstore.PropDocID).WithMetadata(&graphql.Metadata{ID: true, Vector: true}).Do(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for _, r := range res {
		out[r.ID] = r.Vector
	}
	return out
}

// Issue 52: a sync where only a sidecar changed rewrites that document's chunk properties in
// place (same objects, same vectors, same text) without embedding: tokens 0, the chunk count
// unchanged, and the filter follows the new value. A sync with nothing changed touches none.
func TestMetadataOnlyChangeUpdatesPropertiesWithoutEmbedding(t *testing.T) {
	f := newCouncilFixture(t)
	full, err := f.run(t, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	before := chunkVectors(t, f, "moties/2022/wind.md")
	// The 2022 motion turns out to be an amendment.
	d := councilDocs[4]
	side := map[string]any{"type": "amendement", "datum": d.sidecar["datum"], "aangenomen": true}
	writeSidecar(t, f.dir, d.path, side)
	res, err := f.run(t, true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tokens != 0 || res.Documents != 0 || res.MetadataUpdated != 1 || res.Unchanged != int64(len(councilDocs)-1) {
		t.Errorf("sync after a sidecar edit: tokens %d documents %d metadataUpdated %d unchanged %d; want 0, 0, 1, %d",
			res.Tokens, res.Documents, res.MetadataUpdated, res.Unchanged, len(councilDocs)-1)
	}
	if res.ShardChunks == nil || *res.ShardChunks != full.Chunks {
		t.Errorf("sync reports %v chunks held, want %d", res.ShardChunks, full.Chunks)
	}
	if n, err := f.store.Count(ctx, f.plan.Collection); err != nil || int64(n) != full.Chunks {
		t.Errorf("collection holds %d chunks (%v), want %d", n, err, full.Chunks)
	}
	after := chunkVectors(t, f, d.path)
	if len(before) == 0 || !reflect.DeepEqual(before, after) {
		t.Errorf("the motion's chunks changed: %d objects before, %d after, or other vectors", len(before), len(after))
	}
	if got, want := whereDocs(t, f, f.plan.Collection, motionsBetween()), []string{"moties/2018/wind.md", "moties/2020/zon.md"}; !slices.Equal(got, want) {
		t.Errorf("motions 2018-2022 after the edit: %v, want %v", got, want)
	}
	amend := filters.Where().WithPath([]string{"type"}).WithOperator(filters.Equal).WithValueText("amendement")
	if got, want := whereDocs(t, f, f.plan.Collection, amend), []string{"moties/2020/wind-amendement.md", d.path}; !slices.Equal(got, want) {
		t.Errorf("amendments after the edit: %v, want %v", got, want)
	}
	// The reader's field (title) is still there: the update keeps what did not change.
	title := filters.Where().WithPath([]string{"title"}).WithOperator(filters.Equal).WithValueText(d.title)
	if got := whereDocs(t, f, f.plan.Collection, title); !slices.Equal(got, []string{d.path}) {
		t.Errorf("title of the updated motion: %v", got)
	}
	again, err := f.run(t, true)
	if err != nil {
		t.Fatal(err)
	}
	if again.MetadataUpdated != 0 || again.Tokens != 0 || again.Unchanged != int64(len(councilDocs)) {
		t.Errorf("sync with nothing changed: %+v", again)
	}
}

// Issue 52: fields declared after the Index was built reach its collection at the next sync
// without embedding: the properties are added to the collection and written onto every
// chunk of every document, tokens 0.
func TestDeclaringFieldsLaterSyncsPropertiesWithoutEmbedding(t *testing.T) {
	f := newCouncilFixture(t)
	f.plan.Source.Metadata = nil
	full, err := f.run(t, false)
	if err != nil {
		t.Fatal(err)
	}
	// Without a sidecar field the .meta.json files are documents of their own; once declared,
	// they are sidecars and their chunks go.
	if full.Documents != 2*int64(len(councilDocs)) {
		t.Fatalf("built %d documents without declarations, want the %d motions and their sidecar files", full.Documents, len(councilDocs))
	}
	f.plan.Source.Metadata = councilFields
	res, err := f.run(t, true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tokens != 0 || res.Documents != 0 || res.MetadataUpdated != int64(len(councilDocs)) || res.Deleted != int64(len(councilDocs)) {
		t.Errorf("sync after declaring fields: tokens %d documents %d metadataUpdated %d deleted %d; want 0, 0, %d, %d (the sidecars, no documents now)",
			res.Tokens, res.Documents, res.MetadataUpdated, res.Deleted, len(councilDocs), len(councilDocs))
	}
	if got, want := whereDocs(t, f, f.plan.Collection, motionsBetween()), []string{"moties/2018/wind.md", "moties/2020/zon.md", "moties/2022/wind.md"}; !slices.Equal(got, want) {
		t.Errorf("motions 2018-2022 after declaring the fields: %v, want %v", got, want)
	}
}
