package cmd

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// cgroupRoot is where the container's cgroup files are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// softMemoryLimit returns the Go runtime's soft memory limit (bytes) for a process whose
// container has a memory limit: 90% of it, so that the garbage collector runs harder as the
// heap nears the limit instead of letting it double before the kernel kills the process (the
// GOMEMLIMIT guidance of the Go GC guide, as automemlimit applies it). The limit is read from
// cgroup v2's memory.max, else cgroup v1's memory/memory.limit_in_bytes, under root. ok is
// false when GOMEMLIMIT is set (the runtime already honours it) or no limit is found
// ("max", a v1 value of 2^60 bytes or more, no file).
func softMemoryLimit(getenv func(string) string, root string) (limit int64, ok bool) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	for _, f := range []string{"memory.max", filepath.Join("memory", "memory.limit_in_bytes")} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<60 {
			return 0, false // "max": no limit
		}
		return n / 10 * 9, true
	}
	return 0, false
}
