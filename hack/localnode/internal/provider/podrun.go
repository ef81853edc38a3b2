package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/ragops/ragops/hack/localnode/internal/podenv"
	"github.com/ragops/ragops/hack/localnode/internal/sandbox"
	"github.com/ragops/ragops/hack/localnode/internal/volumes"
	"github.com/virtual-kubelet/virtual-kubelet/log"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podState is what the node keeps on disk per pod.
type podState struct {
	Pod          *corev1.Pod               `json:"pod"`
	Volumes      map[string]volumes.Volume `json:"volumes,omitempty"`
	VolumesReady bool                      `json:"volumesReady"`
	InitDone     bool                      `json:"initDone"`
	Containers   []*ctrState               `json:"containers"`
	// IP is the pod's own loopback address (package podip), kept across node restarts.
	IP string `json:"ip,omitempty"`
}

// ctrState is one container's runs.
type ctrState struct {
	Name string `json:"name"`
	Init bool   `json:"init,omitempty"`
	// Attempts is the number of runs started; the current run's files carry Attempts-1.
	Attempts int  `json:"attempts"`
	Running  bool `json:"running,omitempty"`
	// Ready is the readiness probe's verdict on the current run (containers without one are
	// ready while they run).
	Ready   bool           `json:"ready,omitempty"`
	Handle  sandbox.Handle `json:"handle"`
	Started time.Time      `json:"started"`
	// Term is how the latest run ended (nil while it runs or before the first run); Last is the
	// run before it (the status's lastState).
	Term    *termination                  `json:"term,omitempty"`
	Last    *termination                  `json:"last,omitempty"`
	Waiting *corev1.ContainerStateWaiting `json:"waiting,omitempty"`
	Image   string                        `json:"image,omitempty"`
}

type termination struct {
	ExitCode    int32     `json:"exitCode"`
	Signal      int32     `json:"signal,omitempty"`
	Reason      string    `json:"reason"`
	Message     string    `json:"message,omitempty"`
	StartedAt   time.Time `json:"startedAt"`
	FinishedAt  time.Time `json:"finishedAt"`
	ContainerID string    `json:"containerID"`
}

func (t *termination) state() *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{
		ExitCode: t.ExitCode, Signal: t.Signal, Reason: t.Reason, Message: t.Message,
		StartedAt: metav1.NewTime(t.StartedAt), FinishedAt: metav1.NewTime(t.FinishedAt), ContainerID: t.ContainerID,
	}
}

// podRun is one pod on the node.
type podRun struct {
	p   *Provider
	dir string

	mu      sync.Mutex
	hostsMu sync.Mutex // serialises writes of the hosts file
	st      podState
	exits   map[string]<-chan struct{} // shims this process started, by container name

	cancel context.CancelFunc
	done   chan struct{}
	grace  time.Duration
}

func newPodRun(p *Provider, pod *corev1.Pod) (*podRun, error) {
	if pod.UID == "" {
		return nil, fmt.Errorf("pod %s/%s has no UID", pod.Namespace, pod.Name)
	}
	r := &podRun{p: p, dir: filepath.Join(p.cfg.StateDir, "pods", string(pod.UID)), exits: map[string]<-chan struct{}{}}
	pod = pod.DeepCopy()
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, err
	}
	ip, err := p.ips.Allocate(r.dir)
	if err != nil {
		os.RemoveAll(r.dir)
		return nil, err
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, StartTime: &now, HostIP: podenv.NodeIP, PodIP: ip,
		HostIPs: []corev1.HostIP{{IP: podenv.NodeIP}}, PodIPs: []corev1.PodIP{{IP: ip}}}
	r.st.Pod = pod
	r.st.IP = ip
	for _, c := range pod.Spec.InitContainers {
		r.st.Containers = append(r.st.Containers, &ctrState{Name: c.Name, Init: true, Image: c.Image})
	}
	for _, c := range pod.Spec.Containers {
		r.st.Containers = append(r.st.Containers, &ctrState{Name: c.Name, Image: c.Image})
	}
	r.st.InitDone = len(pod.Spec.InitContainers) == 0
	r.refreshStatus()
	r.save()
	return r, nil
}

func (r *podRun) uid() types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.Pod.UID
}

func (r *podRun) key() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return key(r.st.Pod.Namespace, r.st.Pod.Name)
}

func (r *podRun) snapshot() *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.st.Pod.DeepCopy()
}

func (r *podRun) terminal() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	ph := r.st.Pod.Status.Phase
	return ph == corev1.PodSucceeded || ph == corev1.PodFailed
}

// save writes the state file; failures are logged (the node keeps running from memory).
func (r *podRun) save() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := os.Stat(r.dir); err != nil {
		return // removed by terminate
	}
	if err := sandbox.WriteJSON(filepath.Join(r.dir, "state.json"), &r.st); err != nil {
		log.L.WithError(err).Warn("cannot save pod state")
	}
}

// changed refreshes the status, saves and publishes it.
func (r *podRun) changed() {
	r.refreshStatus()
	r.save()
	r.p.publish(r)
}

func (r *podRun) ctr(name string, init bool) *ctrState {
	for _, c := range r.st.Containers {
		if c.Name == name && c.Init == init {
			return c
		}
	}
	return nil
}

func (r *podRun) ctrDir(name string) string { return filepath.Join(r.dir, "containers", name) }

// start runs the pod in the background.
func (r *podRun) start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		r.run(ctx)
	}()
}

// stop cancels the run: running containers get SIGTERM, then SIGKILL after grace.
func (r *podRun) stop(grace time.Duration) {
	if r.cancel == nil {
		return
	}
	r.mu.Lock()
	r.grace = grace
	r.mu.Unlock()
	r.cancel()
	<-r.done
}

func (r *podRun) run(ctx context.Context) {
	lg := log.G(ctx).WithField("pod", r.key())
	backoff := r.p.cfg.RestartBackoff
	for {
		r.mu.Lock()
		ready := r.st.VolumesReady
		pod := r.st.Pod
		r.mu.Unlock()
		if ready {
			break
		}
		vols, err := r.p.vols.Prepare(ctx, pod, filepath.Join(r.dir, "volumes"))
		if err == nil {
			err = r.prepareServiceAccount(pod)
		}
		if err != nil {
			lg.WithError(err).Warn("volumes not ready")
			r.setWaiting("", "ContainerCreating", err.Error())
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(backoff*2, 10*time.Second)
			continue
		}
		r.mu.Lock()
		r.st.Volumes, r.st.VolumesReady = vols, true
		r.mu.Unlock()
		r.changed()
	}
	pod := r.snapshot()
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if !r.runContainer(ctx, pod, c, true) {
			return
		}
		r.mu.Lock()
		failed := r.ctr(c.Name, true).Term.ExitCode != 0
		r.mu.Unlock()
		if failed {
			r.finish(corev1.PodFailed, "init container "+c.Name+" failed")
			return
		}
	}
	r.mu.Lock()
	r.st.InitDone = true
	r.mu.Unlock()
	r.changed()
	var wg sync.WaitGroup
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		wg.Go(func() { r.runContainer(ctx, pod, c, false) })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	phase := corev1.PodSucceeded
	r.mu.Lock()
	for _, cs := range r.st.Containers {
		if !cs.Init && (cs.Term == nil || cs.Term.ExitCode != 0) {
			phase = corev1.PodFailed
		}
	}
	r.mu.Unlock()
	r.finish(phase, "")
}

func (r *podRun) finish(phase corev1.PodPhase, msg string) {
	r.mu.Lock()
	r.st.Pod.Status.Phase = phase
	r.st.Pod.Status.Message = msg
	r.mu.Unlock()
	r.changed()
	log.L.WithField("pod", r.key()).WithField("phase", phase).Info("pod finished")
}

// setWaiting marks container name (all not yet started containers when name is "") waiting.
func (r *podRun) setWaiting(name, reason, msg string) {
	r.mu.Lock()
	for _, cs := range r.st.Containers {
		if (name == "" && cs.Attempts == 0) || (cs.Name == name && !cs.Running) {
			cs.Waiting = &corev1.ContainerStateWaiting{Reason: reason, Message: msg}
		}
	}
	r.mu.Unlock()
	r.changed()
}

// runContainer runs container c until restartPolicy says it is done: true when it ended for
// good, false when ctx ended first. For init containers "done" means exit 0, or a failure under
// restartPolicy Never.
func (r *podRun) runContainer(ctx context.Context, pod *corev1.Pod, c *corev1.Container, init bool) bool {
	policy := pod.Spec.RestartPolicy
	backoff := r.p.cfg.RestartBackoff
	for {
		r.mu.Lock()
		cs := r.ctr(c.Name, init)
		running, term := cs.Running, cs.Term
		r.mu.Unlock()
		switch {
		case running:
			pctx, stopProbe := context.WithCancel(ctx)
			if !init && c.ReadinessProbe != nil {
				go r.probeReadiness(pctx, c)
			}
			r.wait(ctx, c, init)
			stopProbe()
			if ctx.Err() != nil {
				return false
			}
			continue
		case term != nil:
			restart := policy == corev1.RestartPolicyAlways || (policy == corev1.RestartPolicyOnFailure && term.ExitCode != 0)
			if init {
				restart = term.ExitCode != 0 && policy != corev1.RestartPolicyNever
			}
			if !restart {
				return true
			}
			r.mu.Lock()
			cs.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off %s restarting container %s", backoff, c.Name)}
			cs.Last, cs.Term = cs.Term, nil
			r.mu.Unlock()
			r.changed()
			if !sleep(ctx, backoff) {
				return false
			}
			backoff = min(backoff*2, r.p.cfg.MaxRestartBackoff)
		}
		if err := r.launch(ctx, pod, c, init); err != nil {
			if ctx.Err() != nil {
				return false
			}
			reason := "CreateContainerError"
			var ce *podenv.ConfigError
			var ie *imageError
			switch {
			case errors.As(err, &ie):
				reason = "ErrImagePull"
			case errors.As(err, &ce):
				reason = "CreateContainerConfigError"
			}
			log.G(ctx).WithError(err).WithField("container", c.Name).Warn("cannot start container")
			r.setWaiting(c.Name, reason, err.Error())
			if !sleep(ctx, backoff) {
				return false
			}
			backoff = min(backoff*2, r.p.cfg.MaxRestartBackoff)
		}
	}
}

type imageError struct{ msg string }

func (e *imageError) Error() string { return e.msg }

// launch starts one run of container c.
func (r *podRun) launch(ctx context.Context, pod *corev1.Pod, c *corev1.Container, init bool) error {
	img, ok := r.p.cfg.Images[NormalizeImage(c.Image)]
	if !ok {
		return &imageError{fmt.Sprintf("image %q is not mapped to a local folder (start the node with --image-map %s=FOLDER)", c.Image, NormalizeImage(c.Image))}
	}
	vars, err := podenv.Resolve(ctx, pod, c, r.p.sources, r.serviceEnv(), r.p.cfg.Allocatable)
	if err != nil {
		return err
	}
	vars = withDefaults(vars, pod, c)
	argv := podenv.Command(c, img.Entrypoint, img.Args, vars)
	env := make([]string, 0, len(vars))
	lookup := map[string]string{}
	for _, v := range vars {
		env = append(env, v.Name+"="+v.Value)
		lookup[v.Name] = v.Value
	}
	r.mu.Lock()
	vols := r.st.Volumes
	cs := r.ctr(c.Name, init)
	attempt := cs.Attempts
	r.mu.Unlock()
	mounts, err := r.mounts(pod, c, vols, lookup)
	if err != nil {
		return err
	}
	if !mountsAt(mounts, hostsPath) {
		if err := r.writeHosts(); err != nil {
			return fmt.Errorf("hosts file: %w", err)
		}
		mounts = append(mounts, sandbox.Mount{Source: r.hostsFile(), Target: hostsPath})
	}
	dir := r.ctrDir(c.Name)
	if init {
		dir = r.ctrDir("init-" + c.Name)
	}
	n := strconv.Itoa(attempt)
	rt := filepath.Join(dir, "rt-"+n)
	if err := os.MkdirAll(rt, 0o700); err != nil {
		return err
	}
	termFile := filepath.Join(dir, "termination-"+n)
	if err := os.WriteFile(termFile, nil, 0o666); err != nil {
		return err
	}
	termPath := c.TerminationMessagePath
	if termPath == "" {
		termPath = corev1.TerminationMessagePathDefault
	}
	spec := &sandbox.Spec{
		Image:                  img.Root,
		RuntimeDir:             rt,
		Hostname:               hostname(pod),
		Argv:                   argv,
		Env:                    env,
		WorkingDir:             c.WorkingDir,
		Mounts:                 mounts,
		TerminationMessageFile: termFile,
		TerminationMessagePath: termPath,
		GPUDevices:             wantsGPU(c),
		ExitFile:               filepath.Join(dir, "exit-"+n+".json"),
	}
	spec.UID, spec.GID = runAs(pod, c)
	if pod.Spec.SecurityContext != nil {
		spec.Groups = pod.Spec.SecurityContext.SupplementalGroups
	}
	os.Remove(spec.ExitFile)
	h, exited, err := sandbox.Start(r.p.cfg.Self, spec, filepath.Join(dir, "spec-"+n+".json"), filepath.Join(dir, n+".log"))
	if err != nil {
		return err
	}
	r.mu.Lock()
	cs.Attempts++
	cs.Running, cs.Ready, cs.Handle, cs.Started, cs.Waiting = true, false, h, time.Now(), nil
	r.exits[c.Name+initSuffix(init)] = exited
	r.mu.Unlock()
	r.changed()
	return nil
}

func initSuffix(init bool) string {
	if init {
		return "/init"
	}
	return ""
}

// wait waits for the running container c to end (stopping it when ctx ends) and records how.
func (r *podRun) wait(ctx context.Context, c *corev1.Container, init bool) {
	r.mu.Lock()
	cs := r.ctr(c.Name, init)
	h := cs.Handle
	exited := r.exits[c.Name+initSuffix(init)]
	r.mu.Unlock()
	if exited == nil {
		exited = h.Watch(200 * time.Millisecond)
	}
	select {
	case <-exited:
	case <-ctx.Done():
		r.mu.Lock()
		grace := r.grace
		r.mu.Unlock()
		_ = h.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(grace):
			_ = h.KillGroup()
			select {
			case <-exited:
			case <-time.After(5 * time.Second):
			}
		}
	}
	r.recordExit(c, init)
}

// recordExit reads the run's exit status and termination message into the container state.
func (r *podRun) recordExit(c *corev1.Container, init bool) {
	dir := r.ctrDir(c.Name)
	if init {
		dir = r.ctrDir("init-" + c.Name)
	}
	r.mu.Lock()
	cs := r.ctr(c.Name, init)
	n := strconv.Itoa(cs.Attempts - 1)
	started := cs.Started
	uid := r.st.Pod.UID
	r.mu.Unlock()
	t := &termination{ContainerID: fmt.Sprintf("localnode://%s/%s/%s", uid, c.Name, n), StartedAt: started, FinishedAt: time.Now()}
	if ex, err := sandbox.ReadExit(filepath.Join(dir, "exit-"+n+".json")); err == nil {
		t.ExitCode, t.Signal, t.Reason = int32(ex.ExitCode), int32(ex.Signal), ex.Reason
		t.StartedAt, t.FinishedAt = ex.StartedAt, ex.FinishedAt
		if ex.Reason == "StartError" {
			t.Message = ex.Message
		}
	} else {
		t.ExitCode, t.Signal, t.Reason = 137, int32(syscall.SIGKILL), "Error"
		t.Message = "the container was killed (no exit status)"
	}
	if msg := terminationMessage(c, filepath.Join(dir, "termination-"+n), filepath.Join(dir, n+".log"), t.ExitCode); msg != "" {
		t.Message = msg
	}
	os.Remove(filepath.Join(dir, "rt-"+n))
	r.mu.Lock()
	cs.Running, cs.Ready, cs.Term = false, false, t
	delete(r.exits, c.Name+initSuffix(init))
	r.mu.Unlock()
	r.changed()
}

// Kubelet limits: 4096 bytes of termination message; the log fallback takes at most 80 lines
// and 2048 bytes.
const (
	maxTerminationMessage = 4096
	fallbackLines         = 80
	fallbackBytes         = 2048
)

func terminationMessage(c *corev1.Container, msgFile, logFile string, exit int32) string {
	if b, err := os.ReadFile(msgFile); err == nil && len(b) > 0 {
		if len(b) > maxTerminationMessage {
			b = b[:maxTerminationMessage]
		}
		return string(b)
	}
	if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError || exit == 0 {
		return ""
	}
	b, err := tailFile(logFile, fallbackLines, fallbackBytes)
	if err != nil {
		return ""
	}
	return string(b)
}

// serviceEnv is the `kubernetes` service's variables, pointing at the local API server.
func (r *podRun) serviceEnv() []podenv.Var {
	h, p := r.p.cfg.APIServerHost, r.p.cfg.APIServerPort
	if h == "" {
		return nil
	}
	url := "tcp://" + h + ":" + p
	return []podenv.Var{
		{Name: "KUBERNETES_SERVICE_HOST", Value: h},
		{Name: "KUBERNETES_SERVICE_PORT", Value: p},
		{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: p},
		{Name: "KUBERNETES_PORT", Value: url},
		{Name: "KUBERNETES_PORT_" + p + "_TCP", Value: url},
		{Name: "KUBERNETES_PORT_" + p + "_TCP_PROTO", Value: "tcp"},
		{Name: "KUBERNETES_PORT_" + p + "_TCP_PORT", Value: p},
		{Name: "KUBERNETES_PORT_" + p + "_TCP_ADDR", Value: h},
	}
}

// withDefaults adds what container runtimes add when the container does not set it: PATH,
// HOSTNAME and HOME.
func withDefaults(vars []podenv.Var, pod *corev1.Pod, c *corev1.Container) []podenv.Var {
	have := map[string]bool{}
	for _, v := range vars {
		have[v.Name] = true
	}
	add := func(k, v string) {
		if !have[k] {
			vars = append(vars, podenv.Var{Name: k, Value: v})
		}
	}
	add("PATH", sandbox.DefaultPath)
	add("HOSTNAME", hostname(pod))
	if uid, _ := runAs(pod, c); uid == nil || *uid == 0 {
		add("HOME", "/root")
	} else {
		add("HOME", "/")
	}
	return vars
}

func hostname(pod *corev1.Pod) string {
	h := pod.Name
	if pod.Spec.Hostname != "" {
		h = pod.Spec.Hostname
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

func runAs(pod *corev1.Pod, c *corev1.Container) (uid, gid *int64) {
	if psc := pod.Spec.SecurityContext; psc != nil {
		uid, gid = psc.RunAsUser, psc.RunAsGroup
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			gid = sc.RunAsGroup
		}
	}
	return uid, gid
}

// GPUResource is the extended resource the node can advertise for demos.
const GPUResource corev1.ResourceName = "nvidia.com/gpu"

func wantsGPU(c *corev1.Container) bool {
	for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		if q, ok := l[GPUResource]; ok && q.Cmp(resource.MustParse("0")) > 0 {
			return true
		}
	}
	return false
}

const serviceAccountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// prepareServiceAccount writes the pod's service account folder (token, ca.crt, namespace) when
// the node has one and the pod does not opt out.
func (r *podRun) prepareServiceAccount(pod *corev1.Pod) error {
	if !r.wantsServiceAccount(pod) {
		return nil
	}
	dst := filepath.Join(r.dir, "serviceaccount")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"token", "ca.crt"} {
		b, err := os.ReadFile(filepath.Join(r.p.cfg.ServiceAccountDir, f))
		if err != nil {
			return fmt.Errorf("service account folder: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dst, "namespace"), []byte(pod.Namespace), 0o644)
}

func (r *podRun) wantsServiceAccount(pod *corev1.Pod) bool {
	if r.p.cfg.ServiceAccountDir == "" {
		return false
	}
	if a := pod.Spec.AutomountServiceAccountToken; a != nil && !*a {
		return false
	}
	return true
}

// mounts turns c's volume mounts into sandbox mounts.
func (r *podRun) mounts(pod *corev1.Pod, c *corev1.Container, vols map[string]volumes.Volume, env map[string]string) ([]sandbox.Mount, error) {
	var out []sandbox.Mount
	saMounted := false
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			return nil, &podenv.ConfigError{Msg: fmt.Sprintf("volume mount %q names no volume of the pod", vm.Name)}
		}
		src := v.Path
		sub := vm.SubPath
		if vm.SubPathExpr != "" {
			sub = podenv.Expand(vm.SubPathExpr, func(k string) (string, bool) { s, ok := env[k]; return s, ok })
		}
		if sub != "" {
			p, err := securejoin.SecureJoin(v.Path, sub)
			if err != nil {
				return nil, &podenv.ConfigError{Msg: fmt.Sprintf("subPath %q of volume %q: %v", sub, vm.Name, err)}
			}
			if _, err := os.Stat(p); err != nil {
				if err := os.MkdirAll(p, 0o755); err != nil {
					return nil, err
				}
			}
			src = p
		}
		if filepath.Clean(vm.MountPath) == serviceAccountPath {
			saMounted = true
		}
		out = append(out, sandbox.Mount{Source: src, Target: vm.MountPath, ReadOnly: vm.ReadOnly || v.ReadOnly})
	}
	if !saMounted && r.wantsServiceAccount(pod) {
		out = append(out, sandbox.Mount{Source: filepath.Join(r.dir, "serviceaccount"), Target: serviceAccountPath, ReadOnly: true})
	}
	return out, nil
}

func mountsAt(ms []sandbox.Mount, target string) bool {
	for _, m := range ms {
		if filepath.Clean(m.Target) == target {
			return true
		}
	}
	return false
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
