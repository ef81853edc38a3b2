package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// pool is the real Dutch text the synthetic archive is made of: sentences of the statutes in
// legalqa-nl's corpus.jsonl (wetten.overheid.nl, no copyright: Auteurswet art. 11) and the
// laws' titles, in corpus order.
type pool struct {
	sentences []string
	titles    []string
}

// loadPool reads legalqa-nl's corpus.jsonl: every law's title, and every sentence of 8 to 40
// words of its body (headings and list markers dropped).
func loadPool(corpus string) (*pool, error) {
	f, err := os.Open(corpus)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p := &pool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var rec struct {
			Title string `json:"title"`
			Text  string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, err
		}
		if t := strings.TrimSpace(rec.Title); t != "" && utf8.RuneCountInString(t) < 90 {
			p.titles = append(p.titles, t)
		}
		for _, line := range strings.Split(rec.Text, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			line = strings.TrimLeft(line, "-0123456789. ")
			if len(line) > 3 && line[1] == '.' && line[2] == ' ' { // "a. " list item
				line = line[3:]
			}
			for _, s := range strings.SplitAfter(line, ". ") {
				s = strings.TrimSpace(s)
				if n := len(strings.Fields(s)); n >= 8 && n <= 40 {
					p.sentences = append(p.sentences, s)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(p.sentences) < 1000 || len(p.titles) < 10 {
		return nil, fmt.Errorf("%s: only %d sentences and %d titles", corpus, len(p.sentences), len(p.titles))
	}
	return p, nil
}

// block is one typeset block of a scanned document (hack/scan-fixtures/scan.py's typeset):
// kind title, heading, body or pagebreak.
type block struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

var parties = []string{"Lokaal Belang", "GroenLinks", "VVD", "CDA", "D66", "PvdA", "SP", "ChristenUnie",
	"Partij voor de Ondernemer", "Stadspartij"}

// resolution is document i of the archive at version v: a short council resolution headed
// Beslispunt / Motivering / Stemverhouding, 40 to 90 words of statute sentences, so that
// all-MiniLM-L6-v2 (about 2.5 tokens a Dutch word) embeds it as one chunk of 256 tokens. The
// same (seed, i, v) gives the same text; another v gives another text under the same name.
// Scanned documents (long) get an annex after a page break: 1 or 2 pages.
func (p *pool) resolution(seed uint64, i, v int, long bool) []block {
	r := rand.New(rand.NewPCG(seed, uint64(i)<<16|uint64(v)))
	year := 2010 + r.IntN(16)
	title := fmt.Sprintf("Raadsbesluit %d-%04d: %s", year, 1+r.IntN(9999), p.titles[r.IntN(len(p.titles))])
	// words draws sentences of at most 20 words until n words: about 2.5 WordPiece tokens a
	// Dutch word, so a resolution stays under 256 tokens.
	words := func(n int) string {
		var out []string
		for c := 0; c < n; {
			s := p.sentences[r.IntN(len(p.sentences))]
			if k := len(strings.Fields(s)); k <= 20 || n > 100 {
				out = append(out, s)
				c += k
			}
		}
		return strings.Join(out, " ")
	}
	voor := 12 + r.IntN(20)
	tegen := r.IntN(voor)
	stem := fmt.Sprintf("Aangenomen met %d stemmen voor en %d stemmen tegen. De fractie van %s stemde tegen.",
		voor, tegen, parties[r.IntN(len(parties))])
	bs := []block{{"title", title}, {"heading", "Beslispunt"}, {"body", words(10)},
		{"heading", "Motivering"}, {"body", words(25)}, {"heading", "Stemverhouding"}, {"body", stem}}
	if long && r.IntN(3) == 0 {
		bs = append(bs, block{"pagebreak", ""}, block{"heading", "Bijlage"}, block{"body", words(250)})
	}
	return bs
}

// markdown renders blocks as a Markdown document.
func markdown(bs []block) string {
	var b strings.Builder
	for _, x := range bs {
		switch x.Kind {
		case "title":
			b.WriteString("# " + x.Text + "\n\n")
		case "heading":
			b.WriteString("## " + x.Text + "\n\n")
		case "body":
			b.WriteString(x.Text + "\n\n")
		}
	}
	return b.String()
}

// archive is a generated document tree: names of documents (without extension) and their
// versions; scanned ones are PDFs.
type archive struct {
	seed    uint64
	pool    *pool
	dir     string
	version map[int]int
	scanned map[int]bool
	next    int
}

// docName is document i's file name without extension.
func docName(i int) string { return fmt.Sprintf("besluit-%06d", i) }

// newArchive generates n documents (version 1) under dir, a share scannedShare of them
// (chosen by the seed) as scanned PDFs rendered by scan_archive.py; it writes Markdown
// directly and lists the PDFs to render in dir/../scans-*.jsonl (see render).
func newArchive(p *pool, seed uint64, dir string, n int, scannedShare float64) (*archive, error) {
	a := &archive{seed: seed, pool: p, dir: dir, version: map[int]int{}, scanned: map[int]bool{}, next: n}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, 0x5ca1))
	for i := 0; i < n; i++ {
		a.version[i] = 1
		a.scanned[i] = r.Float64() < scannedShare
	}
	return a, nil
}

// write writes documents ids at their current version: Markdown now, PDFs into the returned
// render list.
func (a *archive) write(ids []int) ([]scanJob, error) {
	var jobs []scanJob
	for _, i := range ids {
		bs := a.pool.resolution(a.seed, i, a.version[i], a.scanned[i])
		if a.scanned[i] {
			jobs = append(jobs, scanJob{Path: filepath.Join(a.dir, docName(i)+".pdf"), Blocks: bs,
				Seed: int64(a.seed)*1_000_003 + int64(i)*101 + int64(a.version[i])})
			continue
		}
		if err := os.WriteFile(filepath.Join(a.dir, docName(i)+".md"), []byte(markdown(bs)), 0o644); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}

// remove deletes documents ids.
func (a *archive) remove(ids []int) error {
	for _, i := range ids {
		ext := ".md"
		if a.scanned[i] {
			ext = ".pdf"
		}
		if err := os.Remove(filepath.Join(a.dir, docName(i)+ext)); err != nil {
			return err
		}
		delete(a.version, i)
	}
	return nil
}

// ids returns the archive's live documents in order.
func (a *archive) ids() []int {
	out := make([]int, 0, len(a.version))
	for i := range a.version {
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// mutation is a seeded change of the archive: documents added (new ids), changed (a new
// version of a live one) and removed.
type mutation struct {
	Name    string `json:"name"`
	Added   []int  `json:"-"`
	Changed []int  `json:"-"`
	Removed []int  `json:"-"`
}

// plan draws a mutation of add new, change and remove live documents, deterministic from the
// archive's seed and name; changedScanned >= 0 fixes how many changed documents are scanned
// (the rest born-digital; nothing removed), for part 2.
func (a *archive) plan(name string, add, change, remove, changedScanned int) (mutation, error) {
	m := mutation{Name: name}
	live := a.ids()
	if change+remove > len(live) {
		return m, fmt.Errorf("mutation %s: %d changed and %d removed of %d documents", name, change, remove, len(live))
	}
	var h uint64
	for _, c := range name {
		h = h*131 + uint64(c)
	}
	r := rand.New(rand.NewPCG(a.seed, h))
	r.Shuffle(len(live), func(i, j int) { live[i], live[j] = live[j], live[i] })
	if changedScanned >= 0 {
		var sc, born []int
		for _, i := range live {
			if a.scanned[i] {
				sc = append(sc, i)
			} else {
				born = append(born, i)
			}
		}
		if changedScanned > len(sc) || change-changedScanned > len(born) {
			return m, fmt.Errorf("mutation %s: %d scanned of %d changed: not enough documents", name, changedScanned, change)
		}
		m.Changed = append(append([]int{}, sc[:changedScanned]...), born[:change-changedScanned]...)
	} else {
		m.Changed = append([]int{}, live[:change]...)
		m.Removed = append([]int{}, live[change:change+remove]...)
	}
	for k := 0; k < add; k++ {
		m.Added = append(m.Added, a.next+k)
	}
	sort.Ints(m.Changed)
	sort.Ints(m.Removed)
	return m, nil
}

// apply writes the mutation into the archive's folder (PDFs into the returned render list).
func (a *archive) apply(m mutation) ([]scanJob, error) {
	if err := a.remove(m.Removed); err != nil {
		return nil, err
	}
	for _, i := range m.Changed {
		a.version[i]++
	}
	for _, i := range m.Added {
		a.version[i] = 1
		a.scanned[i] = false // added documents arrive born-digital
	}
	if len(m.Added) > 0 {
		a.next = m.Added[len(m.Added)-1] + 1
	}
	return a.write(append(append([]int{}, m.Changed...), m.Added...))
}

// scanJob is one scanned PDF for scan_archive.py: the blocks typeset on A4 at 200 DPI,
// degraded like an office scan with Seed.
type scanJob struct {
	Path   string  `json:"path"`
	Blocks []block `json:"blocks"`
	Seed   int64   `json:"seed"`
}
