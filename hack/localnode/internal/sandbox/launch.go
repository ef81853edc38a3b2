package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Handle identifies a running shim across node restarts: its pid and the kernel's start time of
// that pid (field 22 of /proc/PID/stat, in clock ticks), which tells a reused pid apart.
type Handle struct {
	PID       int    `json:"pid"`
	StartTick uint64 `json:"startTick"`
}

// Start writes spec to specPath and starts the shim for it: the node binary (self, normally
// /proc/self/exe) re-executed with ShimArg in new mount and UTS namespaces and its own session,
// with stdout and stderr appended to logPath. done is closed when the shim exits (the node reaps
// it). Errors: the spec cannot be written, the log cannot be opened, or the shim cannot start
// (for example without root: unshare is refused).
func Start(self string, spec *Spec, specPath, logPath string) (Handle, <-chan struct{}, error) {
	if err := WriteJSON(specPath, spec); err != nil {
		return Handle{}, nil, err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return Handle{}, nil, fmt.Errorf("open container log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(self, ShimArg, specPath)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = []string{"PATH=" + DefaultPath}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setsid:       true,
		Unshareflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS,
	}
	if err := cmd.Start(); err != nil {
		return Handle{}, nil, fmt.Errorf("start container shim: %w", err)
	}
	h := Handle{PID: cmd.Process.Pid}
	h.StartTick, _ = startTick(h.PID)
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	return h, done, nil
}

// Alive reports whether the shim of h still runs (a zombie counts as ended).
func (h Handle) Alive() bool {
	if h.PID <= 0 {
		return false
	}
	tick, err := startTick(h.PID)
	if err != nil || tick != h.StartTick {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", h.PID))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// Watch returns a channel closed once the shim of h (not a child of this process, for example
// one started before a node restart) has ended; it polls every interval.
func (h Handle) Watch(interval time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for h.Alive() {
			time.Sleep(interval)
		}
		close(done)
	}()
	return done
}

// Signal sends sig to the shim, which forwards SIGTERM, SIGINT and SIGHUP to the program.
func (h Handle) Signal(sig syscall.Signal) error {
	if !h.Alive() {
		return nil
	}
	return syscall.Kill(h.PID, sig)
}

// KillGroup sends SIGKILL to the shim's whole session (the shim and the program it runs).
func (h Handle) KillGroup() error {
	if !h.Alive() {
		return nil
	}
	err := syscall.Kill(-h.PID, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// startTick reads the start time of pid in clock ticks since boot.
func startTick(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	// Fields after the command: state is field 3, starttime is field 22.
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}
