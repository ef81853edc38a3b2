package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines is the most lines README.md may have: it is a front door, and measured
// results live in docs/results.md.
const readmeMaxLines = 300

// TestReadmeFrontDoor checks README.md as a newcomer's front door: its "Two commands" section
// holds exactly the two set-up commands `make demo` and `make test` and no other shell block
// in it runs a make target, it has at most readmeMaxLines lines, and no relative Markdown link
// in README.md, BENCHMARKS.md or docs/ points at a missing file or heading, and its
// architecture section's package table names every top-level package folder (and
// internal/workload, internal/reconcile).
func TestReadmeFrontDoor(t *testing.T) {
	readme, err := os.ReadFile(repoPath("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)

	t.Run("TwoCommands", func(t *testing.T) {
		section := markdownSection(text, "Two commands")
		if section == "" {
			t.Fatal(`README.md has no "## Two commands" section`)
		}
		got := shellCommands(section)
		if want := []string{"make demo", "make test"}; !reflect.DeepEqual(got, want) {
			t.Errorf("the Two commands section's shell blocks run %q, want %q", got, want)
		}
		for _, cmd := range shellCommands(text) {
			if strings.HasPrefix(cmd, "make ") && cmd != "make demo" && cmd != "make test" {
				t.Errorf("README.md's shell blocks run %q: the set-up commands are make demo and make test", cmd)
			}
		}
	})

	t.Run("Length", func(t *testing.T) {
		if n := strings.Count(text, "\n"); n > readmeMaxLines {
			t.Errorf("README.md has %d lines, at most %d: move details into docs/ and link them", n, readmeMaxLines)
		}
	})

	t.Run("PackageTable", func(t *testing.T) {
		table := markdownSection(text, "Architecture")
		if table == "" {
			t.Fatal(`README.md has no "## Architecture" section`)
		}
		cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
		cmd.Dir = repoPath()
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		dirs := map[string]bool{}
		for _, d := range strings.Fields(string(out)) {
			rel, err := filepath.Rel(repoPath(), d)
			if err != nil || rel == "." {
				continue
			}
			parts := strings.Split(filepath.ToSlash(rel), "/")
			top := parts[0]
			if top == "internal" && len(parts) > 1 && (parts[1] == "workload" || parts[1] == "reconcile") {
				top += "/" + parts[1]
			}
			dirs[top] = true
		}
		if len(dirs) < 15 {
			t.Fatalf("go list gave %d top-level package folders: %v", len(dirs), dirs)
		}
		for d := range dirs {
			if !strings.Contains(table, "`"+d+"/`") && !strings.Contains(table, "`"+d+"`") && !strings.Contains(table, "`"+d+"/") {
				t.Errorf("README.md's package table does not name %s", d)
			}
		}
	})

	t.Run("Links", func(t *testing.T) {
		files := []string{repoPath("README.md"), repoPath("BENCHMARKS.md")}
		err := filepath.WalkDir(repoPath("docs"), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
				files = append(files, path)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range files {
			n += len(relativeLinks(readFile(t, f)))
			for _, msg := range brokenLinks(f) {
				t.Error(msg)
			}
		}
		if n < 20 {
			t.Fatalf("found only %d relative links in %d files: the extractor no longer matches", n, len(files))
		}
	})
}

// TestReadmeFrontDoorHelpers pins the helpers TestReadmeFrontDoor relies on, so that a
// broken link, a third set-up command or a missing heading cannot pass unseen.
func TestReadmeFrontDoorHelpers(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []string
	}{
		{"file and anchor", "see [a](docs/a.md) and [b](b.md#x).", []string{"docs/a.md", "b.md#x"}},
		{"image and title", `![chart](img/x.svg) [t](t.md "title")`, []string{"img/x.svg", "t.md"}},
		{"external and same-page anchors are not relative", "[w](https://x.dev/a) [m](mailto:a@b.c) [h](#top) [p](http://x)", nil},
		{"inline code is not a link", "Pattern: `^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`.", nil},
		{"fenced code is not a link", "```sh\necho [x](nope.md)\n```\n[y](yes.md)", []string{"yes.md"}},
		{"parent folders", "[b](../BENCHMARKS.md#ocr)", []string{"../BENCHMARKS.md#ocr"}},
	} {
		if got := relativeLinks(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: relativeLinks(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}

	for in, want := range map[string]string{
		"Previewing a strategy: `ragops chunk`":                      "previewing-a-strategy-ragops-chunk",
		"spec.minSize on SciFact (e5-small-v2 fixed-507)":            "specminsize-on-scifact-e5-small-v2-fixed-507",
		"4. Reading the gate's result":                               "4-reading-the-gates-result",
		"legalqa-nl: Dutch law, structure-aware chunking":            "legalqa-nl-dutch-law-structure-aware-chunking",
		"Financiële gevolgen":                                        "financiële-gevolgen",
		"[Linked](x.md) heading":                                     "linked-heading",
		"OCR (scanned documents)":                                    "ocr-scanned-documents",
		"Superseded (revision phase)":                                "superseded-revision-phase",
		"MTEB SciFact reproduction (end-to-end check of each model)": "mteb-scifact-reproduction-end-to-end-check-of-each-model",
	} {
		if got := headingSlug(in); got != want {
			t.Errorf("headingSlug(%q) = %q, want %q", in, got, want)
		}
	}

	doc := "# Title\n\n## Two commands\n\n```sh\nmake demo\nmake test  # all\n# a comment\nmake lint\n```\n\n" +
		"```\n## not a heading\n```\n\n## Title\n"
	cmds := shellCommands(markdownSection(doc, "Two commands"))
	if want := []string{"make demo", "make test", "make lint"}; !reflect.DeepEqual(cmds, want) {
		t.Errorf("shellCommands = %q, want %q", cmds, want)
	}
	anchors := headingAnchors(doc)
	if want := map[string]bool{"title": true, "two-commands": true, "title-1": true}; !reflect.DeepEqual(anchors, want) {
		t.Errorf("headingAnchors = %v, want %v", anchors, want)
	}

	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("there.md", "# There\n\n## A section\n")
	write("a.md", "[ok](there.md) [ok](there.md#a-section) [ok](#local) [bad](missing.md)\n"+
		"[bad](there.md#no-such-heading) [bad](#nowhere) [ext](https://example.com/missing.md)\n\n## Local\n")
	got := brokenLinks(filepath.Join(dir, "a.md"))
	if len(got) != 3 || !strings.Contains(got[0], "missing.md") ||
		!strings.Contains(got[1], "#no-such-heading") || !strings.Contains(got[2], "#nowhere") {
		t.Errorf("brokenLinks = %q, want missing.md, there.md#no-such-heading and #nowhere", got)
	}
}

var (
	fenceRE      = regexp.MustCompile("^\\s*(```|~~~)")
	inlineCodeRE = regexp.MustCompile("`[^`\n]*`")
	linkRE       = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	headingRE    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	headLinkRE   = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// proseLines returns a Markdown text's lines outside fenced code blocks.
func proseLines(text string) []string {
	var out []string
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if fenceRE.MatchString(line) {
			inFence = !inFence
			continue
		}
		if !inFence {
			out = append(out, line)
		}
	}
	return out
}

// allLinks returns every Markdown link and image target outside code, as written.
func allLinks(text string) []string {
	var out []string
	for _, line := range proseLines(text) {
		for _, m := range linkRE.FindAllStringSubmatch(inlineCodeRE.ReplaceAllString(line, ""), -1) {
			out = append(out, m[1])
		}
	}
	return out
}

// relativeLinks returns the link targets that name a file of the repository: every target
// but http(s), mailto and same-page anchors.
func relativeLinks(text string) []string {
	var out []string
	for _, l := range allLinks(text) {
		if strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") ||
			strings.HasPrefix(l, "mailto:") || strings.HasPrefix(l, "#") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// headingSlug is the anchor GitHub gives a heading: lower case, links reduced to their text,
// punctuation dropped, each space a hyphen.
func headingSlug(heading string) string {
	heading = headLinkRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// headingAnchors returns the anchors of a Markdown text's headings, a repeated one numbered
// -1, -2, ... as GitHub numbers them.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(text) {
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := headingSlug(m[2])
		a := slug
		if n := seen[slug]; n > 0 {
			a = slug + "-" + strconv.Itoa(n)
		}
		seen[slug]++
		anchors[a] = true
	}
	return anchors
}

// brokenLinks returns one message for each link of a Markdown file whose file (resolved from
// the file's folder) does not exist, or whose anchor is no heading of the Markdown file it
// names, same-page anchors included.
func brokenLinks(file string) []string {
	b, err := os.ReadFile(file)
	if err != nil {
		return []string{err.Error()}
	}
	text := string(b)
	rel, _ := filepath.Rel(root, file)
	var out []string
	for _, l := range allLinks(text) {
		if strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "mailto:") {
			continue
		}
		path, anchor, _ := strings.Cut(l, "#")
		target := file
		if path != "" {
			target = filepath.Join(filepath.Dir(file), filepath.FromSlash(path))
			if _, err := os.Stat(target); err != nil {
				out = append(out, rel+": link ("+l+") names a missing file")
				continue
			}
		}
		if anchor == "" || !strings.HasSuffix(target, ".md") {
			continue
		}
		tb, err := os.ReadFile(target)
		if err != nil {
			out = append(out, rel+": link ("+l+"): "+err.Error())
			continue
		}
		if !headingAnchors(string(tb))[anchor] {
			out = append(out, rel+": link ("+l+") names #"+anchor+", a heading its file does not have")
		}
	}
	return out
}

// markdownSection returns the body of the "## title" section of a Markdown text, up to the
// next heading of level 1 or 2; empty when there is none.
func markdownSection(text, title string) string {
	var b strings.Builder
	in := false
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if fenceRE.MatchString(line) {
			inFence = !inFence
		}
		if !inFence && (strings.HasPrefix(line, "# ") || strings.HasPrefix(line, "## ")) {
			if in {
				break
			}
			in = strings.TrimSpace(strings.TrimPrefix(line, "##")) == title
			continue
		}
		if in {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// shellCommands returns the commands of a Markdown text's shell blocks (fences tagged sh,
// bash, shell or console): each non-empty line with its trailing comment and spaces removed,
// comment lines left out.
func shellCommands(text string) []string {
	var out []string
	inShell, inFence := false, false
	for _, line := range strings.Split(text, "\n") {
		if m := fenceRE.FindStringIndex(line); m != nil {
			if !inFence {
				lang := strings.TrimSpace(line[m[1]:])
				inShell = lang == "sh" || lang == "bash" || lang == "shell" || lang == "console"
			}
			inFence = !inFence
			continue
		}
		if !inFence || !inShell {
			continue
		}
		cmd, _, _ := strings.Cut(line, "#")
		if cmd = strings.TrimSpace(cmd); cmd != "" {
			out = append(out, cmd)
		}
	}
	return out
}

// readFile reads a file as a string.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
