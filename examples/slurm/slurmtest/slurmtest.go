// Package slurmtest starts a real Slurm on one host (munged, slurmctld, one
// slurmd per node) for a test, in a fresh state directory, with placeholder GPUs
// (character devices made with mknod, major 195 like /dev/nvidiaN) typed one
// per device and split into shards, the way the elastico adapter wants a
// site to configure them. It follows the measured recipe of Slurm 22.05 on
// Debian 12 without systemd (see the adapter's README).
//
// Start installs the Debian packages when they are missing (as root, with
// apt-get) and skips the test, with the reason, where that cannot be done.
// Everything it starts is stopped in t.Cleanup, by PID, after every job is
// cancelled (a running job's slurmstepd survives a slurmd stop otherwise).
//
// A cluster of several nodes runs each slurmd in a network namespace of its
// own (Debian's slurmd cannot run twice on one network stack), joined to
// the host by a bridge; the test skips, saying why, where namespaces cannot
// be made.
package slurmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options shapes the cluster. Zero fields take the defaults.
type Options struct {
	// Node is the node's name (default "node1"); with several nodes, the
	// prefix of their names (default "node": node1, node2, ...).
	Node string
	// Nodes is how many nodes (slurmd) to run (default 1).
	Nodes int
	// Features are each node's features (slurm.conf Features=), by node:
	// "gpu_v100" names its GPU model for the adapter.
	Features     []string
	GPUs         int // placeholder GPUs per node (default 4)
	ShardsPerGPU int // shards per GPU (default 4; negative: no shards)
	CPUs         int // advertised CPUs (default 16; may exceed the real cores)
	// TaskProlog is the TaskProlog= path in slurm.conf (optional).
	TaskProlog string
}

// Cluster is a running Slurm.
type Cluster struct {
	Root  string   // everything lives under it
	Conf  string   // slurm.conf
	Node  string   // the first node
	Nodes []string // every node, in slurm.conf's order
	// Addrs are the nodes' addresses (NodeAddr), by name.
	Addrs map[string]string
	Opt   Options

	t       testing.TB
	net     *network // several nodes: their namespaces
	gres    string   // each node's Gres= as slurmd registers it
	mu      sync.Mutex
	daemons map[string]*daemon
}

type daemon struct {
	cmd  *exec.Cmd
	done chan struct{}
}

var packages = []string{"slurmctld", "slurmd", "slurm-client", "munge"}

// installOnce installs the packages at most once per test binary.
var installOnce = sync.OnceValue(install)

func install() error {
	// Test binaries of several packages may start clusters at once: one
	// installs, the others wait for it (apt and dpkg take their locks
	// without waiting).
	if lk, err := os.OpenFile(filepath.Join(os.TempDir(), "elastico-slurmtest-install.lock"), os.O_CREATE|os.O_RDWR, 0o600); err == nil {
		defer lk.Close()
		syscall.Flock(int(lk.Fd()), syscall.LOCK_EX)
	}
	var need []string
	for _, p := range packages {
		// "dpkg -s" succeeds for a removed package whose config files are
		// left: ask for the status itself.
		st, err := exec.Command("dpkg-query", "-W", "-f=${Status}", p).Output()
		if err != nil || string(st) != "install ok installed" {
			need = append(need, p)
		}
	}
	if len(need) == 0 {
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("packages %v are missing and installing them needs root", need)
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("packages %v are missing and there is no apt-get", need)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	upd := exec.CommandContext(ctx, "apt-get", "update", "-qq")
	upd.Env = env
	if out, err := upd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get update: %v: %s", err, tail(out))
	}
	args := append([]string{"-o", "DPkg::Lock::Timeout=240", "install", "-y", "-qq", "--no-install-recommends"}, need...)
	in := exec.CommandContext(ctx, "apt-get", args...)
	in.Env = env
	if out, err := in.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install %v: %v: %s", need, err, tail(out))
	}
	return nil
}

func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 600 {
		s = "..." + s[len(s)-600:]
	}
	return s
}

// Start brings a cluster up or skips the test saying why it cannot.
func Start(t testing.TB, opt Options) *Cluster {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("slurmtest: needs root (slurmd runs jobs as their users and mknod needs CAP_MKNOD)")
	}
	if err := installOnce(); err != nil {
		t.Skipf("slurmtest: Slurm cannot be installed here: %v", err)
	}
	if opt.Nodes == 0 {
		opt.Nodes = 1
	}
	names := []string{opt.Node}
	if opt.Nodes == 1 && opt.Node == "" {
		names[0] = "node1"
	}
	var nw *network
	if opt.Nodes > 1 {
		prefix := opt.Node
		if prefix == "" {
			prefix = "node"
		}
		names = nil
		for k := 1; k <= opt.Nodes; k++ {
			names = append(names, prefix+strconv.Itoa(k))
		}
		var err error
		if nw, err = newNetwork(opt.Nodes); err != nil {
			t.Skipf("slurmtest: %d nodes need a network namespace each, which cannot be made here: %v", opt.Nodes, err)
		}
		t.Cleanup(nw.close) // after c.stop: cleanups run last first
	}
	opt.Node = names[0]
	if opt.GPUs == 0 {
		opt.GPUs = 4
	}
	if opt.ShardsPerGPU == 0 {
		opt.ShardsPerGPU = 4
	}
	if opt.CPUs == 0 {
		opt.CPUs = 16
	}
	// munged wants every directory above its socket searchable by all: not
	// a 0700 t.TempDir.
	root, err := os.MkdirTemp("", "elastico-slurm-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Root: root, Conf: filepath.Join(root, "etc", "slurm.conf"), Node: names[0], Nodes: names, Addrs: map[string]string{},
		Opt: opt, t: t, net: nw, daemons: map[string]*daemon{}}
	for k, n := range names {
		c.Addrs[n] = "127.0.0.1"
		if nw != nil {
			c.Addrs[n] = nw.addr[k]
		}
	}
	t.Cleanup(c.stop)
	for _, d := range []string{"etc", "state", "spool", "log", "out", "dev", "munge/etc", "munge/run"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(root, 0o755)
	os.Chmod(filepath.Join(root, "out"), 0o777)
	os.Chmod(filepath.Join(root, "munge", "etc"), 0o700)
	for _, n := range names {
		if err := os.MkdirAll(c.devDir(n), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < opt.GPUs; i++ {
			dev := filepath.Join(c.devDir(n), "nvidia"+strconv.Itoa(i))
			if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, int(195<<8|i%256)); err != nil {
				t.Skipf("slurmtest: mknod %s: %v (placeholder GPUs need CAP_MKNOD)", dev, err)
			}
		}
	}
	ports, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.writeConfig(ports[0], ports[1]); err != nil {
		t.Fatal(err)
	}

	key := filepath.Join(root, "munge", "etc", "munge.key")
	if out, err := exec.Command("mungekey", "-c", "-k", key).CombinedOutput(); err != nil {
		t.Fatalf("mungekey: %v: %s", err, out)
	}
	sock := filepath.Join(root, "munge", "run", "munge.socket")
	c.spawn("munged", exec.Command("munged", "-F", "--key-file="+key, "--socket="+sock,
		"--pid-file="+filepath.Join(root, "munge", "run", "munged.pid"),
		"--log-file="+filepath.Join(root, "log", "munged.log"),
		"--seed-file="+filepath.Join(root, "munge", "etc", "munged.seed")))
	c.waitFor("munged", readyWithin, func() bool { _, err := os.Stat(sock); return err == nil })
	c.startController()
	for k, n := range names {
		if nw == nil {
			c.spawn("slurmd", exec.Command("slurmd", "-D", "-N", n, "-f", c.Conf))
		} else {
			c.spawn("slurmd-"+n, nw.command(k, "slurmd", "-D", "-N", n, "-f", c.Conf))
		}
	}
	c.waitNode(readyWithin)
	return c
}

// devDir holds a node's placeholder GPUs.
func (c *Cluster) devDir(node string) string {
	if c.net == nil {
		return filepath.Join(c.Root, "dev")
	}
	return filepath.Join(c.Root, "dev", node)
}

// slurmds are the names of the slurmd daemons (one per node).
func (c *Cluster) slurmds() []string {
	if c.net == nil {
		return []string{"slurmd"}
	}
	var out []string
	for _, n := range c.Nodes {
		out = append(out, "slurmd-"+n)
	}
	return out
}

// readyWithin bounds the wait for a daemon to come up: seconds when the
// machine is idle, far more when a parallel build loads it. It only stops
// a test whose daemon hangs.
const readyWithin = time.Minute

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	var ports []int
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func (c *Cluster) writeConfig(ctldPort, slurmdPort int) error {
	r, o := c.Root, c.Opt
	var gres []string
	var conf strings.Builder
	for _, n := range c.Nodes {
		on := ""
		if c.net != nil {
			on = "NodeName=" + n + " "
		}
		for i := 0; i < o.GPUs; i++ {
			fmt.Fprintf(&conf, "%sName=gpu Type=gpu%d File=%s/nvidia%d\n", on, i, c.devDir(n), i)
		}
		for i := 0; i < o.GPUs && o.ShardsPerGPU > 0; i++ {
			fmt.Fprintf(&conf, "%sName=shard Type=gpu%d Count=%d File=%s/nvidia%d\n", on, i, o.ShardsPerGPU, c.devDir(n), i)
		}
	}
	for i := 0; i < o.GPUs; i++ {
		gres = append(gres, fmt.Sprintf("gpu:gpu%d:1", i))
	}
	types := "gpu"
	if o.ShardsPerGPU > 0 {
		types = "gpu,shard"
		for i := 0; i < o.GPUs; i++ {
			gres = append(gres, fmt.Sprintf("shard:gpu%d:%d", i, o.ShardsPerGPU))
		}
	}
	c.gres = strings.Join(gres, ",")
	if err := os.WriteFile(filepath.Join(r, "etc", "gres.conf"), []byte(conf.String()), 0o644); err != nil {
		return err
	}
	prolog := ""
	if o.TaskProlog != "" {
		prolog = "TaskProlog=" + o.TaskProlog + "\n"
	}
	// One node: everything on localhost. Several: slurmctld on the
	// bridge, each slurmd at its namespace's address, with its own spool,
	// PID file and log (%n is the node's name).
	ctld, perNode := "localhost", ""
	if c.net != nil {
		ctld, perNode = "localhost("+c.net.host+")", "-%n"
	}
	var nodes strings.Builder
	for k, n := range c.Nodes {
		host, feat := "localhost", ""
		if c.net != nil {
			host = n
		}
		if k < len(o.Features) && o.Features[k] != "" {
			feat = " Features=" + o.Features[k]
		}
		fmt.Fprintf(&nodes, "NodeName=%s NodeHostname=%s NodeAddr=%s CPUs=%d RealMemory=16000%s Gres=%s State=UNKNOWN\n",
			n, host, c.Addrs[n], o.CPUs, feat, c.gres)
	}
	s := fmt.Sprintf(`ClusterName=elastico
SlurmctldHost=%[6]s
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%[1]s/munge/run/munge.socket
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
StateSaveLocation=%[1]s/state
SlurmdSpoolDir=%[1]s/spool%[7]s
SlurmctldPidFile=%[1]s/slurmctld.pid
SlurmdPidFile=%[1]s/slurmd%[7]s.pid
SlurmctldLogFile=%[1]s/log/slurmctld.log
SlurmdLogFile=%[1]s/log/slurmd%[7]s.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=2
%[4]sGresTypes=%[5]s
%[8]sPartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`, r, ctldPort, slurmdPort, prolog, types, ctld, perNode, nodes.String())
	return os.WriteFile(c.Conf, []byte(s), 0o644)
}

// spawn starts a daemon in the foreground of a child process we wait on.
func (c *Cluster) spawn(name string, cmd *exec.Cmd) {
	c.t.Helper()
	logf, err := os.OpenFile(filepath.Join(c.Root, "log", name+".stderr"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	cmd.Env = c.Env()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		c.t.Fatalf("starting %s: %v", name, err)
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		logf.Close()
		close(d.done)
	}()
	c.mu.Lock()
	c.daemons[name] = d
	c.mu.Unlock()
}

// waitFor polls ok until it holds, failing the test with the daemon's log
// when the daemon exits or the deadline passes.
func (c *Cluster) waitFor(name string, limit time.Duration, ok func() bool) {
	c.t.Helper()
	c.mu.Lock()
	d := c.daemons[name]
	c.mu.Unlock()
	deadline := time.Now().Add(limit)
	for !ok() {
		select {
		case <-d.done:
			c.t.Fatalf("%s exited: %s", name, c.logTail(name))
		default:
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s not ready after %v: %s", name, limit, c.logTail(name))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *Cluster) logTail(name string) string {
	var b strings.Builder
	for _, f := range []string{name + ".log", name + ".stderr"} {
		if data, err := os.ReadFile(filepath.Join(c.Root, "log", f)); err == nil {
			b.WriteString("\n--- " + f + ":\n" + tail(data))
		}
	}
	return b.String()
}

func (c *Cluster) startController() {
	c.t.Helper()
	c.spawn("slurmctld", exec.Command("slurmctld", "-D", "-f", c.Conf))
	c.waitFor("slurmctld", readyWithin, func() bool {
		out, err := c.Output("scontrol", "ping")
		return err == nil && strings.Contains(out, "is UP")
	})
}

func (c *Cluster) waitNode(limit time.Duration) {
	c.t.Helper()
	// Registered: a state that takes jobs, and the GRES layout slurmd
	// reports (after a controller restart slurmctld shows "shard:0" until
	// slurmd registers again), on every node.
	for _, d := range c.slurmds() {
		node := strings.TrimPrefix(d, "slurmd-")
		if d == "slurmd" {
			node = c.Node
		}
		c.waitFor(d, limit, func() bool {
			out, _ := c.Output("sinfo", "-h", "-N", "-n", node, "-o", "%T|%G")
			st, gres, _ := strings.Cut(strings.TrimSpace(out), "|")
			switch st {
			case "idle", "mixed", "allocated":
				return gres == c.gres
			}
			return false
		})
	}
}

// RestartController stops slurmctld with SIGTERM (it saves its state),
// starts it again on the same StateSaveLocation, and has slurmd register
// at once (scontrol reconfigure): otherwise a shard job looked at in the
// ~4 s before slurmd re-registers is "never runnable" for ~30 s.
func (c *Cluster) RestartController() {
	c.t.Helper()
	c.stopDaemon("slurmctld", 15*time.Second)
	c.startController()
	if out, err := c.Output("scontrol", "reconfigure"); err != nil {
		c.t.Fatalf("scontrol reconfigure: %v: %s", err, out)
	}
	c.waitNode(readyWithin)
}

func (c *Cluster) stopDaemon(name string, grace time.Duration) {
	c.mu.Lock()
	d := c.daemons[name]
	delete(c.daemons, name)
	c.mu.Unlock()
	if d == nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(grace):
		d.cmd.Process.Kill()
		<-d.done
	}
}

// Env is the environment of a Slurm client command for this cluster.
func (c *Cluster) Env() []string {
	return append(os.Environ(), "SLURM_CONF="+c.Conf)
}

// Output runs a Slurm client command and returns its stdout (and stderr on
// failure).
func (c *Cluster) Output(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.Env()
	cmd.Dir = filepath.Join(c.Root, "out")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String() + errb.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// Sbatch submits a job and returns its ID.
func (c *Cluster) Sbatch(args ...string) (int, error) {
	out, err := c.Output("sbatch", append([]string{"--parsable"}, args...)...)
	if err != nil {
		return 0, err
	}
	id, err := strconv.Atoi(strings.TrimSpace(strings.Split(strings.TrimSpace(out), ";")[0]))
	if err != nil {
		return 0, fmt.Errorf("sbatch printed %q", out)
	}
	return id, nil
}

// stop cancels every job, waits for the queue to drain, then stops the
// daemons (newest first) and removes the root.
func (c *Cluster) stop() {
	c.mu.Lock()
	_, up := c.daemons["slurmctld"]
	c.mu.Unlock()
	if up {
		if out, err := c.Output("squeue", "-h", "-o", "%i"); err == nil && strings.TrimSpace(out) != "" {
			c.Output("scancel", strings.Fields(out)...)
			deadline := time.Now().Add(15 * time.Second)
			for time.Now().Before(deadline) {
				out, err := c.Output("squeue", "-h", "-t", "PENDING,RUNNING,COMPLETING,CONFIGURING,SUSPENDED", "-o", "%i")
				if err != nil || strings.TrimSpace(out) == "" {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}
	for _, name := range append(c.slurmds(), "slurmctld", "munged") {
		c.stopDaemon(name, 10*time.Second)
	}
	if c.t.Failed() {
		for _, name := range append([]string{"slurmctld"}, c.slurmds()...) {
			c.t.Logf("%s log tail:%s", name, c.logTail(name))
		}
		if os.Getenv("SLURMTEST_KEEP") != "" {
			c.t.Logf("slurmtest: kept %s (SLURMTEST_KEEP is set)", c.Root)
			return
		}
	}
	if err := os.RemoveAll(c.Root); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.t.Logf("slurmtest: removing %s: %v", c.Root, err)
	}
}
