package provider

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ragops/ragops/hack/localnode/internal/sandbox"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
)

// logTarget finds the log file of a container run: the current (or last) one, or the one before
// with previous. running tells whether that run is still going.
func (p *Provider) logTarget(namespace, podName, container string, previous bool) (path string, run *podRun, attempt int, err error) {
	r := p.get(namespace, podName)
	if r == nil {
		return "", nil, 0, errdefs.NotFoundf("pod %s/%s is not known to the local node", namespace, podName)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cs := r.ctr(container, false)
	dir := r.ctrDir(container)
	if cs == nil {
		if cs = r.ctr(container, true); cs != nil {
			dir = r.ctrDir("init-" + container)
		}
	}
	if cs == nil {
		return "", nil, 0, errdefs.NotFoundf("container %q is not in pod %s/%s", container, namespace, podName)
	}
	attempt = cs.Attempts - 1
	if previous {
		attempt--
	}
	if attempt < 0 {
		if previous {
			return "", nil, 0, errdefs.InvalidInputf("previous terminated container %q in pod %q not found", container, podName)
		}
		return "", nil, 0, errdefs.InvalidInputf("container %q in pod %q is waiting to start", container, podName)
	}
	return filepath.Join(dir, strconv.Itoa(attempt)+".log"), r, attempt, nil
}

// running reports whether the given run of container still runs.
func (r *podRun) running(container string, attempt int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, cs := range r.st.Containers {
		if cs.Name == container && cs.Attempts-1 == attempt && cs.Running {
			return true
		}
	}
	return false
}

// GetContainerLogs returns a container's output (stdout and stderr interleaved as written).
// Supported options: Previous, Tail, LimitBytes, Follow (until the run ends or the client goes);
// Timestamps and Since are ignored (the log has no timestamps).
func (p *Provider) GetContainerLogs(ctx context.Context, namespace, podName, containerName string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	path, r, attempt, err := p.logTarget(namespace, podName, containerName, opts.Previous)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, errdefs.NotFoundf("no log for container %q: %v", containerName, err)
	}
	var start int64
	if opts.Tail > 0 {
		start, err = tailOffset(f, opts.Tail)
		if err != nil {
			f.Close()
			return nil, err
		}
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	var rd io.Reader = f
	if opts.Follow {
		rd = &follower{ctx: ctx, f: f, live: func() bool { return r.running(containerName, attempt) }}
	}
	if opts.LimitBytes > 0 {
		rd = io.LimitReader(rd, int64(opts.LimitBytes))
	}
	return readCloser{Reader: rd, Closer: f}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// follower reads a growing file until the run ends and everything is read, or ctx ends.
type follower struct {
	ctx  context.Context
	f    *os.File
	live func() bool
}

func (fl *follower) Read(b []byte) (int, error) {
	for {
		n, err := fl.f.Read(b)
		if n > 0 || (err != nil && err != io.EOF) {
			return n, err
		}
		if !fl.live() {
			// One more read: the run may have written its last bytes just before ending.
			n, err = fl.f.Read(b)
			if n > 0 {
				return n, nil
			}
			return 0, io.EOF
		}
		select {
		case <-fl.ctx.Done():
			return 0, io.EOF
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// tailOffset returns the offset where the last n lines of f begin.
func tailOffset(f *os.File, n int) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	const chunk = 64 << 10
	pos, newlines := size, 0
	buf := make([]byte, chunk)
	for pos > 0 {
		readLen := int64(chunk)
		if pos < readLen {
			readLen = pos
		}
		pos -= readLen
		if _, err := f.ReadAt(buf[:readLen], pos); err != nil && err != io.EOF {
			return 0, err
		}
		for i := readLen - 1; i >= 0; i-- {
			if buf[i] != '\n' || pos+i == size-1 {
				continue
			}
			newlines++
			if newlines == n {
				return pos + i + 1, nil
			}
		}
	}
	return 0, nil
}

// tailFile returns at most the last lines lines and maxBytes bytes of the file at path.
func tailFile(path string, lines, maxBytes int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	off, err := tailOffset(f, lines)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.NewSectionReader(f, off, 1<<30))
	if err != nil {
		return nil, err
	}
	if len(b) > maxBytes {
		b = b[len(b)-maxBytes:]
	}
	return b, nil
}

// RunInContainer runs cmd in the container's root (chrooted into the running program's root, with
// the container's environment and working folder), copying stdin, stdout and stderr. TTYs are
// not supported.
func (p *Provider) RunInContainer(ctx context.Context, namespace, podName, containerName string, cmd []string, attach api.AttachIO) error {
	if len(cmd) == 0 {
		return errdefs.InvalidInput("exec needs a command")
	}
	r := p.get(namespace, podName)
	if r == nil {
		return errdefs.NotFoundf("pod %s/%s is not known to the local node", namespace, podName)
	}
	r.mu.Lock()
	cs := r.ctr(containerName, false)
	var h sandbox.Handle
	var attempt int
	if cs != nil && cs.Running {
		h, attempt = cs.Handle, cs.Attempts-1
	}
	r.mu.Unlock()
	if h.PID == 0 {
		return errdefs.InvalidInputf("container %q of pod %s/%s is not running", containerName, namespace, podName)
	}
	var spec sandbox.Spec
	if err := sandbox.ReadJSON(filepath.Join(r.ctrDir(containerName), fmt.Sprintf("spec-%d.json", attempt)), &spec); err != nil {
		return err
	}
	// The shim is a Go program: any of its threads may have forked the program.
	var children []byte
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", h.PID))
	for _, task := range tasks {
		if b, err := os.ReadFile(task); err == nil {
			children = append(children, b...)
			children = append(children, ' ')
		}
	}
	if len(bytes.Fields(children)) == 0 {
		return errdefs.InvalidInputf("container %q has no running program", containerName)
	}
	root := fmt.Sprintf("/proc/%s/root", bytes.Fields(children)[0])
	argv0, err := sandbox.LookPath(root, cmd, spec.Env)
	if err != nil {
		return errdefs.InvalidInput(err.Error())
	}
	wd := spec.WorkingDir
	if wd == "" {
		wd = "/"
	}
	c := exec.CommandContext(ctx, argv0, cmd[1:]...)
	c.Args[0] = cmd[0]
	c.Env, c.Dir = spec.Env, wd
	c.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
	if spec.UID != nil {
		c.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(*spec.UID), Gid: uint32(*spec.UID)}
		if spec.GID != nil {
			c.SysProcAttr.Credential.Gid = uint32(*spec.GID)
		}
	}
	c.Stdin = attach.Stdin()
	if out := attach.Stdout(); out != nil {
		c.Stdout = out
		defer out.Close()
	}
	if e := attach.Stderr(); e != nil {
		c.Stderr = e
		defer e.Close()
	}
	if err := c.Run(); err != nil {
		return fmt.Errorf("exec %s: %w", strings.Join(cmd, " "), err)
	}
	return nil
}
