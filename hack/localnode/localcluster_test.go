package main

// End-to-end test of the local node inside a whole local cluster (hack/localcluster/up.sh and
// down.sh): an Indexed Job with ConfigMap, Secret, emptyDir, hostPath and PVC volumes, env
// valueFrom and termination messages; each pod's own loopback address; a failing pod; kubectl
// logs -f; a node restart while a pod runs. TestServiceProxyAndNames: the node's Service proxy
// (ClusterIPs from a loopback service range) and the pods' hosts files.
//
// Needs root and the control plane binaries: KUBEBUILDER_ASSETS names the folder holding etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kubectl (hack/build-tools.sh
// controlplane etcd puts them in bin/). Without them the test skips, or fails when
// RAGOPS_REQUIRE_ALL=1.

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func prerequisites(t *testing.T) string {
	t.Helper()
	miss := func(msg string) {
		if os.Getenv("RAGOPS_REQUIRE_ALL") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if os.Geteuid() != 0 {
		miss("the local node needs root (mount namespaces)")
	}
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		miss("KUBEBUILDER_ASSETS is not set: it names the folder with etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl (hack/build-tools.sh controlplane etcd builds them into bin/)")
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			miss(fmt.Sprintf("%s missing in KUBEBUILDER_ASSETS=%s: run hack/build-tools.sh controlplane etcd", b, dir))
		}
	}
	return dir
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

type cluster struct {
	t          *testing.T
	env        []string
	state      string
	bin        string
	kubeconfig string
	client     kubernetes.Interface
	nodeArgs   []string
}

func (c *cluster) script(name string, args ...string) {
	c.t.Helper()
	cmd := exec.Command(filepath.Join("..", "localcluster", name), args...)
	cmd.Env = append(os.Environ(), c.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s: %v\n%s", name, err, out)
	}
}

func (c *cluster) kubectl(args ...string) string {
	c.t.Helper()
	out, err := exec.Command(filepath.Join(c.bin, "kubectl"), append([]string{"--kubeconfig", c.kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (c *cluster) pid(name string) int {
	b, err := os.ReadFile(filepath.Join(c.state, "run", name+".pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

func startCluster(t *testing.T) *cluster {
	bin := prerequisites(t)
	state := t.TempDir()
	api, etcd, kubelet := freePort(t), freePort(t), freePort(t)
	// A service range of its own, so that clusters side by side do not claim the same ClusterIPs.
	serviceCIDR := fmt.Sprintf("127.%d.%d.0/24", 100+rand.IntN(150), rand.IntN(256))
	c := &cluster{t: t, state: state, bin: bin, kubeconfig: filepath.Join(state, "kubeconfig"),
		env: []string{"LOCALCLUSTER_BIN=" + bin, "LOCALCLUSTER_DIR=" + state, "LOCALCLUSTER_SERVICE_CIDR=" + serviceCIDR,
			"LOCALCLUSTER_APISERVER_PORT=" + strconv.Itoa(api), "LOCALCLUSTER_ETCD_PORT=" + strconv.Itoa(etcd),
			"LOCALCLUSTER_KUBELET_PORT=" + strconv.Itoa(kubelet), "LOCALCLUSTER_NODE_NAME=e2e-node"},
		nodeArgs: []string{"--image-map", "busybox=/", "--advertise-gpus", "2"},
	}
	names := []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "localnode"}
	t.Cleanup(func() {
		pids := map[string]int{}
		for _, n := range names {
			pids[n] = c.pid(n)
		}
		c.script("down.sh")
		for n, pid := range pids {
			if pid > 0 {
				if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
					t.Errorf("%s (pid %d) still runs after down.sh", n, pid)
				}
			}
		}
	})
	start := time.Now()
	c.script("up.sh", c.nodeArgs...)
	t.Logf("up.sh: %.1f s", time.Since(start).Seconds())
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if c.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitFor polls cond every 100 ms until it is true, failing after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	end := time.Now().Add(limit)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func podDone(ctx context.Context, cs kubernetes.Interface, ns, name string) func() (bool, error) {
	return func() (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	}
}

func TestLocalCluster(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	cs := c.client
	ns := "e2e"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, "e2e-node", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if gpus := node.Status.Allocatable["nvidia.com/gpu"]; gpus.Value() != 2 {
		t.Errorf("node advertises %s nvidia.com/gpu, want 2 (--advertise-gpus 2)", gpus.String())
	}

	hostDir, pvDir := t.TempDir(), t.TempDir()
	mustCreate := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data: map[string]string{"greeting": "hello", "file.txt": "config-file"}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec"},
		Data: map[string][]byte{"password": []byte("s3cret")}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = cs.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "e2e-pv"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName:              "manual",
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: pvDir}},
		}}, metav1.CreateOptions{})
	mustCreate(err)
	sc := "manual"
	_, err = cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &sc,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}, metav1.CreateOptions{})
	mustCreate(err)

	script := strings.Join([]string{
		`set -e`,
		`echo "index=$JOB_COMPLETION_INDEX greeting=$GREETING pw=$PASSWORD pod=$POD_NAME ip=$POD_IP cpu=$CPU_MILLI"`,
		`test "$(cat /cfg/file.txt)" = config-file`,
		`test "$(cat /sec/password)" = s3cret`,
		`echo "scratch-$JOB_COMPLETION_INDEX" > /scratch/x`,
		`echo "host-$JOB_COMPLETION_INDEX" > /host/out-$JOB_COMPLETION_INDEX`,
		`echo "pvc-$JOB_COMPLETION_INDEX $(cat /scratch/x)" > /data/pvc-$JOB_COMPLETION_INDEX`,
		`printf 'done %s %s' "$JOB_COMPLETION_INDEX" "$GREETING" > /dev/termination-log`,
	}, "\n")
	three, indexed := int32(3), batchv1.IndexedCompletion
	zero := int32(0)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "shards"}, Spec: batchv1.JobSpec{
		Completions: &three, Parallelism: &three, CompletionMode: &indexed, BackoffLimit: &zero,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "work", Image: "busybox", Command: []string{"sh", "-c", script},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("16Mi")}},
				Env: []corev1.EnvVar{
					{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, Key: "greeting"}}},
					{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "sec"}, Key: "password"}}},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
					{Name: "CPU_MILLI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "cfg", MountPath: "/cfg"}, {Name: "sec", MountPath: "/sec"}, {Name: "scratch", MountPath: "/scratch"},
					{Name: "host", MountPath: "/host"}, {Name: "data", MountPath: "/data"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
				{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec"}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			},
		}},
	}}
	created := time.Now()
	_, err = cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	mustCreate(err)
	waitFor(t, 40*time.Second, "job complete", func() (bool, error) {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, "shards", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range j.Status.Conditions {
			if cond.Status == corev1.ConditionTrue && cond.Type == batchv1.JobFailed {
				return false, fmt.Errorf("job failed: %s", cond.Message)
			}
			if cond.Status == corev1.ConditionTrue && cond.Type == batchv1.JobComplete {
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("Indexed Job of 3 pods: create -> Complete in %.2f s", time.Since(created).Seconds())

	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=shards"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 3 {
		t.Fatalf("job has %d pods, want 3", len(pods.Items))
	}
	podNet := netip.MustParsePrefix("127.1.0.0/16")
	ips := map[string]string{}
	for _, p := range pods.Items {
		idx := p.Annotations["batch.kubernetes.io/job-completion-index"]
		// Each pod has its own loopback address, in status and in the downward API.
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !podNet.Contains(ip) || len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != p.Status.PodIP || p.Status.HostIP != "127.0.0.1" {
			t.Errorf("pod %s: podIP %q podIPs %v hostIP %q, want its own address in %s and hostIP 127.0.0.1", p.Name, p.Status.PodIP, p.Status.PodIPs, p.Status.HostIP, podNet)
		}
		if other, dup := ips[p.Status.PodIP]; dup {
			t.Errorf("pods %s and %s share the address %s", other, p.Name, p.Status.PodIP)
		}
		ips[p.Status.PodIP] = p.Name
		if p.Status.Phase != corev1.PodSucceeded || len(p.Status.ContainerStatuses) != 1 {
			t.Errorf("pod %s: phase %s, want Succeeded", p.Name, p.Status.Phase)
			continue
		}
		term := p.Status.ContainerStatuses[0].State.Terminated
		if term == nil || term.ExitCode != 0 || term.Message != "done "+idx+" hello" {
			t.Errorf("pod %s: terminated %+v, want exit 0 and message %q", p.Name, term, "done "+idx+" hello")
		}
		logs := c.kubectl("-n", ns, "logs", p.Name)
		want := fmt.Sprintf("index=%s greeting=hello pw=s3cret pod=%s ip=%s cpu=100", idx, p.Name, p.Status.PodIP)
		if !strings.Contains(logs, want) {
			t.Errorf("kubectl logs %s = %q, want it to contain %q", p.Name, logs, want)
		}
	}
	for i := 0; i < 3; i++ {
		if b, err := os.ReadFile(filepath.Join(hostDir, fmt.Sprintf("out-%d", i))); err != nil || string(b) != fmt.Sprintf("host-%d\n", i) {
			t.Errorf("hostPath out-%d = %q (%v), want %q", i, b, err, fmt.Sprintf("host-%d\n", i))
		}
		want := fmt.Sprintf("pvc-%d scratch-%d\n", i, i)
		if b, err := os.ReadFile(filepath.Join(pvDir, fmt.Sprintf("pvc-%d", i))); err != nil || string(b) != want {
			t.Errorf("PV file pvc-%d = %q (%v), want %q", i, b, err, want)
		}
	}

	// A failing container: Failed with its exit code, the log tail as message (FallbackToLogsOnError).
	fail := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "fails"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", "echo something broke; exit 7"},
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}},
	}}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, fail, metav1.CreateOptions{})
	mustCreate(err)
	// kubectl logs -f on a pod that writes over time: it must end when the container ends.
	follow := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "follow"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyOnFailure,
		Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Command:      []string{"sh", "-c", "for i in 1 2 3; do echo line-$i; sleep 0.3; done; test -f /host/follow-retried || { touch /host/follow-retried; exit 1; }"},
			VolumeMounts: []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}}},
		Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}}},
	}}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, follow, metav1.CreateOptions{})
	mustCreate(err)
	waitFor(t, 20*time.Second, "pod fails ends", podDone(ctx, cs, ns, "fails"))
	p, err := cs.CoreV1().Pods(ns).Get(ctx, "fails", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if term := p.Status.ContainerStatuses[0].State.Terminated; p.Status.Phase != corev1.PodFailed || term == nil || term.ExitCode != 7 || term.Message != "something broke\n" {
		t.Errorf("failing pod: phase %s terminated %+v, want Failed, exit 7, message from the log", p.Status.Phase, term)
	}
	waitFor(t, 20*time.Second, "pod follow runs", func() (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "follow", metav1.GetOptions{})
		return err == nil && p.Status.Phase != corev1.PodPending, err
	})
	if out := c.kubectl("-n", ns, "logs", "-f", "follow"); !strings.Contains(out, "line-1\nline-2\nline-3\n") {
		t.Errorf("kubectl logs -f follow = %q, want the three lines", out)
	}
	waitFor(t, 20*time.Second, "pod follow ends", podDone(ctx, cs, ns, "follow"))
	p, err = cs.CoreV1().Pods(ns).Get(ctx, "follow", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := p.Status.ContainerStatuses[0]
	if p.Status.Phase != corev1.PodSucceeded || st.RestartCount != 1 || st.LastTerminationState.Terminated == nil || st.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("OnFailure pod: phase %s restarts %d last %+v, want Succeeded after one restart from exit 1", p.Status.Phase, st.RestartCount, st.LastTerminationState.Terminated)
	}
	if out := c.kubectl("-n", ns, "logs", "--previous", "follow"); !strings.Contains(out, "line-3") {
		t.Errorf("kubectl logs --previous = %q, want the first run's lines", out)
	}

	// A node restart while a pod runs: the pod is re-attached, not run a second time.
	slow := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "slow"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "main", Image: "busybox",
			Command:      []string{"sh", "-c", "echo start >> /host/slow-starts; sleep 4; echo finished"},
			VolumeMounts: []corev1.VolumeMount{{Name: "host", MountPath: "/host"}}}},
		Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hostDir}}}},
	}}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, slow, metav1.CreateOptions{})
	mustCreate(err)
	waitFor(t, 20*time.Second, "pod slow runs", func() (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "slow", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	p, err = cs.CoreV1().Pods(ns).Get(ctx, "slow", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slowIP := p.Status.PodIP
	rss := vmRSS(c.pid("localnode"))
	t.Logf("node RSS: %s", rss)
	if err := exec.Command("kill", strconv.Itoa(c.pid("localnode"))).Run(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "node exits", func() (bool, error) {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", c.pid("localnode")))
		return err != nil, nil
	})
	c.script("up.sh", c.nodeArgs...)
	waitFor(t, 30*time.Second, "pod slow ends after the node restart", podDone(ctx, cs, ns, "slow"))
	p, err = cs.CoreV1().Pods(ns).Get(ctx, "slow", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != corev1.PodSucceeded {
		t.Errorf("pod slow: phase %s after the node restart, want Succeeded", p.Status.Phase)
	}
	if p.Status.PodIP != slowIP {
		t.Errorf("pod slow: address %s after the node restart, %s before: want it kept", p.Status.PodIP, slowIP)
	}
	if b, _ := os.ReadFile(filepath.Join(hostDir, "slow-starts")); string(b) != "start\n" {
		t.Errorf("pod slow started %d times across the node restart, want 1", strings.Count(string(b), "start"))
	}
	if out := c.kubectl("-n", ns, "logs", "slow"); !strings.Contains(out, "finished") {
		t.Errorf("kubectl logs slow = %q, want the output after the node restart too", out)
	}
}

// vmRSS returns the VmRSS line of a process.
func vmRSS(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// webServer is a container that answers every HTTP GET with its pod's name, listening on the
// pod's own address (the downward API's status.podIP) at port 8080.
func webServer(name string) corev1.Container {
	script := `import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = os.environ["POD_NAME"].encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer((os.environ["POD_IP"], 8080), H).serve_forever()`
	return corev1.Container{Name: name, Image: "busybox", Command: []string{"/usr/bin/python3", "-c", script},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		}}
}

// get fetches url with a short timeout and returns the body.
func get(url string) (string, error) {
	cl := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := cl.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestServiceProxyAndNames: two pods listen on the same port, each on its own address, behind one
// Service whose ClusterIP (from the loopback service range) the node's proxy serves: connections
// alternate between the two, never reach a pod of the Service that is not Ready (one with an
// ended container, one whose readiness probe fails; the two others are Ready through their HTTP
// readiness probes), and the listener
// closes when the Service is deleted. A pod reaches the Service by NAME, NAME.NAMESPACE,
// NAME.NAMESPACE.svc and NAME.NAMESPACE.svc.cluster.local through its /etc/hosts, and a Service
// created after the pod started resolves too (the hosts file is rewritten in place).
func TestServiceProxyAndNames(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	cs := c.client
	ns := "net"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	web := map[string]string{"app": "web"}
	// web-a and web-b leave the Service only after three slow answers in a row, so that a loaded
	// machine does not change the set of Ready endpoints during the round-robin count below.
	probe := func(h corev1.ProbeHandler) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: h, PeriodSeconds: 1, TimeoutSeconds: 3, FailureThreshold: 3}
	}
	for _, name := range []string{"web-a", "web-b", "web-d"} {
		ctr := webServer("server")
		// web-a and web-b are Ready once their HTTP readiness probe passes; web-d's probe
		// never does (nothing listens on 9999): it runs and serves on 8080, not Ready.
		ctr.ReadinessProbe = probe(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}})
		if name == "web-d" {
			ctr.ReadinessProbe = probe(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9999)}})
		}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: web},
			Spec: corev1.PodSpec{Containers: []corev1.Container{ctr}}}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// web-c serves too, but one of its containers has ended: Running, not Ready.
	notReady := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-c", Labels: web}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{webServer("server"), {Name: "quits", Image: "busybox", Command: []string{"true"}}},
	}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, notReady, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svc := func(name string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{Selector: web,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}}}}
	}
	s, err := cs.CoreV1().Services(ns).Create(ctx, svc("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Service (is the loopback service range accepted?): %v", err)
	}
	if ip := netip.MustParseAddr(s.Spec.ClusterIP); !ip.IsLoopback() {
		t.Fatalf("ClusterIP %s is not a loopback address", ip)
	}
	ips := map[string]string{}
	waitFor(t, 30*time.Second, "pods web-a and web-b ready, web-c and web-d running and not ready", func() (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		ok := 0
		for _, p := range pods.Items {
			rdy := false
			for _, cond := range p.Status.Conditions {
				rdy = rdy || cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue
			}
			ips[p.Name] = p.Status.PodIP
			switch {
			case p.Name == "web-c" && p.Status.Phase == corev1.PodRunning && !rdy && len(p.Status.ContainerStatuses) == 2 &&
				p.Status.ContainerStatuses[1].State.Terminated != nil:
				ok++
			case p.Name == "web-d" && p.Status.Phase == corev1.PodRunning && !rdy && len(p.Status.ContainerStatuses) == 1 &&
				p.Status.ContainerStatuses[0].State.Running != nil:
				ok++
			case (p.Name == "web-a" || p.Name == "web-b") && rdy:
				ok++
			}
		}
		return ok == 4, nil
	})
	// Every pod listens on port 8080 of its own address: all four answer there directly.
	for name, ip := range ips {
		waitFor(t, 20*time.Second, name+" listens on its own address", func() (bool, error) {
			body, err := get("http://" + net.JoinHostPort(ip, "8080") + "/")
			return err == nil && body == name, nil
		})
	}
	url := "http://" + net.JoinHostPort(s.Spec.ClusterIP, "80") + "/"
	// The proxy learns readiness from its own informer, a moment after the API server has it:
	// the count starts once the Service has reached both Ready pods.
	seen := map[string]bool{}
	waitFor(t, 20*time.Second, "the Service reaches web-a and web-b", func() (bool, error) {
		if body, err := get(url); err == nil {
			seen[body] = true
		}
		return seen["web-a"] && seen["web-b"], nil
	})
	counts := map[string]int{}
	for i := 0; i < 40; i++ {
		body, err := get(url)
		if err != nil {
			t.Fatalf("request %d through the Service: %v", i, err)
		}
		counts[body]++
	}
	t.Logf("40 requests through %s: %v", url, counts)
	if counts["web-a"] != 20 || counts["web-b"] != 20 || len(counts) != 2 {
		t.Errorf("40 requests through the Service reached %v, want 20 each on web-a and web-b (round robin) and none on the not-ready web-c and web-d", counts)
	}

	// Names, from a pod.
	client := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "client"}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"sh", "-c", strings.Join([]string{
			`for n in web web.net web.net.svc web.net.svc.cluster.local; do echo "$n -> $(wget -qO- -T 5 http://$n/)"; done`,
			`i=0; until wget -qO /tmp/late -T 2 http://late.net.svc/; do i=$((i+1)); [ $i -gt 150 ] && exit 3; sleep 0.2; done`,
			`echo "late -> $(cat /tmp/late)"`,
		}, "\n")}}},
	}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, client, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var logs string
	waitFor(t, 30*time.Second, "client resolves web by four names", func() (bool, error) {
		out, err := exec.Command(filepath.Join(c.bin, "kubectl"), "--kubeconfig", c.kubeconfig, "-n", ns, "logs", "client").CombinedOutput()
		logs = string(out)
		return err == nil && strings.Contains(logs, "web.net.svc.cluster.local -> "), nil
	})
	for _, n := range []string{"web", "web.net", "web.net.svc", "web.net.svc.cluster.local"} {
		if !strings.Contains(logs, n+" -> web-a\n") && !strings.Contains(logs, n+" -> web-b\n") {
			t.Errorf("client: %s did not reach web-a or web-b; logs:\n%s", n, logs)
		}
	}
	// A Service created while the pod runs: its hosts file is rewritten in place.
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc("late"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 40*time.Second, "client ends", podDone(ctx, cs, ns, "client"))
	logs = c.kubectl("-n", ns, "logs", "client")
	if p, err := cs.CoreV1().Pods(ns).Get(ctx, "client", metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodSucceeded {
		t.Errorf("client did not reach late.net.svc, a Service created after it started; logs:\n%s", logs)
	} else if !strings.Contains(logs, "late -> web-") {
		t.Errorf("client logs %q, want late -> web-a or web-b", logs)
	}

	// The kubernetes Service forwards to the API server.
	k, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "kubernetes Service answers", func() (bool, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", net.JoinHostPort(k.Spec.ClusterIP, "443"), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return false, nil
		}
		conn.Close()
		return true, nil
	})

	// Deleting the Service closes its listener.
	if err := cs.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "listener closed after the Service's deletion", func() (bool, error) {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(s.Spec.ClusterIP, "80"), time.Second)
		if err == nil {
			conn.Close()
			return false, nil
		}
		return errors.Is(err, syscall.ECONNREFUSED), nil
	})
}
