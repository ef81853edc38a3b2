package packaging

import (
	"bufio"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	"github.com/ragops/ragops/embedder/ort"
)

// instruction is one Dockerfile instruction with its continuation lines joined.
type instruction struct {
	Cmd  string // upper case: FROM, ARG, ENV, RUN, COPY, ...
	Args string
	Line int
}

// stage is one FROM ... [AS name] section.
type stage struct {
	Name, Base string
	Ins        []instruction
}

// dockerfile is a parsed Dockerfile: global ARGs (before the first FROM) and stages.
type dockerfile struct {
	GlobalArgs map[string]string
	Stages     []stage
}

// parseDockerfile reads the instructions of a Dockerfile (comments dropped, backslash
// continuations joined; the default escape character only).
func parseDockerfile(t *testing.T, p string) *dockerfile {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	df := &dockerfile{GlobalArgs: map[string]string{}}
	var buf strings.Builder
	start, n := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && buf.Len() == 0) {
			continue
		}
		if buf.Len() == 0 {
			start = n
		}
		if strings.HasSuffix(line, "\\") {
			buf.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		buf.WriteString(line)
		full := strings.TrimSpace(buf.String())
		buf.Reset()
		cmd, args, _ := strings.Cut(full, " ")
		in := instruction{Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args), Line: start}
		if in.Cmd == "FROM" {
			fields := strings.Fields(in.Args)
			var s stage
			for i := 0; i < len(fields); i++ {
				switch {
				case strings.HasPrefix(fields[i], "--"):
				case strings.EqualFold(fields[i], "AS") && i+1 < len(fields):
					s.Name = fields[i+1]
					i++
				default:
					s.Base = fields[i]
				}
			}
			df.Stages = append(df.Stages, s)
			continue
		}
		if len(df.Stages) == 0 {
			if in.Cmd == "ARG" {
				k, v, _ := strings.Cut(in.Args, "=")
				df.GlobalArgs[k] = v
			}
			continue
		}
		s := &df.Stages[len(df.Stages)-1]
		s.Ins = append(s.Ins, in)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return df
}

// args returns the stage's ARG values (global defaults for redeclared names, then the
// stage's own defaults).
func (df *dockerfile) args(s stage) map[string]string {
	out := map[string]string{}
	for _, in := range s.Ins {
		if in.Cmd != "ARG" {
			continue
		}
		k, v, ok := strings.Cut(in.Args, "=")
		if !ok {
			v = df.GlobalArgs[k]
		}
		out[k] = v
	}
	return out
}

// env returns the stage's ENV values (KEY=value form).
func (s stage) env() map[string]string {
	out := map[string]string{}
	for _, in := range s.Ins {
		if in.Cmd != "ENV" {
			continue
		}
		for _, kv := range strings.Fields(in.Args) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				out[k] = v
			}
		}
	}
	return out
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.Ins {
		if in.Cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

var (
	digestRE = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)
	// exactTagRE: a tag that starts with a full major.minor.patch version.
	exactTagRE = regexp.MustCompile(`^v?\d+\.\d+\.\d+([.-][0-9A-Za-z.-]+)?$`)
)

// pinned reports whether an image reference is pinned: by digest, or by a tag that names
// an exact major.minor.patch version. It returns why not otherwise.
func pinned(ref string) (bool, string) {
	if strings.Contains(ref, "$") {
		return false, "uses a variable"
	}
	if digestRE.MatchString(ref) {
		return true, ""
	}
	if strings.Contains(ref, "@") {
		return false, "has a malformed digest"
	}
	last := ref[strings.LastIndex(ref, "/")+1:]
	_, tag, ok := strings.Cut(last, ":")
	if !ok {
		return false, "has no tag (means latest)"
	}
	if !exactTagRE.MatchString(tag) {
		return false, fmt.Sprintf("tag %q is not an exact major.minor.patch version", tag)
	}
	return true, ""
}

func TestPinnedRejectsFloatingReferences(t *testing.T) {
	for ref, want := range map[string]bool{
		"golang:1.26.8-bookworm":                                 true,
		"nvidia/cuda:12.9.1-cudnn-runtime-ubuntu24.04":           true,
		"python:3.12.12-slim-bookworm":                           true,
		"gcr.io/distroless/cc@sha256:" + strings.Repeat("a", 64): true,
		"golang":                      false,
		"golang:latest":               false,
		"golang:1.26":                 false,
		"golang:1-bookworm":           false,
		"golang:${GO_VERSION}":        false,
		"localhost:5000/ragops":       false,
		"localhost:5000/ragops:1.2.3": true,
		"golang@sha256:abc":           false,
	} {
		if got, why := pinned(ref); got != want {
			t.Errorf("pinned(%q) = %v (%s), want %v", ref, got, why, want)
		}
	}
}

func TestDockerfileBaseImagesArePinned(t *testing.T) {
	df := parseDockerfile(t, repoPath("Dockerfile"))
	if len(df.Stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a multi-stage build", len(df.Stages))
	}
	stages := map[string]bool{}
	for _, s := range df.Stages {
		if stages[s.Base] {
			t.Logf("stage %q builds on stage %q", s.Name, s.Base)
		} else if ok, why := pinned(s.Base); !ok {
			t.Errorf("FROM %s: not pinned: %s", s.Base, why)
		} else if !digestRE.MatchString(s.Base) {
			t.Logf("FROM %s: pinned by exact version tag, not by digest", s.Base)
		}
		if s.Name != "" {
			stages[s.Name] = true
		}
	}
}

// runtimeStage returns the last stage (the image that ships).
func runtimeStage(df *dockerfile) stage { return df.Stages[len(df.Stages)-1] }

func stageNamed(t *testing.T, df *dockerfile, name string) stage {
	t.Helper()
	for _, s := range df.Stages {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("Dockerfile has no stage %q", name)
	return stage{}
}

// copyFrom returns the destination of the runtime stage's COPY --from=<stage>.
func copyFrom(t *testing.T, s stage, from string) (src, dst string) {
	t.Helper()
	for _, in := range s.all("COPY") {
		f := strings.Fields(in.Args)
		if len(f) == 3 && f[0] == "--from="+from {
			return f[1], f[2]
		}
	}
	t.Fatalf("runtime stage has no COPY --from=%s <src> <dst>", from)
	return "", ""
}

// shellVar reads NAME=value from a shell script.
func shellVar(t *testing.T, script, name string) string {
	t.Helper()
	for _, l := range readLines(t, script) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+"="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	t.Fatalf("%s sets no %s", script, name)
	return ""
}

func TestDockerfileOnnxRuntimeMatchesProvisioning(t *testing.T) {
	df := parseDockerfile(t, repoPath("Dockerfile"))
	ortStage := stageNamed(t, df, "onnxruntime")
	args := df.args(ortStage)
	script := repoPath("hack", "provision-onnxruntime.sh")
	for arg, v := range map[string]string{"ORT_VERSION": "GPU_VERSION", "ORT_WHEEL": "GPU_WHEEL", "ORT_WHEEL_SHA256": "GPU_WHEEL_SHA256"} {
		if got, want := args[arg], shellVar(t, script, v); got != want {
			t.Errorf("Dockerfile ARG %s=%q, hack/provision-onnxruntime.sh %s=%q", arg, got, v, want)
		}
	}
	if !strings.Contains(args["ORT_WHEEL"], "onnxruntime_gpu-"+args["ORT_VERSION"]+"-") {
		t.Errorf("wheel %s is not onnxruntime-gpu %s (the CUDA execution provider)", args["ORT_WHEEL"], args["ORT_VERSION"])
	}
	rt := runtimeStage(df)
	lib, ok := rt.env()[ort.EnvLibrary]
	if !ok {
		t.Fatalf("runtime stage sets no ENV %s", ort.EnvLibrary)
	}
	if lib != ort.DefaultLibrary {
		t.Errorf("%s=%s, but the binary's default (embedder/ort.DefaultLibrary) is %s", ort.EnvLibrary, lib, ort.DefaultLibrary)
	}
	src, dst := copyFrom(t, rt, "onnxruntime")
	if path.Clean(dst) != path.Dir(lib) {
		t.Errorf("COPY --from=onnxruntime %s %s puts the library outside %s's folder %s", src, dst, ort.EnvLibrary, path.Dir(lib))
	}
	run := strings.Join(func() (r []string) {
		for _, in := range ortStage.all("RUN") {
			r = append(r, in.Args)
		}
		return
	}(), "\n")
	for _, f := range []string{"libonnxruntime.so.${ORT_VERSION}\" /out/" + path.Base(lib), "libonnxruntime_providers_shared.so", "libonnxruntime_providers_cuda.so", "sha256sum -c"} {
		if !strings.Contains(run, f) {
			t.Errorf("onnxruntime stage does not handle %s", f)
		}
	}
}

// TestDockerfileBuildsWithCgoOnGlibc checks what onnxruntime_go requires: it calls dlopen
// through cgo, so the binary must be built with CGO_ENABLED=1 and run on a glibc base.
func TestDockerfileBuildsWithCgoOnGlibc(t *testing.T) {
	out, err := goList("-f", "{{if .CgoFiles}}{{.ImportPath}}{{end}}")
	if err != nil {
		t.Fatal(err)
	}
	cgoPkgs := strings.Fields(string(out))
	needCgo := false
	for _, p := range cgoPkgs {
		if p == "github.com/yalue/onnxruntime_go" {
			needCgo = true
		}
	}
	if !needCgo {
		t.Fatalf("github.com/yalue/onnxruntime_go has no cgo files any more (%v): revisit CGO_ENABLED in the Dockerfile", cgoPkgs)
	}
	df := parseDockerfile(t, repoPath("Dockerfile"))
	build := stageNamed(t, df, "build")
	var goBuild string
	for _, in := range build.all("RUN") {
		if strings.Contains(in.Args, "go build") {
			goBuild = in.Args
		}
	}
	if !strings.Contains(goBuild, "CGO_ENABLED=1") {
		t.Errorf("build stage's go build does not set CGO_ENABLED=1: %q", goBuild)
	}
	if !strings.Contains(goBuild, "-o /out/ragops") {
		t.Errorf("build stage's go build does not write /out/ragops: %q", goBuild)
	}
	if src, _ := copyFrom(t, runtimeStage(df), "build"); src != "/out/ragops" {
		t.Errorf("runtime stage copies %s from the build stage, want /out/ragops", src)
	}
	base := runtimeStage(df).Base
	for _, bad := range []string{"scratch", "alpine", "distroless/static", "busybox"} {
		if strings.Contains(base, bad) {
			t.Errorf("runtime base %s has no glibc; a cgo binary cannot run there", base)
		}
	}
	// The build stage's Go must be at least go.mod's go line.
	gomod := readLines(t, repoPath("go.mod"))
	for _, l := range gomod {
		if v, ok := strings.CutPrefix(l, "go "); ok {
			m := regexp.MustCompile(`golang:(\d+\.\d+)\.(\d+)`).FindStringSubmatch(build.Base)
			if m == nil || !strings.HasPrefix(v, m[1]) {
				t.Errorf("build stage %s does not match go.mod's go %s", build.Base, v)
			}
		}
	}
}

func TestDockerfileRunsNonRootWithWritableTmpOnly(t *testing.T) {
	rt := runtimeStage(parseDockerfile(t, repoPath("Dockerfile")))
	users := rt.all("USER")
	if len(users) == 0 {
		t.Fatal("runtime stage has no USER: the image would run as root")
	}
	u := users[len(users)-1].Args
	if u != "65532:65532" {
		t.Errorf("USER %s, want 65532:65532 (numeric, so runAsNonRoot can verify it)", u)
	}
	env := rt.env()
	if env["TMPDIR"] != "/tmp" || env["HOME"] != "/tmp" {
		t.Errorf("TMPDIR=%q HOME=%q, want /tmp for both (the only writable path)", env["TMPDIR"], env["HOME"])
	}
	ep := rt.all("ENTRYPOINT")
	if len(ep) != 1 {
		t.Fatalf("runtime stage has %d ENTRYPOINTs", len(ep))
	}
	var argv []string
	if err := json.Unmarshal([]byte(ep[0].Args), &argv); err != nil || len(argv) == 0 {
		t.Fatalf("ENTRYPOINT %s is not an exec-form JSON array: %v", ep[0].Args, err)
	}
	if _, dst := copyFrom(t, rt, "build"); argv[0] != dst {
		t.Errorf("ENTRYPOINT %s, but the binary is copied to %s", argv[0], dst)
	}
}

// TestDockerignoreKeepsBuildInputs checks with Docker's own matcher that every file the
// binary is built from reaches the build context, and that the big local folders do not.
func TestDockerignoreKeepsBuildInputs(t *testing.T) {
	f, err := os.Open(repoPath(".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	patterns, err := ignorefile.ReadAll(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	out, err := goList("-json=Dir,Module,GoFiles,CgoFiles,CFiles,HFiles,EmbedFiles")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	files := []string{"go.mod", "go.sum", "main.go"}
	for dec.More() {
		var p struct {
			Dir                                           string
			Module                                        *struct{ Path string }
			GoFiles, CgoFiles, CFiles, HFiles, EmbedFiles []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.Module == nil || p.Module.Path != "github.com/ragops/ragops" {
			continue
		}
		rel, err := filepath.Rel(root, p.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, group := range [][]string{p.GoFiles, p.CgoFiles, p.CFiles, p.HFiles, p.EmbedFiles} {
			for _, f := range group {
				files = append(files, filepath.ToSlash(filepath.Join(rel, f)))
			}
		}
	}
	if len(files) < 20 {
		t.Fatalf("only %d build inputs found: %v", len(files), files)
	}
	for _, f := range files {
		if excluded, err := pm.MatchesOrParentMatches(f); err != nil || excluded {
			t.Errorf(".dockerignore excludes build input %s (err %v)", f, err)
		}
	}
	for _, f := range []string{"bin/weaviate-server", ".cache/models/x/model.onnx", ".git/HEAD", "controllers/suite_test.go"} {
		if excluded, _ := pm.MatchesOrParentMatches(f); !excluded {
			t.Errorf(".dockerignore lets %s into the build context", f)
		}
	}
}

// goList runs `go list -deps <flags> .` at the module root (the packages of the ragops binary).
func goList(flags ...string) ([]byte, error) {
	cmd := exec.Command("go", append(append([]string{"list", "-deps"}, flags...), ".")...)
	cmd.Dir = root
	return cmd.Output()
}

// fakeRoot lays out the runtime image's files under a temporary folder: the ragops binary
// where the Dockerfile copies it and the ONNX Runtime library where RAGOPS_ONNXRUNTIME_LIB
// points (the provisioned CPU build stands in for the CUDA one; same C API).
func fakeRoot(t *testing.T) (rootDir, binary, libPath string, env map[string]string) {
	t.Helper()
	cpuLib := os.Getenv(ort.EnvLibrary)
	if cpuLib == "" {
		need(t, "set "+ort.EnvLibrary+": run hack/provision-onnxruntime.sh and export the path it prints")
	}
	rt := runtimeStage(parseDockerfile(t, repoPath("Dockerfile")))
	env = rt.env()
	_, binDst := copyFrom(t, rt, "build")
	rootDir = t.TempDir()
	libPath = filepath.Join(rootDir, env[ort.EnvLibrary])
	binary = filepath.Join(rootDir, binDst)
	for src, dst := range map[string]string{cpuLib: libPath, ragopsBinary(t): binary} {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(rootDir, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	return rootDir, binary, libPath, env
}

func TestBinaryIsCgoAndGlibcLinked(t *testing.T) {
	bin := ragopsBinary(t)
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "1" || settings["-trimpath"] != "true" {
		t.Errorf("build settings CGO_ENABLED=%q -trimpath=%q, want 1 and true", settings["CGO_ENABLED"], settings["-trimpath"])
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	interp := ""
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatal(err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	if !strings.HasPrefix(path.Base(interp), "ld-linux") {
		t.Errorf("ELF interpreter %q, want glibc's ld-linux (the runtime image must be glibc-based)", interp)
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		if strings.Contains(l, "onnxruntime") {
			t.Errorf("binary links %s at start-up; it must dlopen the runtime by path", l)
		}
	}
}
