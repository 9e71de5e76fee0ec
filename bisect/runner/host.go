// Package runner takes a session's runs on runner hosts: a run becomes a
// task (Task) that `perfbisect task run` carries out on a host, against an
// install tree shipped there once and kept under the build cache's key (a
// content address), and answers with a Result. Hosts are reached through
// an Engine: SSH for plain hosts, Slurm's srun for a cluster. Measurer is
// the bisect.HostMeasurer of a session with runner hosts: it builds here,
// ships each build to a host once, sends a round's tasks to every host at
// once and reads their results back; a host that stops answering is taken
// out and its runs go to the others.
package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"

	"github.com/mattn/go-shellwords"

	"github.com/perfbisect/perfbisect/internal/cliflag"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// An Engine runs perfbisect's task command (`perfbisect task ARGS`) on one
// runner host. Its error wraps ErrUnreachable when the host could not be
// reached or was lost during the command (the host's problem, never the
// revision's); a command that ran and failed returns an *ExitError.
type Engine interface {
	// Task runs `perfbisect task args...` on the host, stdin to its
	// standard input, its standard output to stdout, its standard error to
	// stderr, until it ends or ctx does.
	Task(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
	// String names the host as the user gave it ("ssh://127.0.0.2").
	String() string
}

// ErrUnreachable is what an Engine's error is (errors.Is) when the host
// could not be reached or went away during a command, and a Measurer's
// when a host's machine failed: the host is out, not the revision.
var ErrUnreachable = errors.New("runner host unreachable")

// hostError is a host's failure, worded for "runner host X lost: ...";
// errors.Is(err, ErrUnreachable).
type hostError struct{ why string }

func (e *hostError) Error() string        { return e.why }
func (e *hostError) Is(target error) bool { return target == ErrUnreachable }

// lostf is a hostError.
func lostf(format string, args ...any) error { return &hostError{fmt.Sprintf(format, args...)} }

// ExitError is a task command that ran on the host and exited non-zero.
type ExitError struct {
	Code   int
	Stderr string // its last lines
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("perfbisect task exited %d: %s", e.Code, strings.TrimSpace(e.Stderr))
}

// Host is a runner host as given (--runner): how to reach it and where
// its perfbisect keeps install trees and datadirs.
type Host struct {
	// Name is the host and its root (ssh://user@bench1:2222/srv/pb; not
	// the query): the session's identity and its runs' Host.
	Name   string
	Label  string // how progress lines name it ("127.0.0.2", "slurm:node1")
	Engine Engine
	// Root is the task command's directory on the host (--root; "" for
	// its default).
	Root string
}

// ParseHost reads a runner host: ssh://[USER@]HOST[:PORT][/ROOT],
// slurm://NODE[/ROOT] (srun on that node of the cluster this machine
// submits to), or a bare HOST (SSH). A query sets the host's perfbisect
// (?perfbisect=PATH; default: perfbisect in its PATH) and, for Slurm, the
// partition (?partition=P). ROOT is an absolute path on the host. Errors
// (usage) name the input and what a valid one looks like.
func ParseHost(s string) (Host, error) {
	bad := func(why string) (Host, error) {
		return Host{}, usage.Errorf("{runner} %q: %s; want ssh://[user@]host[:port][/root], slurm://node[/root] or a host name", s, why)
	}
	raw := strings.TrimSpace(s)
	if raw == "" {
		return bad("empty")
	}
	if !strings.Contains(raw, "://") {
		if strings.ContainsAny(raw, "/:?") {
			return bad("a bare host name has no / : or ?: write the URL whole")
		}
		raw = "ssh://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad(err.Error())
	}
	if u.Hostname() == "" {
		return bad("no host")
	}
	q := u.Query()
	for k := range q {
		if k != "perfbisect" && (k != "partition" || u.Scheme != "slurm") {
			return bad(fmt.Sprintf("unknown setting %q", k))
		}
	}
	exe := q.Get("perfbisect")
	if exe == "" {
		exe = "perfbisect"
	}
	if u.Path != "" {
		u.Path = path.Clean(u.Path) // /srv/pb/ and /srv/pb are one root
	}
	if u.Path == "/" {
		u.Path = ""
	}
	h := Host{Name: u.Scheme + "://" + u.Host + u.Path, Label: u.Host, Root: u.Path}
	if u.User != nil {
		h.Label = u.User.Username() + "@" + h.Label
		h.Name = u.Scheme + "://" + h.Label + u.Path
	}
	switch u.Scheme {
	case "ssh":
		h.Engine = &SSH{Addr: u.Hostname(), Port: u.Port(), User: u.User.Username(), Perfbisect: exe, name: h.Name}
	case "slurm":
		if u.Port() != "" || u.User != nil {
			return bad("a Slurm node takes no user or port")
		}
		h.Engine = &Slurm{Node: u.Hostname(), Partition: q.Get("partition"), Perfbisect: exe, name: h.Name}
		h.Label = "slurm:" + u.Hostname()
	default:
		return bad(fmt.Sprintf("unknown kind %q", u.Scheme))
	}
	return h, nil
}

// SSH reaches a host with the system's ssh (its config, keys and agent
// apply), in batch mode (a host that asks for a password is unreachable).
// The environment's PERFBISECT_SSH replaces "ssh" (split as a shell
// would: "ssh -F /path/config"), as GIT_SSH_COMMAND does for git.
type SSH struct {
	Addr, Port, User string
	Perfbisect       string // the host's perfbisect
	name             string
}

func (s *SSH) String() string { return s.name }

// sshFailed is ssh's own exit status: it could not connect or lost the
// connection (the remote command's status is passed through otherwise).
const sshFailed = 255

// Task runs the task command over ssh.
func (s *SSH) Task(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	argv := []string{"ssh"}
	if v := os.Getenv("PERFBISECT_SSH"); strings.TrimSpace(v) != "" {
		w, err := shellwords.Parse(v)
		if err != nil || len(w) == 0 {
			return fmt.Errorf("PERFBISECT_SSH %q: %v", v, err)
		}
		argv = w
	}
	argv = append(argv, "-o", "BatchMode=yes", "-o", "ConnectTimeout=15", "-o", "ServerAliveInterval=10", "-o", "ServerAliveCountMax=3")
	if s.Port != "" {
		argv = append(argv, "-p", s.Port)
	}
	dest := s.Addr
	if s.User != "" {
		dest = s.User + "@" + dest
	}
	remote := []string{cliflag.ShellQuote(s.Perfbisect), "task"}
	for _, a := range args {
		remote = append(remote, cliflag.ShellQuote(a))
	}
	argv = append(argv, dest, "--", strings.Join(remote, " "))
	return runCommand(ctx, argv, stdin, stdout, stderr, func(code int, tail string) error {
		if code == sshFailed {
			line := strings.TrimPrefix(lastLine(tail), "ssh: ") // ssh's own; the lines before are the task's
			if strings.TrimSpace(line) == "" {
				line = "the connection ended (exit 255)"
			}
			return lostf("ssh: %s", line)
		}
		return nil
	})
}

// Slurm runs the task command as a job step on one node of a Slurm
// cluster (srun --nodelist NODE): stdin and stdout pass through srun, so
// the cluster needs no shared file system.
type Slurm struct {
	Node, Partition string
	Perfbisect      string // the node's perfbisect
	name            string
}

func (s *Slurm) String() string { return s.name }

// Task runs the task command through srun.
func (s *Slurm) Task(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	argv := []string{"srun", "--nodelist", s.Node, "--nodes", "1", "--ntasks", "1", "--quiet", "--kill-on-bad-exit=1", "--job-name", "perfbisect-task"}
	if s.Partition != "" {
		argv = append(argv, "--partition", s.Partition)
	}
	argv = append(argv, "--", s.Perfbisect, "task")
	argv = append(argv, args...)
	return runCommand(ctx, argv, stdin, stdout, stderr, func(code int, tail string) error {
		if srunFailed(tail) {
			return lostf("%s", tail)
		}
		return nil
	})
}

// runCommand runs argv with the streams; a non-zero exit is the host's
// (unreachable says so, from the exit code and the last lines of
// stderr) or an *ExitError. A program that is missing here is said.
func runCommand(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer, unreachable func(code int, tail string) error) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var tail tailBuffer
	cmd.Stdout = stdout
	cmd.Stderr = io.MultiWriter(stderr, &tail)
	cmd.WaitDelay = 5 * time.Second
	var in io.WriteCloser
	if stdin != nil {
		// Copied by a goroutine of ours, which Wait does not wait for:
		// a task's input stays open until its result is read.
		var err error
		if in, err = cmd.StdinPipe(); err != nil {
			return err
		}
	}
	err := cmd.Start()
	if err == nil && in != nil {
		go func() {
			_, _ = io.Copy(in, stdin)
			in.Close()
		}()
	}
	if err == nil {
		err = cmd.Wait()
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if errors.Is(err, exec.ErrNotFound) {
			return fmt.Errorf("%s is not installed on this machine (it reaches the runner hosts): %w", argv[0], err)
		}
		return err
	}
	code := ee.ExitCode()
	if uerr := unreachable(code, tail.String()); uerr != nil {
		return uerr
	}
	if code < 0 {
		return lostf("%s killed: %v", argv[0], err)
	}
	return &ExitError{Code: code, Stderr: tail.String()}
}

// tailBuffer keeps the last lines written to it.
type tailBuffer struct{ b bytes.Buffer }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b.Write(p)
	if t.b.Len() > 8192 {
		rest := t.b.Bytes()[t.b.Len()-4096:]
		t.b = *bytes.NewBuffer(append([]byte(nil), rest...))
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	lines := strings.Split(strings.TrimSpace(t.b.String()), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}

// srunFailed reports whether srun's last lines say it could not run the
// step or lost it (not the step's own exit, "task 0: Exited with exit code
// N", which srun passes through).
func srunFailed(tail string) bool {
	for _, line := range strings.Split(tail, " | ") {
		switch {
		case strings.Contains(line, "Exited with exit code"), strings.Contains(line, "execve()"):
			// The step's own end, or its program missing on the node.
		case strings.Contains(line, "srun: error:"), strings.Contains(line, "Unable to allocate"), strings.Contains(line, "Node failure"),
			strings.Contains(line, "Job step aborted"), strings.Contains(line, "Communication connection failure"):
			return true
		}
	}
	return false
}

// lastLine is the last of the " | "-joined lines of a tailBuffer.
func lastLine(tail string) string {
	if i := strings.LastIndex(tail, " | "); i >= 0 {
		return tail[i+3:]
	}
	return tail
}
