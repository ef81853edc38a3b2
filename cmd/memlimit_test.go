package cmd

import (
	"os"
	"path/filepath"
	"testing"
)

// Issue 56: the manager's soft memory limit follows its container's memory limit (cgroup v2
// or v1) unless GOMEMLIMIT is set.
func TestSoftMemoryLimitFollowsTheContainerLimit(t *testing.T) {
	write := func(t *testing.T, rel, content string) string {
		root := t.TempDir()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return root
	}
	none := func(string) string { return "" }
	cases := []struct {
		name   string
		root   string
		getenv func(string) string
		want   int64
		ok     bool
	}{
		{"v2 512Mi", write(t, "memory.max", "536870912\n"), none, 536870912 / 10 * 9, true},
		{"v2 unlimited", write(t, "memory.max", "max\n"), none, 0, false},
		{"v1 256Mi", write(t, "memory/memory.limit_in_bytes", "268435456\n"), none, 268435456 / 10 * 9, true},
		{"v1 unlimited", write(t, "memory/memory.limit_in_bytes", "9223372036854771712\n"), none, 0, false},
		{"no cgroup files", t.TempDir(), none, 0, false},
		{"GOMEMLIMIT set", write(t, "memory.max", "536870912\n"), func(k string) string {
			if k == "GOMEMLIMIT" {
				return "300MiB"
			}
			return ""
		}, 0, false},
	}
	for _, c := range cases {
		got, ok := softMemoryLimit(c.getenv, c.root)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: softMemoryLimit = %d, %v; want %d, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
