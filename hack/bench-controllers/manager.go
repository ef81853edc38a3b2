package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// managerProcess is the real `ragops manager` binary running as its own process against the
// envtest kube-apiserver.
type managerProcess struct {
	metricsAddr, probeAddr string
	logPath                string
	cmd                    *exec.Cmd
	done                   chan struct{}
	waitErr                error
}

// writeKubeconfig writes an administrator kubeconfig for cfg (client certificates, as envtest
// creates them) to path.
func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	return clientcmd.WriteToFile(*kc, path)
}

// freeAddr returns a free loopback address "127.0.0.1:port".
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startManager runs bin manager with the given kubeconfig and waits for /readyz. The manager's
// output goes to dir/manager.log.
func startManager(ctx context.Context, bin, kubeconfig, dir string) (*managerProcess, error) {
	m := &managerProcess{logPath: filepath.Join(dir, "manager.log"), done: make(chan struct{})}
	var err error
	if m.metricsAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	if m.probeAddr, err = freeAddr(); err != nil {
		return nil, err
	}
	logf, err := os.Create(m.logPath)
	if err != nil {
		return nil, err
	}
	m.cmd = exec.Command(bin, "manager",
		"--metrics-bind-address", m.metricsAddr,
		"--health-probe-bind-address", m.probeAddr,
		"--worker-image", "ragops:bench")
	m.cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "TMPDIR=" + dir, "KUBECONFIG=" + kubeconfig}
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := m.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s manager: %w", bin, err)
	}
	go func() { m.waitErr = m.cmd.Wait(); logf.Close(); close(m.done) }()
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case <-m.done:
			return nil, fmt.Errorf("ragops manager exited before ready (%v); log: %s", m.waitErr, m.logPath)
		case <-ctx.Done():
			m.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if resp, err := http.Get("http://" + m.probeAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m, nil
			}
		}
		if time.Now().After(deadline) {
			m.stop()
			return nil, fmt.Errorf("ragops manager not ready at %s/readyz after 90 s; log: %s", m.probeAddr, m.logPath)
		}
	}
}

// alive reports whether the manager process is still running.
func (m *managerProcess) alive() bool {
	select {
	case <-m.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits up to 20 s, then kills the process group.
func (m *managerProcess) stop() {
	if !m.alive() {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		<-m.done
	}
}

// procSample is the manager's memory and CPU use read from /proc/<pid>.
type procSample struct {
	// RSS is VmRSS and HWM is VmHWM (peak RSS), in bytes.
	RSS, HWM uint64
	// Anon and File split RSS (RssAnon, RssFile; bytes): the Go heap, stacks and runtime
	// against the mapped pages of the ragops binary, which every subcommand shares.
	Anon, File uint64
	// CPU is user+system CPU time in seconds.
	CPU float64
}

// sample reads /proc/<pid>/status and /proc/<pid>/stat of the manager.
func (m *managerProcess) sample() (procSample, error) {
	p, err := procfs.NewProc(m.cmd.Process.Pid)
	if err != nil {
		return procSample{}, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return procSample{}, err
	}
	stat, err := p.Stat()
	if err != nil {
		return procSample{}, err
	}
	return procSample{RSS: st.VmRSS, HWM: st.VmHWM, Anon: st.RssAnon, File: st.RssFile, CPU: stat.CPUTime()}, nil
}

// scrape fetches the manager's Prometheus metrics endpoint.
func (m *managerProcess) scrape() (metricSet, error) {
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get("http://" + m.metricsAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New("GET /metrics: " + resp.Status)
	}
	return parseMetrics(bytes.NewReader(body))
}

// scrapeAPIServer reads the kube-apiserver's own /metrics (apiserver_request_total counts
// every request by verb and resource, whoever sent it).
func scrapeAPIServer(ctx context.Context, cfg *rest.Config) (metricSet, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/metrics: %s", cfg.Host, resp.Status)
	}
	return parseMetrics(resp.Body)
}
