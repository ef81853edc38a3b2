package extractcache_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ragops/ragops/pipeline/extractcache"
	"github.com/ragops/ragops/reader"
	"github.com/ragops/ragops/reader/markup"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

// counting reads Markdown and counts its calls.
type counting struct {
	calls atomic.Int64
	mux   *reader.Mux
}

func (c *counting) Read(ctx context.Context, data []byte) (reader.Document, error) {
	c.calls.Add(1)
	return c.mux.Read(ctx, data)
}

func newCounting() *counting { return &counting{mux: reader.NewMux(0, markup.Markdown{})} }

// weaviateCache starts a real Weaviate and returns its store and a cache collection name.
func weaviateCache(t *testing.T) (*vectorstore.Store, string) {
	t.Helper()
	wv := weaviatetest.Start(t)
	s, err := vectorstore.New(vectorstore.Config{HTTPHost: wv.HTTPAddr, GRPCHost: wv.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	name, err := vectorstore.ExtractionCacheName("t", "besluiten")
	if err != nil {
		t.Fatal(err)
	}
	return s, name
}

func doc(i int) []byte {
	return fmt.Appendf(nil, "# Besluit %d\n\nDe raad besluit over voorstel %d.\n\n## Motivering\n\nHet college stelt voor %d.", i, i, i)
}

func rawHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

const settings = `{"ocrMode":"Auto"}`

// A document read twice with the same settings is extracted once: the second read is a
// hit that returns the same document. Other settings are another key: extracted again.
func TestCacheHitsAfterTheFirstRead(t *testing.T) {
	s, name := weaviateCache(t)
	ctx := context.Background()
	next := newCounting()
	r := extractcache.NewReader(next, extractcache.Weaviate(s, name), settings, nil)
	first, err := r.Read(ctx, doc(1))
	if err != nil {
		t.Fatal(err)
	}
	second, err := r.Read(ctx, doc(1))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, second) || len(second.Outline) != 2 {
		t.Errorf("cached document %+v, extracted %+v", second, first)
	}
	if got := r.Stats(); next.calls.Load() != 1 || got.Hits != 1 || got.Misses != 1 || got.Extracted != 1 {
		t.Errorf("reader calls %d, stats %+v: want 1 call, 1 miss then 1 hit", next.calls.Load(), got)
	}
	other := extractcache.NewReader(next, extractcache.Weaviate(s, name), `{"ocrMode":"Never"}`, nil)
	if _, err := other.Read(ctx, doc(1)); err != nil {
		t.Fatal(err)
	}
	if next.calls.Load() != 2 || other.Stats().Misses != 1 {
		t.Errorf("other settings: %d reader calls, stats %+v; want a miss", next.calls.Load(), other.Stats())
	}
}

// A corrupt entry (payload changed under its checksum) and a foreign one (a valid entry of
// another key written at this key's object) are not trusted: the document is extracted again,
// the entry rewritten, and the next read is a verified hit.
func TestCacheReextractsCorruptAndForeignEntries(t *testing.T) {
	s, name := weaviateCache(t)
	ctx := context.Background()
	data := doc(2)
	key := extractcache.Key(rawHash(data), settings)
	want, err := newCounting().Read(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	good, err := extractcache.Payload(want)
	if err != nil {
		t.Fatal(err)
	}
	lie, err := extractcache.Payload(reader.Document{MediaType: "text/markdown", Text: "Niet waar."})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureBlobCollection(ctx, name); err != nil {
		t.Fatal(err)
	}
	cases := map[string]vectorstore.Blob{
		"corrupt payload": {Key: key, Payload: append(good[:len(good)-4:len(good)-4], 0, 0, 0, 0), Sum: extractcache.Checksum(key, good)},
		"foreign entry":   {Key: key, Payload: lie, Sum: extractcache.Checksum("another key", lie)},
		"another key":     {Key: "another key", Payload: lie, Sum: extractcache.Checksum("another key", lie)},
	}
	for what, bad := range cases {
		t.Run(what, func(t *testing.T) {
			// Written at this key's object whatever key it names.
			obj := bad
			if err := s.PutBlob(ctx, name, obj); err != nil {
				t.Fatal(err)
			}
			if bad.Key != key {
				if err := putAt(ctx, s, name, key, bad); err != nil {
					t.Fatal(err)
				}
			}
			next := newCounting()
			r := extractcache.NewReader(next, extractcache.Weaviate(s, name), settings, nil)
			got, err := r.Read(ctx, data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("read %q, want the extracted %q", got.Text, want.Text)
			}
			st := r.Stats()
			if next.calls.Load() != 1 || st.Corrupt != 1 || st.Hits != 0 {
				t.Errorf("reader calls %d, stats %+v: want the entry rejected and the document extracted", next.calls.Load(), st)
			}
			if _, err := r.Read(ctx, data); err != nil {
				t.Fatal(err)
			}
			if st := r.Stats(); next.calls.Load() != 1 || st.Hits != 1 {
				t.Errorf("after the rewrite: reader calls %d, stats %+v: want a verified hit", next.calls.Load(), st)
			}
		})
	}
}

// putAt writes b at the object of key (not b.Key's): a foreign writer's entry.
func putAt(ctx context.Context, s *vectorstore.Store, collection, key string, b vectorstore.Blob) error {
	_, err := s.Client().Batch().ObjectsBatcher().WithObjects(blobObject(collection, key, b)).Do(ctx)
	return err
}

// Concurrent writers of one key (eight readers extracting the same bytes at once, as shards
// of two builds would) leave one object whose payload is what each of them wrote, and it
// verifies.
func TestCacheConcurrentWritersOfOneKey(t *testing.T) {
	s, name := weaviateCache(t)
	ctx := context.Background()
	data := doc(3)
	const writers = 8
	var wg sync.WaitGroup
	docs := make([]reader.Document, writers)
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := extractcache.NewReader(newCounting(), extractcache.Weaviate(s, name), settings, nil)
			docs[i], errs[i] = r.Read(ctx, data)
		}()
	}
	wg.Wait()
	for i := range writers {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if !reflect.DeepEqual(docs[i], docs[0]) {
			t.Errorf("writer %d read %q, writer 0 %q", i, docs[i].Text, docs[0].Text)
		}
	}
	if n, err := countObjects(ctx, s, name); err != nil || n != 1 {
		t.Fatalf("the collection holds %d objects (%v), want 1", n, err)
	}
	key := extractcache.Key(rawHash(data), settings)
	e, ok, err := s.GetBlob(ctx, name, key)
	if err != nil || !ok {
		t.Fatalf("entry: ok %v, %v", ok, err)
	}
	want, _ := extractcache.Payload(docs[0])
	if string(e.Payload) != string(want) || e.Sum != extractcache.Checksum(key, want) || e.Key != key {
		t.Errorf("stored entry does not verify against what every writer wrote")
	}
	next := newCounting()
	if _, err := extractcache.NewReader(next, extractcache.Weaviate(s, name), settings, nil).Read(ctx, data); err != nil || next.calls.Load() != 0 {
		t.Errorf("read after the writers: %d reader calls (%v), want a hit", next.calls.Load(), err)
	}
}

// Collect keeps the entries whose raw hash the listing holds and deletes the others: a
// document removed from the corpus is extracted again if it comes back.
func TestCacheCollectKeepsWhatTheListingHolds(t *testing.T) {
	s, name := weaviateCache(t)
	ctx := context.Background()
	store := extractcache.Weaviate(s, name)
	r := extractcache.NewReader(newCounting(), store, settings, nil)
	live := map[string]bool{}
	for i := range 5 {
		if _, err := r.Read(ctx, doc(10+i)); err != nil {
			t.Fatal(err)
		}
		if i != 2 {
			live[extractcache.Group(rawHash(doc(10+i)))] = true
		}
	}
	n, err := store.Collect(ctx, func(g string) bool { return live[g] })
	if err != nil || n != 1 {
		t.Fatalf("collected %d (%v), want the 1 entry the listing no longer holds", n, err)
	}
	if c, err := countObjects(ctx, s, name); err != nil || c != 4 {
		t.Errorf("%d entries left (%v), want 4", c, err)
	}
	next := newCounting()
	again := extractcache.NewReader(next, store, settings, nil)
	for i := range 5 {
		if _, err := again.Read(ctx, doc(10+i)); err != nil {
			t.Fatal(err)
		}
	}
	if st := again.Stats(); next.calls.Load() != 1 || st.Hits != 4 {
		t.Errorf("reader calls %d, stats %+v: want only the collected document extracted", next.calls.Load(), st)
	}
}
