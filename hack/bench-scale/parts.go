package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ragopsv1alpha1 "github.com/ragops/ragops/api/v1alpha1"
)

// opts are a part's settings (run.sh's flags).
type opts struct {
	docs                int
	seed                uint64
	data                string // the folder the parts' documents are generated in
	pool                string // legalqa-nl corpus.jsonl
	python              string // a Python with Pillow (hack/scan-fixtures's venv)
	scifact             string // SciFact BEIR folder
	add, change, remove int    // part 1's month
	scanned, changes    int    // part 2
	size                int    // chunk size in tokens
	shards              int
	compression         string // part 3: the compression changed to
	every               time.Duration
	burst, liveChanges  int // part 4
}

// goal is one of the goals, checked on the run.
type goal struct {
	Goal  string  `json:"goal"`
	Value float64 `json:"value"`
	Want  string  `json:"want"`
	Met   bool    `json:"met"`
}

// partResult is one part's line in results.jsonl.
type partResult struct {
	Part  int    `json:"part"`
	Time  string `json:"time"`
	Docs  int    `json:"docs"`
	Seed  uint64 `json:"seed"`
	Note  string `json:"note"`
	Steps []step `json:"steps"`
	Goals []goal `json:"goals"`
	Extra any    `json:"extra,omitempty"`
}

func (r *partResult) check(name string, value float64, want string, met bool) {
	r.Goals = append(r.Goals, goal{Goal: name, Value: round(value, 3), Want: want, Met: met})
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "[bench-scale %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}

// render runs scan_archive.py on jobs and returns each PDF's pages.
func render(o opts, jobs []scanJob) (map[string]int, error) {
	pages := map[string]int{}
	if len(jobs) == 0 {
		return pages, nil
	}
	f, err := os.CreateTemp(o.data, "scans-*.jsonl")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	enc := json.NewEncoder(f)
	for _, j := range jobs {
		if err := enc.Encode(j); err != nil {
			return nil, err
		}
	}
	f.Close()
	script := os.Getenv("BENCH_SCALE_SCAN_SCRIPT") // run.sh: hack/bench-scale/scan_archive.py
	cmd := exec.Command(o.python, script, f.Name())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("scan_archive.py: %w", err)
	}
	return pages, json.Unmarshal(out, &pages)
}

func (e *env) create(ctx context.Context, objs ...client.Object) error {
	for _, o := range objs {
		if err := e.c.Create(ctx, o); err != nil {
			return fmt.Errorf("%s: %w", o.GetName(), err)
		}
	}
	return nil
}

// build applies objs (ending with the Index) and measures the first build to a served
// revision.
func (e *env) build(ctx context.Context, part int, name string, w *watch, objs ...client.Object) (step, error) {
	m := e.meter(part, name, objs[len(objs)-1].GetName())
	if err := e.create(ctx, objs...); err != nil {
		return step{}, err
	}
	idx, err := w.until(ctx, m.idx, func(i *ragopsv1alpha1.Index) (bool, error) { return settled(i, ""), nil })
	if err != nil {
		return step{}, err
	}
	return m.finish(w, idx)
}

// sync changes the documents with change, asks the Corpus for a scan and measures the sync
// to the served revision holding the new content revision.
func (e *env) sync(ctx context.Context, part int, name, corpus, index string, w *watch, change func() error) (step, error) {
	m := e.meter(part, name, index)
	if err := change(); err != nil {
		return step{}, err
	}
	rev, err := e.scan(ctx, w, corpus, fmt.Sprintf("%s-%d", name, time.Now().UnixNano()))
	if err != nil {
		return step{}, err
	}
	idx, err := w.until(ctx, index, func(i *ragopsv1alpha1.Index) (bool, error) { return settled(i, rev), nil })
	if err != nil {
		return step{}, err
	}
	return m.finish(w, idx)
}

func emit(s step) { b, _ := json.Marshal(s); logf("%s", b) }

// part1 builds the synthetic archive through the operator, syncs a month (add, change,
// remove) and a single change, and builds the month's added and changed documents alone.
func part1(ctx context.Context, e *env, o opts) (*partResult, error) {
	res := &partResult{Part: 1, Docs: o.docs, Seed: o.seed}
	p, err := loadPool(o.pool)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.data, "p1")
	a, err := newArchive(p, o.seed, filepath.Join(dir, "archive"), o.docs, 0)
	if err != nil {
		return nil, err
	}
	if _, err := a.write(a.ids()); err != nil {
		return nil, err
	}
	month, err := a.plan("month", o.add, o.change, o.remove, -1)
	if err != nil {
		return nil, err
	}
	// The month's added and changed documents alone, at their versions after the month.
	only, err := newArchive(p, o.seed, filepath.Join(dir, "only"), 0, 0)
	if err != nil {
		return nil, err
	}
	for _, i := range month.Changed {
		only.version[i] = 2
	}
	for _, i := range month.Added {
		only.version[i] = 1
	}
	if _, err := only.write(only.ids()); err != nil {
		return nil, err
	}
	logf("part 1: %d documents, month +%d ~%d -%d, under %s", o.docs, len(month.Added), len(month.Changed), len(month.Removed), dir)
	if err := e.claim(ctx, "p1", dir); err != nil {
		return nil, err
	}
	w := e.watch("archive")
	s, err := e.build(ctx, 1, "build", w, e.corpus("archive", "p1", ragopsv1alpha1.FormatAuto, "archive/*"),
		e.strategy("p1", o.size), e.index("archive", "archive", "p1", o.shards))
	if err != nil {
		return nil, err
	}
	emit(s)
	res.Steps = append(res.Steps, s)
	s, err = e.sync(ctx, 1, "month", "archive", "archive", w, func() error { _, err := a.apply(month); return err })
	if err != nil {
		return nil, err
	}
	emit(s)
	res.Steps = append(res.Steps, s)
	one, err := a.plan("one", 0, 1, 0, -1)
	if err != nil {
		return nil, err
	}
	s, err = e.sync(ctx, 1, "one document changed", "archive", "archive", w, func() error { _, err := a.apply(one); return err })
	if err != nil {
		return nil, err
	}
	emit(s)
	res.Steps = append(res.Steps, s)
	w2 := e.watch("only")
	s, err = e.build(ctx, 1, fmt.Sprintf("build of the month's %d alone", len(month.Added)+len(month.Changed)), w2,
		e.corpus("only", "p1", ragopsv1alpha1.FormatAuto, "only/*"), e.index("only", "only", "p1", o.shards))
	if err != nil {
		return nil, err
	}
	emit(s)
	res.Steps = append(res.Steps, s)
	want := int64(len(month.Added) + len(month.Changed))
	st := res.Steps
	res.check("month: reader calls", float64(st[1].ReaderCalls), fmt.Sprintf("= %d", want), st[1].ReaderCalls == want)
	res.check("one change: reader calls", float64(st[2].ReaderCalls), "= 1", st[2].ReaderCalls == 1)
	ratio := st[1].CPUS / st[3].CPUS
	res.check("month CPU / build of those alone", ratio, "<= 1.5", ratio <= 1.5)
	res.check(fmt.Sprintf("fixed cost of a sync at %d documents (one change), CPU-s", o.docs), st[2].CPUS, "<= 60", st[2].CPUS <= 60)
	ones := st[0].Chunks == st[0].Documents
	res.check("one chunk per document (build chunks = documents)", float64(st[0].Chunks), fmt.Sprintf("= %d", st[0].Documents), ones)
	res.Note = fmt.Sprintf("%d documents, month +%d ~%d -%d", o.docs, len(month.Added), len(month.Changed), len(month.Removed))
	return res, nil
}

// part2 builds a slice with scanned PDFs, changes the strategy (every extraction from the
// cache) and syncs changed documents (OCR pages = the changed scanned documents' pages).
func part2(ctx context.Context, e *env, o opts) (*partResult, error) {
	res := &partResult{Part: 2, Docs: o.docs, Seed: o.seed}
	p, err := loadPool(o.pool)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.data, "p2")
	share := float64(o.scanned) / float64(o.docs)
	a, err := newArchive(p, o.seed, filepath.Join(dir, "slice"), o.docs, share)
	if err != nil {
		return nil, err
	}
	jobs, err := a.write(a.ids())
	if err != nil {
		return nil, err
	}
	logf("part 2: rendering %d scanned PDFs (%d documents)", len(jobs), o.docs)
	pages, err := render(o, jobs)
	if err != nil {
		return nil, err
	}
	total := 0
	for _, n := range pages {
		total += n
	}
	changedScanned := (o.changes*len(jobs) + o.docs/2) / o.docs
	mut, err := a.plan("changes", 0, o.changes, 0, changedScanned)
	if err != nil {
		return nil, err
	}
	if err := e.claim(ctx, "p2", dir); err != nil {
		return nil, err
	}
	w := e.watch("slice")
	strat := e.strategy("p2", o.size)
	s, err := e.build(ctx, 2, "build", w, e.corpus("slice", "p2", ragopsv1alpha1.FormatAuto, "slice/*"), strat,
		e.index("slice", "slice", "p2", o.shards))
	if err != nil {
		return nil, err
	}
	emit(s)
	res.Steps = append(res.Steps, s)
	first := s.Revision
	// A strategy change: a new revision, read from the extraction cache.
	m := e.meter(2, "strategy change", "slice")
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(strat), strat); err != nil {
		return nil, err
	}
	patch := client.MergeFrom(strat.DeepCopy())
	strat.Spec.Size = int32(o.size * 3 / 4)
	if err := e.c.Patch(ctx, strat, patch); err != nil {
		return nil, err
	}
	idx, err := w.until(ctx, "slice", func(i *ragopsv1alpha1.Index) (bool, error) {
		return settled(i, "") && i.Status.ActiveRevision != first, nil
	})
	if err != nil {
		return nil, err
	}
	if s, err = m.finish(w, idx); err != nil {
		return nil, err
	}
	emit(s)
	res.Steps = append(res.Steps, s)
	var changedPages []scanJob
	s, err = e.sync(ctx, 2, fmt.Sprintf("sync of %d changed (%d scanned)", o.changes, changedScanned), "slice", "slice", w,
		func() error {
			jobs, err := a.apply(mut)
			if err != nil {
				return err
			}
			changedPages = jobs
			got, err := render(o, jobs)
			for k, v := range got {
				pages[k] = v
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	emit(s)
	res.Steps = append(res.Steps, s)
	wantPages := 0
	for _, j := range changedPages {
		wantPages += pages[j.Path]
	}
	st := res.Steps
	res.check("strategy change: OCR pages", float64(st[1].OCRPages), "= 0", st[1].OCRPages == 0)
	res.check("strategy change: reader calls (PDFs opened)", float64(st[1].ReaderCalls), "= 0", st[1].ReaderCalls == 0)
	res.check("sync: OCR pages", float64(st[2].OCRPages), fmt.Sprintf("= %d (pages of the changed scanned)", wantPages), st[2].OCRPages == int64(wantPages))
	res.check("sync: reader calls", float64(st[2].ReaderCalls), fmt.Sprintf("= %d", o.changes), st[2].ReaderCalls == int64(o.changes))
	res.Note = fmt.Sprintf("%d documents: %d scanned PDFs (%d pages) and %d born-digital Markdown; %d changed, %d of them scanned",
		o.docs, len(jobs), total, o.docs-len(jobs), o.changes, changedScanned)
	return res, nil
}

// part3 builds SciFact (the first --docs documents with every judged one, or all), evaluates
// it, changes the Index's compression and evaluates the copy.
func part3(ctx context.Context, e *env, o opts) (*partResult, error) {
	res := &partResult{Part: 3, Docs: o.docs, Seed: o.seed}
	dir := filepath.Join(o.data, "p3")
	n, err := sciSubset(o.scifact, dir, o.docs)
	if err != nil {
		return nil, err
	}
	res.Docs = n
	if err := e.claim(ctx, "p3", dir); err != nil {
		return nil, err
	}
	w := e.watch("scifact")
	s, err := e.build(ctx, 3, "build", w, e.corpus("scifact", "p3", ragopsv1alpha1.FormatBEIR, "corpus.jsonl"),
		e.strategy("p3", o.size), e.index("scifact", "scifact", "p3", o.shards))
	if err != nil {
		return nil, err
	}
	emit(s)
	res.Steps = append(res.Steps, s)
	before, err := e.evaluate(ctx, w, "before", "scifact", s.Revision)
	if err != nil {
		return nil, err
	}
	first := s
	m := e.meter(3, "compression "+o.compression, "scifact")
	var idx ragopsv1alpha1.Index
	if err := e.c.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: "scifact"}, &idx); err != nil {
		return nil, err
	}
	patch := client.MergeFrom(idx.DeepCopy())
	idx.Spec.Compression = &ragopsv1alpha1.CompressionSpec{Type: ragopsv1alpha1.CompressionType(strings.ToUpper(o.compression)), Bits: 8}
	if !strings.EqualFold(o.compression, "rq") {
		idx.Spec.Compression.Bits = 0
	}
	if err := e.c.Patch(ctx, &idx, patch); err != nil {
		return nil, err
	}
	got, err := w.until(ctx, "scifact", func(i *ragopsv1alpha1.Index) (bool, error) {
		return settled(i, "") && i.Status.ActiveRevision != first.Revision, nil
	})
	if err != nil {
		return nil, err
	}
	if s, err = m.finish(w, got); err != nil {
		return nil, err
	}
	emit(s)
	res.Steps = append(res.Steps, s)
	after, err := e.evaluate(ctx, w, "after", "scifact", s.Revision)
	if err != nil {
		return nil, err
	}
	c0, err := count(e.httpHost, first.Collection)
	if err != nil {
		return nil, err
	}
	c1, err := count(e.httpHost, s.Collection)
	if err != nil {
		return nil, err
	}
	res.check("compression change: tokens embedded", float64(s.Tokens), "= 0", s.Tokens == 0)
	res.check("compression change: filled by a copy (status copyFrom = the first revision)", float64(btoi(s.CopyFrom == first.Revision)), "= 1", s.CopyFrom == first.Revision)
	res.check("collection count after (before: "+fmt.Sprint(c0)+")", float64(c1), fmt.Sprintf("= %d", c0), c0 == c1 && c0 > 0)
	in := before.NDCGInterval != nil && after.NDCG >= before.NDCGInterval.Lower && after.NDCG <= before.NDCGInterval.Upper
	want := "within before's interval"
	if before.NDCGInterval != nil {
		want = fmt.Sprintf("in [%.4f, %.4f] (before %.4f)", before.NDCGInterval.Lower, before.NDCGInterval.Upper, before.NDCG)
	}
	res.check("nDCG@10 after", after.NDCG, want, in)
	res.Extra = map[string]any{"ndcgBefore": before, "ndcgAfter": after, "copyFrom": s.CopyFrom}
	res.Note = fmt.Sprintf("SciFact: %d documents (every judged one and the first others in corpus order), compression None -> %s", n, o.compression)
	return res, nil
}

// sciSubset writes SciFact's judged documents and the first others up to docs (all when docs
// <= 0) with the test queries and qrels into dir; it returns the documents kept.
func sciSubset(src, dir string, docs int) (int, error) {
	if err := os.RemoveAll(dir); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		return 0, err
	}
	raw, err := os.ReadFile(filepath.Join(src, "qrels", "test.tsv"))
	if err != nil {
		return 0, err
	}
	judged := map[string]bool{}
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if f := strings.Split(line, "\t"); i > 0 && len(f) >= 2 {
			judged[f[1]] = true
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "qrels", "test.tsv"), raw, 0o644); err != nil {
		return 0, err
	}
	q, err := os.ReadFile(filepath.Join(src, "queries.jsonl"))
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(dir, "queries.jsonl"), q, 0o644); err != nil {
		return 0, err
	}
	in, err := os.Open(filepath.Join(src, "corpus.jsonl"))
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.Create(filepath.Join(dir, "corpus.jsonl"))
	if err != nil {
		return 0, err
	}
	bw := bufio.NewWriter(out)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	others := docs - len(judged)
	n := 0
	for sc.Scan() {
		var rec struct {
			ID string `json:"_id"`
		}
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			continue
		}
		if !judged[rec.ID] {
			if docs > 0 && others <= 0 {
				continue
			}
			others--
		}
		bw.Write(sc.Bytes())
		bw.WriteByte('\n')
		n++
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	return n, out.Close()
}

// ndcg is an Evaluation's nDCG@10 with its interval.
type ndcg struct {
	Revision     string                             `json:"revision"`
	NDCG         float64                            `json:"ndcg10"`
	NDCGInterval *ragopsv1alpha1.ConfidenceInterval `json:"ndcgInterval,omitempty"`
	Queries      int32                              `json:"queries"`
}

// evaluate runs an Evaluation of the Index's revision on the part's claim (BEIR layout,
// split test) and returns its nDCG@10.
func (e *env) evaluate(ctx context.Context, w *watch, name, index, revision string) (ndcg, error) {
	ev := &ragopsv1alpha1.Evaluation{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.namespace},
		Spec: ragopsv1alpha1.EvaluationSpec{IndexRef: ragopsv1alpha1.LocalObjectReference{Name: index}, Revision: revision,
			EvaluationParameters: ragopsv1alpha1.EvaluationParameters{Mode: ragopsv1alpha1.ModeDense,
				Dataset: ragopsv1alpha1.DatasetSource{PVC: &ragopsv1alpha1.PVCSource{ClaimName: "p3"}, Split: "test"}}}}
	if err := e.create(ctx, ev); err != nil {
		return ndcg{}, err
	}
	for end := time.Now().Add(e.timeout); time.Now().Before(end); time.Sleep(time.Second) {
		if err := w.poll(ctx); err != nil {
			return ndcg{}, err
		}
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(ev), ev); err != nil {
			return ndcg{}, err
		}
		if s := apimeta.FindStatusCondition(ev.Status.Conditions, "Stalled"); s != nil && s.Status == metav1.ConditionTrue {
			return ndcg{}, fmt.Errorf("evaluation %s is Stalled: %s", name, s.Message)
		}
		for _, m := range ev.Status.Metrics {
			if m.K == 10 && ev.Status.Revision == revision {
				return ndcg{Revision: revision, NDCG: m.NDCG, NDCGInterval: m.NDCGInterval, Queries: ev.Status.Queries}, nil
			}
		}
	}
	return ndcg{}, fmt.Errorf("evaluation %s: no nDCG@10 within %s", name, e.timeout)
}

// count returns a collection's object count (Weaviate's GraphQL Aggregate).
func count(host, collection string) (int64, error) {
	q := fmt.Sprintf(`{"query":"{Aggregate{%s{meta{count}}}}"}`, collection)
	resp, err := http.Post("http://"+host+"/v1/graphql", "application/json", strings.NewReader(q))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Data struct {
			Aggregate map[string][]struct {
				Meta struct {
					Count int64 `json:"count"`
				} `json:"meta"`
			} `json:"Aggregate"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return 0, fmt.Errorf("aggregate %s: %w: %s", collection, err, raw)
	}
	if r := out.Data.Aggregate[collection]; len(r) == 1 {
		return r[0].Meta.Count, nil
	}
	return 0, fmt.Errorf("aggregate %s: %s", collection, raw)
}

// part4 builds a small archive, starts a long sync (a burst of changed documents), then
// changes one document every o.every while it runs, liveChanges times; it measures the time
// from the last change to the served revision holding it.
func part4(ctx context.Context, e *env, o opts) (*partResult, error) {
	res := &partResult{Part: 4, Docs: o.docs, Seed: o.seed}
	p, err := loadPool(o.pool)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.data, "p4")
	a, err := newArchive(p, o.seed, filepath.Join(dir, "live"), o.docs, 0)
	if err != nil {
		return nil, err
	}
	if _, err := a.write(a.ids()); err != nil {
		return nil, err
	}
	if err := e.claim(ctx, "p4", dir); err != nil {
		return nil, err
	}
	w := e.watch("live")
	s, err := e.build(ctx, 4, "build", w, e.corpus("live", "p4", ragopsv1alpha1.FormatAuto, "live/*"),
		e.strategy("p4", o.size), e.index("live", "live", "p4", o.shards))
	if err != nil {
		return nil, err
	}
	emit(s)
	res.Steps = append(res.Steps, s)
	m := e.meter(4, fmt.Sprintf("%d changed, then 1 every %s x%d", o.burst, o.every, o.liveChanges), "live")
	burst, err := a.plan("burst", 0, o.burst, 0, -1)
	if err != nil {
		return nil, err
	}
	if _, err := a.apply(burst); err != nil {
		return nil, err
	}
	var revs []string
	var last time.Time
	for k := 0; k <= o.liveChanges; k++ {
		if k > 0 {
			one, err := a.plan(fmt.Sprintf("live-%d", k), 0, 1, 0, -1)
			if err != nil {
				return nil, err
			}
			if _, err := a.apply(one); err != nil {
				return nil, err
			}
		}
		last = time.Now()
		rev, err := e.scan(ctx, w, "live", fmt.Sprintf("live-%d-%d", k, last.UnixNano()))
		if err != nil {
			return nil, err
		}
		revs = append(revs, rev)
		logf("part 4: change %d -> corpus revision %s", k, rev)
		for time.Since(last) < o.every {
			if err := w.poll(ctx); err != nil {
				return nil, err
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	final := revs[len(revs)-1]
	idx, err := w.until(ctx, "live", func(i *ragopsv1alpha1.Index) (bool, error) { return settled(i, final), nil })
	if err != nil {
		return nil, err
	}
	catchUp := time.Since(last).Seconds()
	if s, err = m.finish(w, idx); err != nil {
		return nil, err
	}
	emit(s)
	res.Steps = append(res.Steps, s)
	syncs := 0
	for _, p := range w.seen {
		if p.CreationTimestamp.After(m.start) && p.Labels["app.kubernetes.io/component"] == "embed" {
			syncs++
		}
	}
	res.check("time from the last change to the served revision holding it, s", catchUp, "finite (no livelock)", true)
	res.Extra = map[string]any{"corpusRevisions": len(unique(revs)), "syncPods": syncs, "catchUpS": round(catchUp, 1)}
	res.Note = fmt.Sprintf("%d documents; %d changed at once, then one changed and a scan requested every %s, %d times, while syncs run",
		o.docs, o.burst, o.every, o.liveChanges)
	return res, nil
}

func unique(s []string) []string {
	m := map[string]bool{}
	var out []string
	for _, v := range s {
		if !m[v] {
			m[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
