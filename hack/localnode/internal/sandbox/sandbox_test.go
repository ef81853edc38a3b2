package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary act as the shim, as the node binary does.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == ShimArg {
		os.Exit(RunShim(os.Args[2]))
	}
	os.Exit(m.Run())
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatal("the local node's sandbox needs root (mount namespaces); run the tests as root")
		}
		t.Skip("the local node's sandbox needs root (mount namespaces)")
	}
}

func run(t *testing.T, spec *Spec) (ExitStatus, string) {
	t.Helper()
	dir := t.TempDir()
	spec.RuntimeDir = filepath.Join(dir, "rt")
	spec.ExitFile = filepath.Join(dir, "exit.json")
	if err := os.Mkdir(spec.RuntimeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "log")
	_, done, err := Start(self, spec, filepath.Join(dir, "spec.json"), logPath)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("container did not end within 30 s")
	}
	st, err := ReadExit(spec.ExitFile)
	if err != nil {
		t.Fatalf("no exit status: %v", err)
	}
	logs, _ := os.ReadFile(logPath)
	return st, string(logs)
}

func TestContainerSeesVolumesImageAndLeavesHostAlone(t *testing.T) {
	needRoot(t)
	vol := t.TempDir()
	if err := os.WriteFile(filepath.Join(vol, "in.txt"), []byte("from-volume"), 0o644); err != nil {
		t.Fatal(err)
	}
	ro := t.TempDir()
	image := t.TempDir()
	if err := os.MkdirAll(filepath.Join(image, "usr/local/share/imgtest"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(image, "usr/local/share/imgtest/data"), []byte("from-image"), 0o644); err != nil {
		t.Fatal(err)
	}
	term := filepath.Join(t.TempDir(), "termination-log")
	if err := os.WriteFile(term, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	marker := "/etc/localnode-sandbox-test-" + filepath.Base(vol)
	script := strings.Join([]string{
		"cat /data/in.txt; echo",
		"cat /usr/local/share/imgtest/data; echo",
		"echo written > /data/out.txt",
		"echo leak > " + marker,
		"test -f " + marker + " && echo overlay-ok",
		"touch /ro/x 2>/dev/null || echo ro-ok",
		"echo \"host=$(hostname) env=$GREETING\"",
		"ls /usr/bin/env >/dev/null && echo hostroot-ok",
		"echo bye > /dev/termination-log",
		"exit 3",
	}, "\n")
	st, logs := run(t, &Spec{
		Image:                  image,
		Hostname:               "pod-a",
		Argv:                   []string{"sh", "-c", script},
		Env:                    []string{"GREETING=hello"},
		Mounts:                 []Mount{{Source: vol, Target: "/data"}, {Source: ro, Target: "/ro", ReadOnly: true}},
		TerminationMessageFile: term,
		TerminationMessagePath: "/dev/termination-log",
	})
	if st.ExitCode != 3 || st.Reason != "Error" {
		t.Fatalf("exit = %+v, want code 3 reason Error; logs:\n%s", st, logs)
	}
	if st.Usage == nil || st.Usage.MaxRSSKiB <= 0 {
		t.Errorf("exit usage = %+v, want the program's wait4 rusage (peak RSS > 0)", st.Usage)
	}
	for _, want := range []string{"from-volume", "from-image", "overlay-ok", "ro-ok", "host=pod-a env=hello", "hostroot-ok"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(vol, "out.txt")); string(b) != "written\n" {
		t.Errorf("volume write = %q, want %q", b, "written\n")
	}
	if _, err := os.Stat(marker); err == nil {
		os.Remove(marker)
		t.Errorf("a write to %s outside volumes reached the host", marker)
	}
	if b, _ := os.ReadFile(term); string(b) != "bye\n" {
		t.Errorf("termination message = %q, want %q", b, "bye\n")
	}
}

func TestMissingExecutableIsStartError(t *testing.T) {
	needRoot(t)
	st, _ := run(t, &Spec{Argv: []string{"no-such-program-xyz"}})
	if st.Reason != "StartError" || !strings.Contains(st.Message, "no-such-program-xyz") {
		t.Fatalf("exit = %+v, want StartError naming the program", st)
	}
}
