package preview_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragops/ragops/preview"
)

// writeFile writes data to name in a temporary folder and returns its path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runPreview runs `ragops chunk` in-process (preview.Run) with the strategy spec lines.
func runPreview(t *testing.T, spec string, c preview.Config) (stdout, stderr string, err error) {
	t.Helper()
	c.Strategy = writeFile(t, "strategy.yaml", []byte(head+spec))
	var out, errOut bytes.Buffer
	err = preview.Run(context.Background(), &out, &errOut, c)
	return out.String(), errOut.String(), err
}

// TestHeaderCountsTheStrategysHeadings: a plain text file has no outline from its reader,
// but a Heading strategy with numbered sections cuts it at three headings; the header says
// both numbers where it used to say "0 headings" alone.
func TestHeaderCountsTheStrategysHeadings(t *testing.T) {
	txt := writeFile(t, "notitie.txt", []byte("1 Inleiding\n\nDe gemeente wil het plein vernieuwen.\n\n"+
		"2 Doel\n\nMeer ruimte voor fietsers.\n\n2.1 Stalling\n\nEen stalling voor 2.400 fietsen.\n"))
	out, _, err := runPreview(t, "  type: Heading\n  unit: Characters\n  size: 60\n  heading:\n    numberedSections: true\n", preview.Config{Files: []string{txt}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "no pages, 0 headings (strategy s cuts at 3)\n") {
		t.Errorf("header does not count the strategy's headings:\n%s", out)
	}
	if !strings.Contains(out, "1 Doel > 2.1 Stalling") && !strings.Contains(out, "2 Doel > 2.1 Stalling") {
		t.Errorf("no chunk under the numbered subsection:\n%s", out)
	}
	// A strategy that cuts at the reader's outline says just that.
	md := writeFile(t, "a.md", []byte("# A\n\nx\n\n## B\n\ny\n"))
	out, _, err = runPreview(t, "  type: Heading\n  unit: Characters\n  size: 60\n  heading: {}\n", preview.Config{Files: []string{md}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "no pages, 2 headings\n") {
		t.Errorf("header of a Markdown file:\n%s", out)
	}
}

// TestHeaderNamesWindows1252: a text file that is not valid UTF-8 is read as Windows-1252,
// as a build reads it, and the header says so.
func TestHeaderNamesWindows1252(t *testing.T) {
	txt := writeFile(t, "oud.txt", []byte("Financi\xeble gevolgen: \x80 38.000 per jaar.\n"))
	out, _, err := runPreview(t, "  type: Sentence\n  unit: Characters\n  size: 60\n", preview.Config{Files: []string{txt}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "0 headings, decoded from windows-1252 (the file is not valid UTF-8)\n") || !strings.Contains(out, "Financiële") {
		t.Errorf("no word of the re-decoding:\n%s", out)
	}
	utf := writeFile(t, "nieuw.txt", []byte("Financiële gevolgen.\n"))
	if out, _, _ = runPreview(t, "  type: Sentence\n  unit: Characters\n  size: 60\n", preview.Config{Files: []string{utf}}); strings.Contains(out, "decoded from") {
		t.Errorf("a UTF-8 file is said to be re-decoded:\n%s", out)
	}
}

// TestSkipMessageSaysTheReasonOnce: an empty file is skipped as a build skips it; the line
// names the file and the reason once.
func TestSkipMessageSaysTheReasonOnce(t *testing.T) {
	empty := writeFile(t, "leeg.txt", []byte(" \n\t\n"))
	_, stderr, err := runPreview(t, "  type: Sentence\n  unit: Characters\n  size: 60\n", preview.Config{Files: []string{empty}})
	if err == nil || err.Error() != "documents skipped: 1" {
		t.Errorf("err = %v, want documents skipped: 1", err)
	}
	line := strings.TrimSpace(stderr)
	if !strings.HasPrefix(line, empty+": skipped (Empty)") || strings.Count(line, "Empty") != 1 || strings.Contains(line, "skip document") {
		t.Errorf("skip line %q, want the reason once", line)
	}
}

// TestPathPrefixCounted: with heading.pathPrefix each chunk is embedded after its heading
// path line; the JSON carries that line and the size counts it, and the table says so.
func TestPathPrefixCounted(t *testing.T) {
	md := writeFile(t, "wet.md", []byte("# Vreemdelingenwet\n\n## Artikel 20\n\nOnze Minister is bevoegd de aanvraag in te willigen.\n"))
	spec := "  type: Heading\n  unit: Characters\n  size: 200\n  heading:\n    pathPrefix: true\n"
	out, _, err := runPreview(t, spec, preview.Config{Files: []string{md}, Output: preview.OutputJSON})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var c preview.JSONChunk
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(c.Text, "Onze Minister") {
			continue
		}
		found = true
		if c.PathPrefix != "Vreemdelingenwet > Artikel 20\n" {
			t.Errorf("pathPrefix %q", c.PathPrefix)
		}
		if want := len([]rune(c.PathPrefix + c.Text)); c.Size != want {
			t.Errorf("size %d, the embedded text has %d characters", c.Size, want)
		}
	}
	if !found {
		t.Fatalf("no chunk holds the article's text:\n%s", out)
	}
	out, _, err = runPreview(t, spec, preview.Config{Files: []string{md}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `sizes include the heading path line embedded before each chunk (e.g. "Vreemdelingenwet\n")`) &&
		!strings.Contains(out, `sizes include the heading path line embedded before each chunk (e.g. "Vreemdelingenwet > Artikel 20\n")`) {
		t.Errorf("the table does not show the path line:\n%s", out)
	}
}
