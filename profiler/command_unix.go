//go:build unix

package profiler

import (
	"os/exec"
	"syscall"
)

// The program runs in its own process group, so that stopping it stops the
// workers it spawned (data loaders, engine processes) too.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func terminate(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }

func kill(cmd *exec.Cmd) { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
