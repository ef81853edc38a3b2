// Package sandbox runs one container of the local node as a local process with its own view of
// the file system, without a container runtime.
//
// The node starts a shim (the node binary re-executed with ShimArg) in new mount and UTS
// namespaces. The shim builds the container's root and then runs the container's program in it:
//
//   - a tmpfs on Spec.RuntimeDir holds the upper and work folders of an overlay whose lower layer
//     is the host's "/", so the program sees the host's files, and everything it writes outside its
//     volumes lands in the tmpfs and disappears with it: the host stays untouched;
//   - the image folder is merged into that root by bind mounts (an entry missing on the host is
//     bound as a whole, an existing folder is descended into; the image folder cannot be an extra
//     overlay lower layer because it lies under "/", which gives ELOOP);
//   - other host mounts (for example /etc/resolv.conf) are bound read-only, /proc is a new proc
//     mount, /sys a read-only bind, /dev a private tmpfs with the usual device nodes (and
//     /dev/nvidia* when Spec.GPUDevices);
//   - each volume is bound at its mount path (read-only when asked), the termination message file
//     at its path;
//   - the program runs chrooted there, with the container's environment, working folder and user.
//
// The shim stays the program's parent: it forwards SIGTERM/SIGINT/SIGHUP and writes an ExitStatus
// to Spec.ExitFile when the program ends, so a restarted node can still learn how a container it
// started before ended. The shim and the program form their own session (process group), so the
// node's own exit leaves them running; KillGroup ends them.
//
// Everything here needs root (mount namespaces); Linux only.
package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ShimArg is the first argument that makes the node binary act as the shim: `localnode ShimArg
// SPECFILE`. The node's main must call RunShim when it sees it, before anything else.
const ShimArg = "__localnode_container"

// Mount is one bind mount into the container's root.
type Mount struct {
	// Source is the host path (folder or file).
	Source string `json:"source"`
	// Target is the absolute path inside the container.
	Target string `json:"target"`
	// ReadOnly remounts the bind read-only.
	ReadOnly bool `json:"readOnly,omitempty"`
}

// Spec describes one run of one container. Paths without "in the container" are host paths.
type Spec struct {
	// Image is the image's root folder, merged over the host root; "/" (or "") means the host root
	// alone.
	Image string `json:"image"`
	// RuntimeDir is an existing empty host folder where the shim mounts its tmpfs (only inside its
	// own mount namespace, so the host sees an empty folder).
	RuntimeDir string `json:"runtimeDir"`
	// Hostname is set in the container's UTS namespace (the pod name).
	Hostname string `json:"hostname"`
	// Argv is the program and its arguments; Argv[0] without a slash is looked up in the PATH of
	// Env inside the container's root.
	Argv []string `json:"argv"`
	// Env is the environment, KEY=VALUE.
	Env []string `json:"env"`
	// WorkingDir is the working folder in the container ("/" when empty).
	WorkingDir string `json:"workingDir,omitempty"`
	// UID and GID, when set, are the user and group the program runs as.
	UID *int64 `json:"uid,omitempty"`
	GID *int64 `json:"gid,omitempty"`
	// Groups are supplementary groups (with UID set).
	Groups []int64 `json:"groups,omitempty"`
	// Mounts are the volumes, bound in order after sorting by target depth.
	Mounts []Mount `json:"mounts,omitempty"`
	// TerminationMessageFile is a host file bound at TerminationMessagePath in the container.
	TerminationMessageFile string `json:"terminationMessageFile,omitempty"`
	TerminationMessagePath string `json:"terminationMessagePath,omitempty"`
	// GPUDevices binds the host's /dev/nvidia* device nodes into the container's /dev.
	GPUDevices bool `json:"gpuDevices,omitempty"`
	// ExitFile is where the shim writes the ExitStatus (JSON) when the program ends.
	ExitFile string `json:"exitFile"`
}

// ExitStatus is how a container run ended, written by the shim.
type ExitStatus struct {
	// ExitCode is the program's exit status, or 128+N when signal N killed it.
	ExitCode int `json:"exitCode"`
	// Signal is the signal that killed the program, 0 when it exited.
	Signal int `json:"signal,omitempty"`
	// Reason is "Completed", "Error", or "StartError" when the program never ran.
	Reason string `json:"reason"`
	// Message explains a StartError.
	Message    string    `json:"message,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt"`
	// Usage is the program's resource use from wait4 (its own and its reaped children's);
	// nil when it never ran.
	Usage *Usage `json:"usage,omitempty"`
}

// Usage is a finished program's CPU time and peak resident set, as wait4 reports them.
type Usage struct {
	UserSeconds   float64 `json:"userSeconds"`
	SystemSeconds float64 `json:"systemSeconds"`
	MaxRSSKiB     int64   `json:"maxRssKiB"`
}

// WriteJSON writes v to path atomically (a temporary file renamed over path).
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// ReadJSON decodes the JSON file at path into v.
func ReadJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// ReadExit returns the ExitStatus the shim wrote to path; os.ErrNotExist when it wrote none.
func ReadExit(path string) (ExitStatus, error) {
	var st ExitStatus
	err := ReadJSON(path, &st)
	return st, err
}
