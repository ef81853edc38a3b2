package packaging

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTroubleshootingCoversEveryConditionReason checks that docs/troubleshooting.md has a
// section (a "### <Reason>" heading) for every condition reason the controllers set: the
// Reason* constants of controllers/*.go and internal/conditions.
func TestTroubleshootingCoversEveryConditionReason(t *testing.T) {
	doc, err := os.ReadFile(repoPath("docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^### (\S+)\s*$`).FindAllStringSubmatch(string(doc), -1) {
		headings[m[1]] = true
	}
	files, _ := filepath.Glob(repoPath("controllers", "*.go"))
	files = append(files, repoPath("internal", "conditions", "conditions.go"))
	reasonRE := regexp.MustCompile(`(?m)^\s*Reason\w+\s*=\s*"(\w+)"`)
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range reasonRE.FindAllStringSubmatch(string(src), -1) {
			n++
			if !headings[m[1]] {
				t.Errorf("docs/troubleshooting.md has no section for reason %s (%s)", m[1], filepath.Base(f))
			}
		}
	}
	if n < 20 {
		t.Fatalf("found only %d Reason constants: the pattern no longer matches the controllers", n)
	}
}
