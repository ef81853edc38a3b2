package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	securejoin "github.com/cyphar/filepath-securejoin"
	"golang.org/x/sys/unix"
)

// RunShim is the shim's main: it reads the Spec at specPath, builds the container's root, runs the
// program, waits for it and writes the ExitStatus. It returns the process exit code for the shim.
// It must run in its own mount namespace (Start arranges that).
func RunShim(specPath string) int {
	var spec Spec
	if err := ReadJSON(specPath, &spec); err != nil {
		fmt.Fprintf(os.Stderr, "localnode shim: %v\n", err)
		return 2
	}
	started := time.Now()
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "localnode: cannot start container: %v\n", err)
		st := ExitStatus{ExitCode: 128, Reason: "StartError", Message: err.Error(), StartedAt: started, FinishedAt: time.Now()}
		if werr := WriteJSON(spec.ExitFile, st); werr != nil {
			fmt.Fprintf(os.Stderr, "localnode shim: %v\n", werr)
		}
		return 128
	}
	root, err := buildRoot(&spec)
	if err != nil {
		return fail(err)
	}
	argv0, err := LookPath(root, spec.Argv, spec.Env)
	if err != nil {
		return fail(err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return fail(err)
	}
	wd := spec.WorkingDir
	if wd == "" {
		wd = "/"
	}
	// The working folder is created when missing, as container runtimes do.
	if hostWD, err := securejoin.SecureJoin(root, wd); err == nil {
		_ = os.MkdirAll(hostWD, 0o755)
	}
	cmd := &exec.Cmd{
		Path:   argv0,
		Args:   spec.Argv,
		Env:    spec.Env,
		Dir:    wd,
		Stdin:  devnull,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:    root,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	if spec.UID != nil {
		cred := &syscall.Credential{Uid: uint32(*spec.UID), Gid: uint32(*spec.UID)}
		if spec.GID != nil {
			cred.Gid = uint32(*spec.GID)
		}
		for _, g := range spec.Groups {
			cred.Groups = append(cred.Groups, uint32(g))
		}
		cmd.SysProcAttr.Credential = cred
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	started = time.Now()
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("run %q: %w", spec.Argv[0], err))
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	st := ExitStatus{Reason: "Completed", StartedAt: started, FinishedAt: time.Now(), Usage: usage(cmd.ProcessState)}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return fail(err)
		}
		ws := ee.Sys().(syscall.WaitStatus)
		st.Reason = "Error"
		if ws.Signaled() {
			st.Signal = int(ws.Signal())
			st.ExitCode = 128 + st.Signal
		} else {
			st.ExitCode = ws.ExitStatus()
		}
	}
	if err := WriteJSON(spec.ExitFile, st); err != nil {
		fmt.Fprintf(os.Stderr, "localnode shim: %v\n", err)
		return 2
	}
	return 0
}

// usage reads the program's CPU time and peak RSS from its wait4 rusage (nil without one).
func usage(ps *os.ProcessState) *Usage {
	if ps == nil {
		return nil
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return nil
	}
	sec := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return &Usage{UserSeconds: sec(ru.Utime), SystemSeconds: sec(ru.Stime), MaxRSSKiB: ru.Maxrss}
}

// LookPath resolves argv[0] inside root (a host folder) the way execvp would, returning the path inside the
// container.
func LookPath(root string, argv, env []string) (string, error) {
	if len(argv) == 0 || argv[0] == "" {
		return "", errors.New("no command: the pod gives none and the image has no entrypoint (--image-entrypoint)")
	}
	name := argv[0]
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := DefaultPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		host, err := securejoin.SecureJoin(root, p)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(host); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("executable %q not found in PATH %q of the container", name, path)
}

// DefaultPath is the PATH a container gets when its environment has none (the one Docker uses).
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// buildRoot assembles the container's root under spec.RuntimeDir and returns its host path.
func buildRoot(spec *Spec) (string, error) {
	if spec.Hostname != "" {
		if err := unix.Sethostname([]byte(spec.Hostname)); err != nil {
			return "", fmt.Errorf("set hostname: %w", err)
		}
	}
	rt := spec.RuntimeDir
	if err := unix.Mount("tmpfs", rt, "tmpfs", 0, "mode=0700"); err != nil {
		return "", fmt.Errorf("mount tmpfs on %s: %w", rt, err)
	}
	upper, work, root := filepath.Join(rt, "upper"), filepath.Join(rt, "work"), filepath.Join(rt, "root")
	for _, d := range []string{upper, work, root} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", err
		}
	}
	opts := fmt.Sprintf("lowerdir=/,upperdir=%s,workdir=%s", upper, work)
	if err := unix.Mount("overlay", root, "overlay", 0, opts); err != nil {
		return "", fmt.Errorf("mount overlay of / on %s: %w", root, err)
	}
	if err := bindHostMounts(root, rt); err != nil {
		return "", err
	}
	if spec.Image != "" && filepath.Clean(spec.Image) != "/" {
		if err := mergeImage(root, spec.Image, "/"); err != nil {
			return "", fmt.Errorf("merge image folder %s: %w", spec.Image, err)
		}
	}
	if err := unix.Mount("proc", filepath.Join(root, "proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return "", fmt.Errorf("mount /proc: %w", err)
	}
	if err := bind("/sys", filepath.Join(root, "sys"), true, true); err != nil {
		return "", fmt.Errorf("bind /sys: %w", err)
	}
	if err := buildDev(filepath.Join(root, "dev"), spec.GPUDevices); err != nil {
		return "", fmt.Errorf("build /dev: %w", err)
	}
	mounts := append([]Mount(nil), spec.Mounts...)
	if spec.TerminationMessageFile != "" && spec.TerminationMessagePath != "" {
		mounts = append(mounts, Mount{Source: spec.TerminationMessageFile, Target: spec.TerminationMessagePath})
	}
	sort.SliceStable(mounts, func(i, j int) bool {
		return strings.Count(filepath.Clean(mounts[i].Target), "/") < strings.Count(filepath.Clean(mounts[j].Target), "/")
	})
	for _, m := range mounts {
		if !filepath.IsAbs(m.Target) {
			return "", fmt.Errorf("mount path %q is not absolute", m.Target)
		}
		target, err := securejoin.SecureJoin(root, m.Target)
		if err != nil {
			return "", fmt.Errorf("mount path %q: %w", m.Target, err)
		}
		if err := mountpoint(m.Source, target); err != nil {
			return "", fmt.Errorf("mount path %q: %w", m.Target, err)
		}
		if err := bind(m.Source, target, true, m.ReadOnly); err != nil {
			return "", fmt.Errorf("bind %s at %q: %w", m.Source, m.Target, err)
		}
	}
	return root, nil
}

// mountpoint creates target as a folder or an empty file, like source.
func mountpoint(source, target string) error {
	fi, err := os.Stat(source)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return os.MkdirAll(target, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	if _, err := os.Lstat(target); err == nil {
		return nil
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// bind bind-mounts source on target (recursively when rec), then remounts it read-only when ro.
func bind(source, target string, rec, ro bool) error {
	flags := uintptr(unix.MS_BIND)
	if rec {
		flags |= unix.MS_REC
	}
	if err := unix.Mount(source, target, "", flags, ""); err != nil {
		return err
	}
	if ro {
		if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("remount read-only: %w", err)
		}
	}
	return nil
}

// bindHostMounts binds the host's other mounts (those the overlay of "/" does not show) read-only
// into root, except /proc, /sys and /dev (rebuilt) and anything under skip (the runtime folder).
func bindHostMounts(root, skip string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMountPath(fields[4])
		if p == "/" || under(p, "/proc") || under(p, "/sys") || under(p, "/dev") || under(p, skip) || under(skip, p) {
			continue
		}
		points = append(points, p)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) < len(points[j]) })
	seen := map[string]bool{}
	for _, p := range points {
		if seen[p] {
			continue
		}
		seen[p] = true
		target := filepath.Join(root, p)
		if _, err := os.Lstat(target); err != nil {
			if err := mountpoint(p, target); err != nil {
				continue // the mount point cannot be recreated (unreadable source): leave it out
			}
		}
		if err := bind(p, target, false, true); err != nil {
			return fmt.Errorf("bind host mount %s: %w", p, err)
		}
	}
	return nil
}

func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// unescapeMountPath decodes the octal escapes (\040 for a space) of /proc/self/mountinfo.
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mergeImage binds the image folder's entries into root: an entry the root lacks (or that is not a
// folder on both sides) is bound as a whole; a folder present on both sides is descended into.
func mergeImage(root, image, rel string) error {
	entries, err := os.ReadDir(filepath.Join(image, rel))
	if err != nil {
		return err
	}
	for _, e := range entries {
		r := filepath.Join(rel, e.Name())
		src := filepath.Join(image, r)
		target, err := securejoin.SecureJoin(root, r)
		if err != nil {
			return err
		}
		srcInfo, err := os.Stat(src)
		if err != nil {
			return fmt.Errorf("image entry %s: %w", r, err)
		}
		if ti, err := os.Stat(target); err == nil && ti.IsDir() && srcInfo.IsDir() {
			if err := mergeImage(root, image, r); err != nil {
				return err
			}
			continue
		}
		if err := replaceWithMountpoint(src, target, srcInfo.IsDir()); err != nil {
			return fmt.Errorf("image entry %s: %w", r, err)
		}
		if err := bind(src, target, true, false); err != nil {
			return fmt.Errorf("bind image entry %s: %w", r, err)
		}
	}
	return nil
}

// replaceWithMountpoint makes target (in the overlay, so only the tmpfs upper layer changes) a
// folder or a file matching the source's kind.
func replaceWithMountpoint(src, target string, dir bool) error {
	if fi, err := os.Lstat(target); err == nil {
		if fi.IsDir() == dir && fi.Mode()&os.ModeSymlink == 0 {
			return nil
		}
		if err := os.RemoveAll(target); err != nil {
			return err
		}
	}
	return mountpoint(src, target)
}

// buildDev mounts a private tmpfs on dev with the usual device nodes bound from the host.
func buildDev(dev string, gpus bool) error {
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID, "mode=0755,size=65536k"); err != nil {
		return err
	}
	nodes := []string{"null", "zero", "full", "random", "urandom", "tty"}
	if gpus {
		matches, _ := filepath.Glob("/dev/nvidia*")
		for _, m := range matches {
			nodes = append(nodes, strings.TrimPrefix(m, "/dev/"))
		}
	}
	for _, n := range nodes {
		src := filepath.Join("/dev", n)
		fi, err := os.Stat(src)
		if err != nil {
			continue
		}
		target := filepath.Join(dev, n)
		if fi.IsDir() {
			err = os.MkdirAll(target, 0o755)
		} else {
			var f *os.File
			if f, err = os.Create(target); err == nil {
				err = f.Close()
			}
		}
		if err != nil {
			return err
		}
		if err := bind(src, target, fi.IsDir(), false); err != nil {
			return fmt.Errorf("bind %s: %w", src, err)
		}
	}
	links := map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "ptmx": "pts/ptmx"}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	shm := filepath.Join(dev, "shm")
	if err := os.Mkdir(shm, 0o1777); err != nil {
		return err
	}
	if err := unix.Mount("shm", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=65536k"); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	pts := filepath.Join(dev, "pts")
	if err := os.Mkdir(pts, 0o755); err != nil {
		return err
	}
	// A private devpts instance is optional: without it programs simply get no terminals.
	_ = unix.Mount("devpts", pts, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
	return nil
}
