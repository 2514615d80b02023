package e2e

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/elastico/elastico/examples/kubernetes/plugin"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/component-base/configz"
	"k8s.io/klog/v2"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	schedapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedoptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

func TestMain(m *testing.M) {
	// The API server and the scheduler log a great deal through klog; the
	// test's own log says what happened.
	// ELASTICO_E2E_KLOG=<file> keeps it there instead, for debugging.
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
	if path := os.Getenv("ELASTICO_E2E_KLOG"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer f.Close()
		klog.SetOutput(f)
		_ = fs.Set("v", "4")
	}
	if kc := os.Getenv(scaleControllerEnv); kc != "" {
		// TestScale's controller, in a process of its own.
		os.Exit(runScaleController(kc))
	}
	code := m.Run()
	klog.Flush()
	os.Exit(code)
}

// quiet drops what the API server logs through the test (it logs every
// controller it starts); errors and failures still reach the test.
type quiet struct{ *testing.T }

func (quiet) Log(...any)          {}
func (quiet) Logf(string, ...any) {}

// controlPlane is a real etcd, kube-apiserver and kube-scheduler (with
// elastico's plugin) running in the test's process.
type controlPlane struct {
	t         *testing.T
	cfg       *rest.Config
	client    kubernetes.Interface
	kubeconf  string
	dir       string
	schedStop context.CancelFunc
	schedDone chan error
	started   time.Time
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startControlPlane starts etcd and the API server, then the scheduler.
// Everything stops when the test ends, scheduler first and etcd last.
func startControlPlane(t *testing.T) *controlPlane {
	t0 := time.Now()
	ecfg := embed.NewConfig()
	ecfg.Dir = t.TempDir()
	ecfg.LogLevel = "error"
	ecfg.UnsafeNoFsync = true
	cu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
	pu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
	ecfg.ListenClientUrls, ecfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	ecfg.ListenPeerUrls, ecfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	ecfg.InitialCluster = ecfg.InitialClusterFromName(ecfg.Name)
	etcd, err := embed.StartEtcd(ecfg)
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(etcd.Close) // cleanups run last-in first-out: etcd stops last
	select {
	case <-etcd.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		t.Fatal("etcd did not become ready within 60s")
	}

	sc := storagebackend.NewDefaultConfig("/registry", nil)
	sc.Transport.ServerList = []string{cu.String()}
	// No controller-manager runs: no default service account is created
	// and no controller would lift a new node's not-ready taint.
	var tb testing.TB = quiet{t}
	if os.Getenv("ELASTICO_E2E_KLOG") != "" {
		tb = t
	}
	srv := kubeapiservertesting.StartTestServerOrDie(tb, nil,
		[]string{"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition"}, sc)
	t.Cleanup(srv.TearDownFn)
	cp := &controlPlane{t: t, cfg: srv.ClientConfig, dir: t.TempDir(), started: t0}
	cp.client = kubernetes.NewForConfigOrDie(srv.ClientConfig)
	t.Logf("etcd and kube-apiserver ready after %v", time.Since(t0).Round(time.Millisecond))

	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: srv.ClientConfig.Host, CertificateAuthorityData: srv.ClientConfig.CAData, TLSServerName: srv.ClientConfig.ServerName}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificateData: srv.ClientConfig.CertData, ClientKeyData: srv.ClientConfig.KeyData, Token: srv.ClientConfig.BearerToken}
	kc.Contexts["x"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "x"
	cp.kubeconf = filepath.Join(cp.dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, cp.kubeconf); err != nil {
		t.Fatal(err)
	}
	cp.startScheduler()
	t.Cleanup(cp.stopScheduler)
	return cp
}

// schedulerConfig is deploy/scheduler.yaml's: a profile for pods that did
// not opt in, and elastico-scheduler, which adds the plugin at every
// extension point it implements to the default plugins.
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q, qps: %d, burst: %d}
leaderElection: {leaderElect: false}
profiles:
- schedulerName: default-scheduler
- schedulerName: elastico-scheduler
  plugins:
    preFilter: {enabled: [{name: Elastico}]}
    filter: {enabled: [{name: Elastico}]}
    reserve: {enabled: [{name: Elastico}]}
    permit: {enabled: [{name: Elastico}]}
    postFilter: {disabled: [{name: DefaultPreemption}]}
  pluginConfig:
  - name: Elastico
    args: {gpuResource: nvidia.com/gpu, gangTimeoutSeconds: %d}
`

// gangTimeoutSeconds is the plugin's gang timeout in the tests: short, so
// that a gang held at Permit goes back to the queue within a test.
const gangTimeoutSeconds = 3

// schedulerQPS is the scheduler's API request rate (burst: twice it):
// kube-scheduler's default, 50, unless a test raises it.
var schedulerQPS = 50

// pluginFactory builds the plugin the scheduler runs; the scale test
// wraps it to time it.
var pluginFactory = plugin.New

// startScheduler starts kube-scheduler with the plugin, the way the
// kube-scheduler command of this module does (app.Setup + app.Run; the
// cobra command would install a signal handler).
func (cp *controlPlane) startScheduler() {
	t := cp.t
	t0 := time.Now()
	path := filepath.Join(cp.dir, "scheduler.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(schedulerConfig, cp.kubeconf, schedulerQPS, 2*schedulerQPS, gangTimeoutSeconds)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	opts := schedoptions.NewOptions()
	opts.ConfigFile = path
	opts.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
	opts.SecureServing.BindPort = freePort(t)
	opts.SecureServing.ServerCert.CertDirectory = cp.dir
	cc, sched, err := schedapp.Setup(ctx, opts, schedapp.WithPlugin(plugin.Name, pluginFactory))
	if err != nil {
		cancel()
		t.Fatalf("setting up kube-scheduler: %v", err)
	}
	cp.schedStop, cp.schedDone = cancel, make(chan error, 1)
	go func(done chan error) { done <- schedapp.Run(ctx, cc, sched) }(cp.schedDone)
	// Ready means its informers are synced and its handlers installed.
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	ready := fmt.Sprintf("https://127.0.0.1:%d/readyz", opts.SecureServing.BindPort)
	for deadline := time.Now().Add(60 * time.Second); ; {
		select {
		case err := <-cp.schedDone:
			cp.schedStop = nil
			t.Fatalf("kube-scheduler stopped: %v", err)
		default:
		}
		if resp, err := hc.Get(ready); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("kube-scheduler not ready within 60s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("kube-scheduler with the %s plugin ready in %v", plugin.Name, time.Since(t0).Round(time.Millisecond))
}

func (cp *controlPlane) stopScheduler() {
	if cp.schedStop == nil {
		return
	}
	cp.schedStop()
	select {
	case err := <-cp.schedDone:
		// app.Run always returns an error; without leader election this
		// one says it stopped because its context was cancelled.
		if err != nil && err.Error() != "finished without leader elect" {
			cp.t.Errorf("kube-scheduler: %v", err)
		}
	case <-time.After(30 * time.Second):
		cp.t.Error("kube-scheduler did not stop within 30s")
	}
	cp.schedStop = nil
	// app.Run registers its configuration for /configz once per process;
	// the next scheduler of this process registers it again.
	configz.Delete("componentconfig")
}
