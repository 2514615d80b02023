package adapter

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// CLI talks to Slurm through its client commands (squeue, sinfo, scontrol),
// as root or as SlurmUser. It works on Slurm 22.05, whose scontrol has no
// --json yet.
type CLI struct {
	// Conf is the slurm.conf path, passed as SLURM_CONF; empty: the
	// environment's SLURM_CONF or the default path.
	Conf string
	// Bin is the directory of the client commands; empty: $PATH.
	Bin string
	// Timeout bounds one command (default 20 s). Without slurmctld a client
	// command retries for about 10 s before it fails.
	Timeout time.Duration
}

var _ Slurm = (*CLI)(nil)

func (c *CLI) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	t := c.Timeout
	if t <= 0 {
		t = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	if c.Bin != "" {
		name = c.Bin + "/" + name
	}
	cmd := exec.CommandContext(ctx, name, args...)
	if c.Conf != "" {
		cmd.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		return out.Bytes(), &CommandError{Command: name + " " + strings.Join(args, " "), Err: err, Stderr: msg}
	}
	return out.Bytes(), nil
}

// CommandError is a Slurm client command that failed.
type CommandError struct {
	Command string
	Err     error
	Stderr  string
}

func (e *CommandError) Error() string {
	return fmt.Sprintf("adapter: %s: %v: %s", e.Command, e.Err, e.Stderr)
}

func (e *CommandError) Unwrap() error { return e.Err }

// Jobs runs squeue --json. squeue ignores -j and -t with --json in 22.05, so
// the adapter filters by itself.
func (c *CLI) Jobs(ctx context.Context) ([]Job, error) {
	out, err := c.run(ctx, "squeue", "--json")
	if err != nil {
		return nil, err
	}
	return DecodeJobs(bytes.NewReader(out))
}

// Nodes runs sinfo --json.
func (c *CLI) Nodes(ctx context.Context) ([]Node, error) {
	out, err := c.run(ctx, "sinfo", "--json")
	if err != nil {
		return nil, err
	}
	return DecodeNodes(bytes.NewReader(out))
}

// Update runs scontrol update JobId=id fields...; each field is one
// argument ("AdminComment=two words" needs no quoting).
func (c *CLI) Update(ctx context.Context, id int, fields ...string) error {
	_, err := c.run(ctx, "scontrol", append([]string{"update", "JobId=" + strconv.Itoa(id)}, fields...)...)
	return err
}

// Hold runs scontrol hold.
func (c *CLI) Hold(ctx context.Context, id int) error {
	_, err := c.run(ctx, "scontrol", "hold", strconv.Itoa(id))
	return err
}

// Release runs scontrol release; releasing a job that is not held succeeds.
func (c *CLI) Release(ctx context.Context, id int) error {
	_, err := c.run(ctx, "scontrol", "release", strconv.Itoa(id))
	return err
}

// RequeueHold runs scontrol requeuehold.
func (c *CLI) RequeueHold(ctx context.Context, id int) error {
	_, err := c.run(ctx, "scontrol", "requeuehold", strconv.Itoa(id))
	return err
}
