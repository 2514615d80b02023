package slurmtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
)

// network is what lets several slurmd run on one host: Debian's slurmd is
// built without --enable-multiple-slurmd, so two on one network stack
// would bind the same port. Each runs in a network namespace of its own,
// joined to the host (where slurmctld and the clients run) by a veth pair
// on a bridge. A bridge forwards at layer 2: the host's ip_forward is left
// as it is.
type network struct {
	bridge string
	host   string   // the bridge's address: slurmctld's
	ns     []string // one namespace per node
	addr   []string // each node's address in its namespace
	veth   []string // the host ends
}

// newNetwork builds n namespaces on a fresh bridge, in a /24 of 10.0.0.0/8
// the host does not use. On error it removes what it made.
func newNetwork(n int) (*network, error) {
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("no %s (iproute2, util-linux)", tool)
		}
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	tag := hex.EncodeToString(b[:3])
	used, err := exec.Command("ip", "-4", "-o", "addr").Output()
	if err != nil {
		return nil, fmt.Errorf("ip addr: %v", err)
	}
	prefix := ""
	for k := 0; k < 64; k++ {
		p := fmt.Sprintf("10.%d.%d.", 200+(int(b[3])+k)%50, (int(b[0])+7*k)%256)
		if !strings.Contains(string(used), " "+p) {
			prefix = p
			break
		}
	}
	if prefix == "" {
		return nil, fmt.Errorf("no free /24 in 10.200.0.0/13")
	}
	w := &network{bridge: "elbr" + tag, host: prefix + "1"}
	if err := w.run("link", "add", w.bridge, "type", "bridge"); err != nil {
		return nil, err
	}
	if err := w.setup(n, tag, prefix); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *network) setup(n int, tag, prefix string) error {
	if err := w.run("addr", "add", w.host+"/24", "dev", w.bridge); err != nil {
		return err
	}
	if err := w.run("link", "set", w.bridge, "up"); err != nil {
		return err
	}
	for k := 0; k < n; k++ {
		ns, veth, addr := fmt.Sprintf("elastico-%s-%d", tag, k+1), fmt.Sprintf("elv%s%d", tag, k+1), fmt.Sprintf("%s%d", prefix, k+2)
		if err := w.run("netns", "add", ns); err != nil {
			return err
		}
		w.ns = append(w.ns, ns)
		if err := w.run("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns); err != nil {
			return err
		}
		w.veth = append(w.veth, veth)
		w.addr = append(w.addr, addr)
		for _, args := range [][]string{
			{"link", "set", veth, "master", w.bridge, "up"},
			{"-n", ns, "addr", "add", addr + "/24", "dev", "eth0"},
			{"-n", ns, "link", "set", "eth0", "up"},
			{"-n", ns, "link", "set", "lo", "up"},
		} {
			if err := w.run(args...); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *network) run(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// command runs bin in node k's namespace. nsenter joins the namespace and
// execs bin (same PID); "ip netns exec" would remount /sys, where slurmd
// needs the host's cgroup mount.
func (w *network) command(k int, bin string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + w.ns[k], bin}, args...)...)
}

// close removes the namespaces (their veth ends go with them) and the
// bridge. Every process in them must have stopped.
func (w *network) close() {
	for _, ns := range w.ns {
		exec.Command("ip", "netns", "del", ns).Run()
	}
	for _, v := range w.veth {
		exec.Command("ip", "link", "del", v).Run() // gone already, unless the namespace was not
	}
	exec.Command("ip", "link", "del", w.bridge).Run()
}
