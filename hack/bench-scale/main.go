// Command bench-scale measures issue 51's "only what changed" through the operator on a
// local cluster (hack/localcluster, started by hack/bench-scale/run.sh the way
// hack/bench-ingest/run.sh does), on a seeded synthetic Dutch municipal archive:
//
//	bench-scale run -part 1|2|3|4 [flags]   # one part: its steps and goals, one JSON line
//	bench-scale table -results FILE [-benchmarks FILE]   # Markdown tables of each part's last run
//	bench-scale gen -pool FILE -out DIR [-docs N] [-seed N]  # only the archive (born-digital), for a look
//
// The archive is short council resolutions (Beslispunt / Motivering / Stemverhouding) made of
// sentences of real Dutch statutes (legalqa-nl), about 70 words each, so that every document
// is one chunk; part 2's scanned share is rendered as image-only PDFs by
// hack/scan-fixtures/scan.py (scan_archive.py). Everything is drawn from -seed: the same seed
// makes the same documents and the same mutations. Each step is measured from its start (an
// apply or a change of the files) to the served revision holding it: reader calls, unchanged
// documents, cache hits and OCR pages from the worker pods' BuildResults, tokens embedded, the
// worker and scan pods' process CPU and peak RSS (the local node shim's wait4), the operator's
// CPU (/proc), wall time.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: bench-scale run|table [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = run(os.Args[2:])
	case "table":
		err = table(os.Args[2:])
	case "gen":
		err = gen(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-scale:", err)
	os.Exit(1)
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	part := fs.Int("part", 1, "part 1, 2, 3 or 4")
	var o opts
	fs.IntVar(&o.docs, "docs", 0, "documents (part 1: 92184, part 2: 920, part 3: all of SciFact, part 4: 500)")
	fs.Uint64Var(&o.seed, "seed", 51, "seed of the documents and the mutations")
	fs.StringVar(&o.data, "data", "", "folder the documents are generated in (the PersistentVolumes' host folder)")
	fs.StringVar(&o.pool, "pool", "", "legalqa-nl corpus.jsonl (the Dutch text)")
	fs.StringVar(&o.python, "python", "python3", "Python with Pillow for scan_archive.py")
	fs.StringVar(&o.scifact, "scifact", "", "SciFact BEIR folder")
	month := fs.String("month", "1200,100,50", "part 1: the month's added,changed,removed documents")
	fs.IntVar(&o.scanned, "scanned", 0, "part 2: scanned PDFs among -docs (default 200 of 920, in proportion)")
	fs.IntVar(&o.changes, "changes", 0, "part 2: documents changed in the sync (default 26 of 920, in proportion)")
	fs.IntVar(&o.size, "size", 320, "chunk size in tokens (Recursive)")
	fs.IntVar(&o.shards, "shards", 2, "embedder pods")
	fs.StringVar(&o.compression, "compression", "RQ", "part 3: the compression changed to (RQ 8 bits, SQ, BQ)")
	fs.DurationVar(&o.every, "every", 5*time.Second, "part 4: time between two changes")
	fs.IntVar(&o.burst, "burst", 0, "part 4: documents changed at once to start a long sync (default docs/2)")
	fs.IntVar(&o.liveChanges, "live-changes", 8, "part 4: single changes after the burst")
	kubeconfig := fs.String("kubeconfig", "", "the local cluster's kubeconfig")
	timeout := fs.Duration("timeout", 45*time.Minute, "longest wait of one step")
	e := &env{}
	fs.StringVar(&e.namespace, "namespace", "bench-scale", "namespace")
	fs.StringVar(&e.nodeState, "node-state", "", "the local node's state folder")
	fs.StringVar(&e.image, "image-model", "", "the model folder inside the worker image")
	fs.StringVar(&e.httpHost, "http", "", "Weaviate HTTP host:port")
	fs.StringVar(&e.grpcHost, "grpc", "", "Weaviate gRPC host:port")
	fs.IntVar(&e.managerPID, "manager-pid", 0, "pid of ragops manager")
	fs.IntVar(&e.weaviatePID, "weaviate-pid", 0, "pid of Weaviate (its CPU is reported apart)")
	pids := fs.String("cluster-pids", "", "comma-separated pids of the control plane and the node")
	_ = fs.Parse(args)
	n, err := newEnv(*kubeconfig)
	if err != nil {
		return err
	}
	e.c, e.timeout = n.c, *timeout
	for _, p := range strings.Split(*pids, ",") {
		if v, err := strconv.Atoi(p); err == nil {
			e.clusterPIDs = append(e.clusterPIDs, v)
		}
	}
	if _, err := fmt.Sscanf(*month, "%d,%d,%d", &o.add, &o.change, &o.remove); err != nil {
		return fmt.Errorf("-month %q: %w", *month, err)
	}
	if err := os.MkdirAll(o.data, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	var res *partResult
	switch *part {
	case 1:
		if o.docs == 0 {
			o.docs = 92184
		}
		res, err = part1(ctx, e, o)
	case 2:
		if o.docs == 0 {
			o.docs = 920
		}
		if o.scanned == 0 {
			o.scanned = (o.docs*200 + 460) / 920
		}
		if o.changes == 0 {
			o.changes = max(1, (o.docs*26+460)/920)
		}
		res, err = part2(ctx, e, o)
	case 3:
		res, err = part3(ctx, e, o)
	case 4:
		if o.docs == 0 {
			o.docs = 500
		}
		if o.burst == 0 {
			o.burst = o.docs / 2
		}
		res, err = part4(ctx, e, o)
	default:
		return fmt.Errorf("-part %d: 1, 2, 3 or 4", *part)
	}
	if err != nil {
		return err
	}
	res.Time = time.Now().UTC().Format(time.RFC3339)
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	return nil
}

// gen writes -docs documents of the archive (Markdown) into -out and prints their word
// counts' median and maximum.
func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	pool := fs.String("pool", "", "legalqa-nl corpus.jsonl")
	out := fs.String("out", "", "output folder")
	docs := fs.Int("docs", 1000, "documents")
	seed := fs.Uint64("seed", 51, "seed")
	_ = fs.Parse(args)
	p, err := loadPool(*pool)
	if err != nil {
		return err
	}
	a, err := newArchive(p, *seed, *out, *docs, 0)
	if err != nil {
		return err
	}
	if _, err := a.write(a.ids()); err != nil {
		return err
	}
	var words []int
	for _, i := range a.ids() {
		words = append(words, len(strings.Fields(markdown(p.resolution(*seed, i, 1, false)))))
	}
	sort.Ints(words)
	fmt.Printf("%d documents in %s: words median %d, max %d\n", len(words), *out, words[len(words)/2], words[len(words)-1])
	return nil
}

// table prints each part's last run in results as Markdown; with -benchmarks it replaces
// the text between <!-- bench-scale:begin --> and <!-- bench-scale:end --> there.
func table(args []string) error {
	fs := flag.NewFlagSet("table", flag.ExitOnError)
	results := fs.String("results", "", "results.jsonl")
	benchmarks := fs.String("benchmarks", "", "BENCHMARKS.md to update")
	machine := fs.String("machine", "", "the machine, in words")
	_ = fs.Parse(args)
	raw, err := os.ReadFile(*results)
	if err != nil {
		return err
	}
	last := map[int]partResult{}
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r partResult
		if json.Unmarshal([]byte(line), &r) == nil && r.Part > 0 {
			last[r.Part] = r
		}
	}
	var parts []int
	for p := range last {
		parts = append(parts, p)
	}
	sort.Ints(parts)
	titles := map[int]string{1: "Part 1: the archive, a month, one change", 2: "Part 2: a slice with scans",
		3: "Part 3: a compression change", 4: "Part 4: a Corpus changing during syncs"}
	var b strings.Builder
	fmt.Fprintf(&b, "Machine: %s. Each step from its start (apply, or the files changed and a scan requested) to the served revision holding it. CPU-s = worker pods (build, sync or copy) + scan pods (process CPU from the local node's wait4) + the operator (/proc); the control plane's is left out, Weaviate's is its own column (not taken in runs before that column). Peak RSS: the largest pod.\n\n", *machine)
	for _, p := range parts {
		r := last[p]
		fmt.Fprintf(&b, "**%s** (%s; seed %d; run %s)\n\n", titles[p], r.Note, r.Seed, r.Time)
		b.WriteString("| step | reader calls | unchanged | cache hits | OCR pages | tokens | CPU-s (workers + scan + operator) | Weaviate CPU-s | wall s | peak RSS MiB |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, s := range r.Steps {
			wv := "not taken"
			if s.WeaviateCPUS > 0 {
				wv = fmt.Sprintf("%.1f", s.WeaviateCPUS)
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %.1f (%.1f + %.1f + %.1f) | %s | %.1f | %.0f |\n", s.Step, s.ReaderCalls,
				s.Unchanged, s.CacheHits, s.OCRPages, s.Tokens, s.CPUS, s.WorkerCPUS, s.ScanCPUS, s.OperatorCPUS, wv, s.WallS, s.PeakRSSMiB)
		}
		if r.Extra != nil {
			x, _ := json.Marshal(r.Extra)
			fmt.Fprintf(&b, "\nAlso: `%s`\n", x)
		}
		b.WriteString("\n| goal | measured | wanted | met |\n|---|---:|---|---|\n")
		for _, g := range r.Goals {
			met := "yes"
			if !g.Met {
				met = "**no**"
			}
			fmt.Fprintf(&b, "| %s | %g | %s | %s |\n", g.Goal, g.Value, g.Want, met)
		}
		b.WriteString("\n")
	}
	out := b.String()
	if *benchmarks == "" {
		fmt.Print(out)
		return nil
	}
	doc, err := os.ReadFile(*benchmarks)
	if err != nil {
		return err
	}
	begin, end := "<!-- bench-scale:begin -->\n", "<!-- bench-scale:end -->"
	i, j := strings.Index(string(doc), begin), strings.Index(string(doc), end)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q ... %q markers", *benchmarks, strings.TrimSpace(begin), end)
	}
	return os.WriteFile(*benchmarks, []byte(string(doc)[:i+len(begin)]+out+string(doc)[j:]), 0o644)
}
