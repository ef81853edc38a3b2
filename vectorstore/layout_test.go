package vectorstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCompressionReachesServer creates one hnsw collection per quantizer (and a flat one with
// RQ) and reads the class back from the server: the quantizer must be enabled with the
// requested parameters, the other quantizers disabled, and the collection must record the
// settings so that EnsureCollection with the same spec succeeds and with another
// compression fails.
func TestCompressionReachesServer(t *testing.T) {
	srv := sharedServer(t)
	s := storeFor(t, srv, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cases := []struct {
		index string
		c     Compression
		want  map[string]float64 // expected numeric fields of the quantizer's config
	}{
		{IndexHNSW, Compression{Type: CompressionRQ, Bits: 1, RescoreLimit: 256}, map[string]float64{"bits": 1, "rescoreLimit": 256}},
		{IndexHNSW, Compression{Type: CompressionRQ}, map[string]float64{"bits": 8}},
		{IndexHNSW, Compression{Type: CompressionBQ}, nil},
		{IndexHNSW, Compression{Type: CompressionSQ, TrainingLimit: 1000, RescoreLimit: 50}, map[string]float64{"trainingLimit": 1000, "rescoreLimit": 50}},
		{IndexHNSW, Compression{Type: CompressionPQ, Segments: 8, TrainingLimit: 1000}, map[string]float64{"segments": 8, "trainingLimit": 1000}},
		{IndexFlat, Compression{Type: CompressionBQ, RescoreLimit: 100}, map[string]float64{"rescoreLimit": 100}},
	}
	for i, tc := range cases {
		name := fmt.Sprintf("RagopsTest_Compression_%d", i)
		spec := CollectionSpec{Name: name, Revision: "r1", Dimensions: 16, Index: VectorIndex{Type: tc.index, Compression: tc.c}}
		if err := s.EnsureCollection(ctx, spec); err != nil {
			t.Fatalf("%s %+v: %v", tc.index, tc.c, err)
		}
		t.Cleanup(func() { s.DeleteCollection(context.Background(), name) })
		class, err := s.Client().Schema().ClassGetter().WithClassName(name).Do(ctx)
		if err != nil {
			t.Fatal(err)
		}
		vic := class.VectorIndexConfig.(map[string]any)
		for _, q := range []string{CompressionPQ, CompressionBQ, CompressionSQ, CompressionRQ} {
			cfg, ok := vic[q].(map[string]any)
			if !ok {
				if q == tc.c.Type || tc.index == IndexHNSW {
					t.Errorf("%s: vectorIndexConfig has no %s: %v", name, q, vic)
				}
				continue
			}
			if enabled := cfg["enabled"] == true; enabled != (q == tc.c.Type) {
				t.Errorf("%s (%s %s): %s enabled = %v", name, tc.index, tc.c.Type, q, enabled)
			}
			if q != tc.c.Type {
				continue
			}
			for k, v := range tc.want {
				if got, _ := cfg[k].(float64); got != v {
					t.Errorf("%s: %s.%s = %v, want %v", name, q, k, cfg[k], v)
				}
			}
		}
		again := spec
		if err := s.EnsureCollection(ctx, again); err != nil {
			t.Errorf("%s: EnsureCollection with the same spec: %v", name, err)
		}
		other := spec
		other.Index.Compression = Compression{}
		if err := s.EnsureCollection(ctx, other); err == nil || !strings.Contains(err.Error(), "other settings") {
			t.Errorf("%s: EnsureCollection without compression = %v; want an other-settings error", name, err)
		}
	}
}

// TestCompressionValidation checks the quantizer rules that need no server.
func TestCompressionValidation(t *testing.T) {
	bad := []struct {
		index string
		c     Compression
		want  string
	}{
		{IndexFlat, Compression{Type: CompressionPQ}, "needs an hnsw index"},
		{IndexFlat, Compression{Type: CompressionSQ}, "needs an hnsw index"},
		{IndexHNSW, Compression{Type: "lvq"}, "want pq, bq, sq or rq"},
		{IndexHNSW, Compression{Type: CompressionRQ, Bits: 4}, "only rq takes bits, 8 or 1"},
		{IndexHNSW, Compression{Type: CompressionSQ, Bits: 8}, "only rq takes bits"},
		{IndexHNSW, Compression{Type: CompressionPQ, Segments: 5}, "a divisor of the 16 dimensions"},
		{IndexHNSW, Compression{Type: CompressionRQ, TrainingLimit: 1000}, "only pq and sq train"},
		{IndexHNSW, Compression{Type: CompressionBQ, RescoreLimit: 10}, "bq on a flat index rescore"},
		{IndexHNSW, Compression{Type: CompressionPQ, RescoreLimit: 10}, "rescore"},
		{IndexHNSW, Compression{RescoreLimit: 10}, "without a compression type"},
	}
	for _, tc := range bad {
		spec := CollectionSpec{Name: "RagopsTest_X", Revision: "r", Dimensions: 16, Index: VectorIndex{Type: tc.index, Compression: tc.c}}
		err := spec.validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: err %v, want %q", tc.index, tc.c, err, tc.want)
		}
	}
}
