// Command bench-weaviate measures Weaviate import speed of ragops' vectorstore (Go, gRPC batches)
// against the official Python client (weaviate-client 4.24.1, batch.fixed_size) in one run on one
// throwaway server: the same SciFact chunk objects (384-dimensional), the same collection
// schema, flat and HNSW vector indexes, alternating order (ABBA, each index type led by the other
// client) to cancel drift, each run started on an idle server after an untimed warm-up import. It reports
// objects/s, wall seconds, server CPU seconds (from /proc/<pid>/stat) and client CPU seconds.
//
// Vectors are deterministic pseudo-random unit vectors seeded by each chunk's text (no model
// runs): import cost does not depend on what the numbers mean, and both clients send the same.
//
// Run it through hack/bench-weaviate/run.sh (builds the server, prepares the Python venv):
//
//	hack/bench-weaviate/run.sh [-objects 10000] [-rounds 2]
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ragops/ragops/chunkers"
	"github.com/ragops/ragops/vectorstore"
	"github.com/ragops/ragops/vectorstore/weaviatetest"
)

const dims = 384

type result struct {
	client, index  string
	objects        int
	seconds        float64
	serverCPU      float64
	clientCPU      float64
	countAfterLoad int
}

func main() {
	corpus := flag.String("corpus", "../shared/datasets/scifact/corpus.jsonl", "BEIR SciFact corpus.jsonl")
	python := flag.String("python", ".cache/bench-weaviate/venv/bin/python", "Python with weaviate-client installed")
	script := flag.String("script", "hack/bench-weaviate/import.py", "the Python import script")
	maxObjects := flag.Int("objects", 10000, "number of chunk objects to import per run")
	rounds := flag.Int("rounds", 2, "rounds per index type; client order alternates (Go,Py,Py,Go,...)")
	warmup := flag.Bool("warmup", true, "one untimed import per index type before the measured rounds (the first import into a fresh server runs slower, whichever client makes it)")
	batchSize := flag.Int("batch-size", 256, "objects per batch request (both clients)")
	concurrency := flag.Int("concurrency", 2, "batch requests in flight (both clients)")
	flag.Parse()
	if err := run(*corpus, *python, *script, *maxObjects, *rounds, *batchSize, *concurrency, *warmup); err != nil {
		fmt.Fprintln(os.Stderr, "bench-weaviate:", err)
		os.Exit(1)
	}
}

func run(corpus, python, script string, maxObjects, rounds, batchSize, concurrency int, warmup bool) error {
	chunks, err := loadChunks(corpus, maxObjects)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "bench-weaviate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	objFile, vecFile := filepath.Join(tmp, "objects.jsonl"), filepath.Join(tmp, "vectors.f32")

	ctx := context.Background()
	srv, err := weaviatetest.Launch(ctx, weaviatetest.Options{})
	if err != nil {
		return err
	}
	defer srv.Stop()
	store, err := vectorstore.New(vectorstore.Config{HTTPHost: srv.HTTPAddr, GRPCHost: srv.GRPCAddr,
		BatchSize: batchSize, Concurrency: concurrency})
	if err != nil {
		return err
	}
	_, httpPort, _ := net.SplitHostPort(srv.HTTPAddr)
	_, grpcPort, _ := net.SplitHostPort(srv.GRPCAddr)

	fmt.Fprintf(os.Stderr, "%d objects of %d dims from %s; weaviate pid %d\n", len(chunks), dims, corpus, srv.PID())
	var results []result
	for ii, index := range []vectorstore.VectorIndex{{Type: vectorstore.IndexFlat}, {Type: vectorstore.IndexHNSW}} {
		if warmup {
			name, _ := vectorstore.CollectionName("bench", "warmup-"+index.Type, "w")
			if err := store.EnsureCollection(ctx, vectorstore.CollectionSpec{Name: name, Revision: "w", Dimensions: dims, Index: index}); err != nil {
				return err
			}
			if err := store.Upsert(ctx, name, chunks); err != nil {
				return err
			}
			if err := store.DeleteCollection(ctx, name); err != nil {
				return err
			}
		}
		for r := 0; r < rounds; r++ {
			order := []string{"go", "python"}
			if (ii+r)%2 == 1 {
				order = []string{"python", "go"}
			}
			for _, client := range order {
				revision := fmt.Sprintf("r%d", r)
				name, _ := vectorstore.CollectionName("bench", "scifact-"+client+"-"+index.Type, revision)
				spec := vectorstore.CollectionSpec{Name: name, Revision: revision, Dimensions: dims, Index: index}
				if err := store.EnsureCollection(ctx, spec); err != nil {
					return err
				}
				res := result{client: client, index: index.Type, objects: len(chunks)}
				if err := waitQuiet(srv); err != nil {
					return err
				}
				cpu0, err := srv.CPUSeconds()
				if err != nil {
					return err
				}
				if client == "go" {
					var ru0, ru1 syscall.Rusage
					syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
					t0 := time.Now()
					if err := store.Upsert(ctx, name, chunks); err != nil {
						return err
					}
					res.seconds = time.Since(t0).Seconds()
					syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
					res.clientCPU = rusageSeconds(ru1) - rusageSeconds(ru0)
				} else {
					if err := writePeerFiles(chunks, revision, objFile, vecFile); err != nil {
						return err
					}
					out, err := exec.Command(python, script, "--http-port", httpPort, "--grpc-port", grpcPort,
						"--collection", name, "--objects", objFile, "--vectors", vecFile, "--dims", fmt.Sprint(dims),
						"--batch-size", fmt.Sprint(batchSize), "--concurrency", fmt.Sprint(concurrency)).Output()
					if err != nil {
						if ee, ok := err.(*exec.ExitError); ok {
							return fmt.Errorf("python import: %v: %s", err, ee.Stderr)
						}
						return fmt.Errorf("python import: %w", err)
					}
					var py struct {
						Objects   int     `json:"objects"`
						Seconds   float64 `json:"seconds"`
						ClientCPU float64 `json:"client_cpu_seconds"`
						Failed    int     `json:"failed"`
					}
					lines := strings.Split(strings.TrimSpace(string(out)), "\n")
					if err := json.Unmarshal([]byte(lines[len(lines)-1]), &py); err != nil {
						return fmt.Errorf("python import output %q: %w", out, err)
					}
					if py.Failed > 0 || py.Objects != len(chunks) {
						return fmt.Errorf("python import: %d of %d objects failed", py.Failed, py.Objects)
					}
					res.seconds, res.clientCPU = py.Seconds, py.ClientCPU
				}
				cpu1, err := srv.CPUSeconds()
				if err != nil {
					return err
				}
				res.serverCPU = cpu1 - cpu0
				if res.countAfterLoad, err = store.Count(ctx, name); err != nil {
					return err
				}
				if res.countAfterLoad != len(chunks) {
					return fmt.Errorf("%s %s: collection holds %d objects after import, want %d", client, index.Type, res.countAfterLoad, len(chunks))
				}
				fmt.Fprintf(os.Stderr, "%-6s %-4s %6.0f objects/s  %6.2f s  server %6.2f CPU-s  client %5.2f CPU-s\n",
					client, index.Type, float64(len(chunks))/res.seconds, res.seconds, res.serverCPU, res.clientCPU)
				results = append(results, res)
				if err := store.DeleteCollection(ctx, name); err != nil {
					return err
				}
			}
		}
	}
	printTable(results, len(chunks), batchSize, concurrency)
	return nil
}

// waitQuiet waits until the server has been idle (under 5% of a core for a second) so that
// background work left by the previous run (HNSW commit-log condensing, LSM compaction, dropping
// deleted collections) is not charged to the next one; at most 60 s.
func waitQuiet(srv *weaviatetest.Server) error {
	prev, err := srv.CPUSeconds()
	if err != nil {
		return err
	}
	for i := 0; i < 60; i++ {
		time.Sleep(time.Second)
		cur, err := srv.CPUSeconds()
		if err != nil {
			return err
		}
		if cur-prev < 0.05 {
			return nil
		}
		prev = cur
	}
	fmt.Fprintln(os.Stderr, "server still busy after 60 s; measuring anyway")
	return nil
}

func rusageSeconds(r syscall.Rusage) float64 {
	return float64(r.Utime.Sec+r.Stime.Sec) + float64(r.Utime.Usec+r.Stime.Usec)/1e6
}

// printTable writes the Markdown table: per index type and client, the totals over rounds.
func printTable(results []result, n, batchSize, concurrency int) {
	type agg struct{ seconds, server, client float64 }
	sums := map[string]*agg{}
	for _, r := range results {
		k := r.index + "/" + r.client
		if sums[k] == nil {
			sums[k] = &agg{}
		}
		sums[k].seconds += r.seconds
		sums[k].server += r.serverCPU
		sums[k].client += r.clientCPU
	}
	rounds := len(results) / 4
	fmt.Printf("| index | client | objects/s | wall s per run | server CPU-s per run | client CPU-s per run | Go / Python |\n")
	fmt.Printf("|---|---|---:|---:|---:|---:|---:|\n")
	for _, index := range []string{"flat", "hnsw"} {
		goRate := float64(n*rounds) / sums[index+"/go"].seconds
		pyRate := float64(n*rounds) / sums[index+"/python"].seconds
		for _, c := range []string{"go", "python"} {
			s := sums[index+"/"+c]
			name := "ragops vectorstore (Go, gRPC)"
			ratio := fmt.Sprintf("%.2fx", goRate/pyRate)
			if c == "python" {
				name, ratio = "weaviate-client 4.24.1 (Python)", ""
			}
			fmt.Printf("| %s | %s | %.0f | %.2f | %.2f | %.2f | %s |\n", index, name,
				float64(n*rounds)/s.seconds, s.seconds/float64(rounds), s.server/float64(rounds), s.client/float64(rounds), ratio)
		}
	}
	fmt.Printf("\n%d objects x %d dims per run, %d run(s) per client and index (ABBA order, each index type led by the other client), each run on an idle server, batch %d, %d requests in flight.\n",
		n, dims, rounds, batchSize, concurrency)
}

// loadChunks cuts SciFact documents (title, blank line, abstract) into 64-word chunks with 16
// words overlap until max chunks, each with a deterministic unit vector seeded by its text.
func loadChunks(corpus string, max int) ([]vectorstore.Chunk, error) {
	f, err := os.Open(corpus)
	if err != nil {
		return nil, fmt.Errorf("SciFact corpus: %w (pass -corpus; the data set is in shared/datasets/scifact)", err)
	}
	defer f.Close()
	ch, err := chunkers.NewFixed(chunkers.WordSizer{}, 64, 16)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var out []vectorstore.Chunk
	for sc.Scan() && len(out) < max {
		var d struct {
			ID    string `json:"_id"`
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return nil, fmt.Errorf("%s: %w", corpus, err)
		}
		text := d.Title + "\n\n" + d.Text
		cs, err := ch.Chunk(context.Background(), text)
		if err != nil {
			return nil, fmt.Errorf("%s document %s: %w", corpus, d.ID, err)
		}
		for _, c := range cs {
			if len(out) == max {
				break
			}
			body := text[c.Start:c.End]
			out = append(out, vectorstore.Chunk{DocID: d.ID, Ordinal: c.Ordinal, Start: c.Start, End: c.End,
				Text: body, HeadingPath: []string{d.Title}, Vector: unitVector(body)})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) < max {
		return nil, fmt.Errorf("%s gives only %d chunks, %d asked", corpus, len(out), max)
	}
	return out, nil
}

func unitVector(key string) []float32 {
	h := fnv.New64a()
	h.Write([]byte(key))
	r := rand.New(rand.NewPCG(h.Sum64(), 0x9e3779b97f4a7c15))
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		x := r.NormFloat64()
		v[i] = float32(x)
		norm += x * x
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

// writePeerFiles writes the objects for the Python side: the same UUIDs and properties
// vectorstore sends, and the vectors as raw float32.
func writePeerFiles(chunks []vectorstore.Chunk, revision, objFile, vecFile string) error {
	of, err := os.Create(objFile)
	if err != nil {
		return err
	}
	defer of.Close()
	vf, err := os.Create(vecFile)
	if err != nil {
		return err
	}
	defer vf.Close()
	ow, vw := bufio.NewWriter(of), bufio.NewWriter(vf)
	enc := json.NewEncoder(ow)
	for _, c := range chunks {
		err := enc.Encode(map[string]any{
			"uuid": vectorstore.ChunkID(revision, c.DocID, c.Ordinal).String(),
			"properties": map[string]any{
				vectorstore.PropText: c.Text, vectorstore.PropDocID: c.DocID, vectorstore.PropChunkOrdinal: c.Ordinal,
				vectorstore.PropStart: c.Start, vectorstore.PropEnd: c.End, vectorstore.PropHeadingPath: c.HeadingPath,
				vectorstore.PropRevision: revision, vectorstore.PropPageStart: c.PageStart, vectorstore.PropPageEnd: c.PageEnd,
				vectorstore.PropDocHash: c.DocHash,
			},
		})
		if err != nil {
			return err
		}
		if err := binary.Write(vw, binary.LittleEndian, c.Vector); err != nil {
			return err
		}
	}
	if err := ow.Flush(); err != nil {
		return err
	}
	return vw.Flush()
}
