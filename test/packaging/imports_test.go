package packaging

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/ragops/ragops"

// importRule forbids the packages under from (a path relative to the module, "" for all) to
// import any package under the prefixes in deny, except those under allow.
type importRule struct {
	from        string
	deny, allow []string
	why         string
}

// layering is the one-way import order of the project's packages: cmd wires flags to
// packages and is the only one that reaches the reconcilers; the store, the chunkers and the
// readers do not know the API types; readers know nothing above them.
var layering = []importRule{
	{from: "", deny: []string{"cmd"}, allow: []string{"", "hack"}, why: "only the binary's main (and build-time tools in hack/) import cmd"},
	{from: "", deny: []string{"controllers"}, allow: []string{"cmd", "hack", "test"}, why: "controllers hold the reconcilers; only cmd wires them"},
	{from: "vectorstore", deny: []string{"api"}, why: "the store speaks Weaviate, not the CRDs (callers convert)"},
	{from: "chunkers", deny: []string{"api"}, allow: []string{"chunkers/registry"}, why: "chunkers take options; the registry alone maps a ChunkingStrategy spec to them"},
	{from: "reader", deny: []string{"api", "chunkers", "embedder", "vectorstore", "pipeline", "controllers", "internal/plan"}, why: "readers turn files into text and know nothing above them"},
	{from: "embedder", deny: []string{"api", "vectorstore", "pipeline", "controllers", "internal/plan"}, why: "the embedder turns text into vectors"},
	{from: "internal/plan", deny: []string{"pipeline", "controllers", "cmd", "serving"}, why: "plans are the Job boundary both sides import"},
	{from: "internal/workload", deny: []string{"controllers", "cmd", "pipeline", "serving", "experiment"}, why: "workloads are pure Job builders the reconcilers call"},
	{from: "internal/reconcile", deny: []string{"controllers", "cmd", "pipeline", "serving", "experiment", "internal/workload"}, why: "the step kit knows results and conditions, not what any reconciler does"},
}

// under reports whether pkg (relative to the module) is prefix or inside it; "" matches only
// the module's root package when exact, else everything.
func under(pkg, prefix string, exact bool) bool {
	if prefix == "" {
		return !exact || pkg == ""
	}
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

// violations returns "pkg imports dep: why" for each import that breaks a rule. imports maps
// each package (relative to the module) to its imports (relative; others are dropped).
func violations(imports map[string][]string, rules []importRule) []string {
	var out []string
	for pkg, deps := range imports {
		for _, r := range rules {
			if !under(pkg, r.from, false) {
				continue
			}
			allowed := false
			for _, a := range r.allow {
				if under(pkg, a, a == "") {
					allowed = true
				}
			}
			if allowed {
				continue
			}
			for _, d := range deps {
				for _, deny := range r.deny {
					if under(d, deny, false) {
						out = append(out, pkg+" imports "+d+": "+r.why)
					}
				}
			}
		}
	}
	return out
}

// TestPackagesImportOneWay fails when a package imports one above it (go list over the
// module, non-test imports).
func TestPackagesImportOneWay(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Dir = repoPath()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	imports := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		pkg, ok := relative(f[0])
		if !ok {
			continue
		}
		imports[pkg] = nil
		for _, d := range f[1:] {
			if rel, ok := relative(d); ok {
				imports[pkg] = append(imports[pkg], rel)
			}
		}
	}
	if len(imports) < 40 || imports["controllers"] == nil {
		t.Fatalf("go list gave %d packages (controllers importing %v): the listing is not the module's", len(imports), imports["controllers"])
	}
	for _, v := range violations(imports, layering) {
		t.Error(v)
	}
}

// The Job builders are pure: internal/workload imports no API client (client-go,
// controller-runtime), so every workload kind is tested without an API server.
func TestWorkloadsNeedNoAPIClient(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, "./internal/workload")
	cmd.Dir = repoPath()
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := strings.Fields(string(raw))
	if len(imports) < 5 {
		t.Fatalf("go list gave the imports %v: not internal/workload's", imports)
	}
	for _, d := range imports {
		if strings.HasPrefix(d, "k8s.io/client-go") || strings.HasPrefix(d, "sigs.k8s.io/controller-runtime") {
			t.Errorf("internal/workload imports %s", d)
		}
	}
}

// relative returns path relative to the module ("" for its root), false for other modules.
func relative(path string) (string, bool) {
	if path == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// The rules catch what they are for: a reader importing a chunker, the store importing the
// API, a library importing the reconcilers; cmd and the registry are allowed theirs.
func TestImportRulesFlagWhatTheyForbid(t *testing.T) {
	imports := map[string][]string{
		"reader/pdf":        {"reader", "chunkers"},
		"vectorstore":       {"api/v1alpha1"},
		"preview":           {"controllers", "chunkers/registry"},
		"chunkers/registry": {"api/v1alpha1", "chunkers"},
		"chunkers/docchunk": {"chunkers"},
		"cmd":               {"controllers", "api/v1alpha1"},
		"":                  {"cmd"},
		"report":            {"cmd"},
	}
	got := map[string]bool{}
	for _, v := range violations(imports, layering) {
		got[strings.SplitN(v, ":", 2)[0]] = true
	}
	want := []string{"reader/pdf imports chunkers", "vectorstore imports api/v1alpha1", "preview imports controllers", "report imports cmd"}
	for _, w := range want {
		if !got[w] {
			t.Errorf("not flagged: %s", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("flagged %v, want exactly %v", got, want)
	}
}
