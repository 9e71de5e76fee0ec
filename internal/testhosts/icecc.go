package testhosts

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// IceccFarm is an icecream farm of test hosts on a private Network: the
// scheduler on one host, this machine's iceccd on another (it takes no
// remote compiles: the build's compiles go to the farm or run here), and
// the compile hosts.
type IceccFarm struct {
	// Socket is this machine's iceccd's socket: a build finds its daemon
	// there through ICECC_TEST_SOCKET.
	Socket string
	Hosts  []*IceccHost // the compile hosts

	dir       string
	local     *daemon
	scheduler *daemon
}

// IceccHost is one compile host of an IceccFarm.
type IceccHost struct {
	*NetHost
	Slots int
	d     *daemon
}

// daemon is an icecream process in a test host's namespace.
type daemon struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// StartIcecc starts an icecream farm with hosts compile hosts of slots
// compiles each on n, and waits until every daemon is logged in to the
// scheduler. The daemons drop root for the icecc user (Debian's icecc
// package makes it); their files live in a directory that user can reach.
// Everything is stopped and removed when the test ends.
func StartIcecc(t T, n *Network, hosts, slots int) *IceccFarm {
	t.Helper()
	u, err := user.Lookup("icecc")
	if err != nil {
		t.Fatalf("no icecc user (apt-get install icecc makes it): %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir, err := os.MkdirTemp("", "perfbisect-icecc-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	mkdir := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatalf("%v", err)
		}
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatalf("%v", err)
		}
		return p
	}
	logs, socks := mkdir("logs"), mkdir("sockets")
	f := &IceccFarm{dir: dir, Socket: filepath.Join(socks, "local")}
	netname := "perfbisect" + strconv.Itoa(os.Getpid())
	sh := n.Host(t)
	f.scheduler = start(t, sh, filepath.Join(logs, "scheduler.log"), nil, "icecc-scheduler", "-n", netname, "-l", filepath.Join(logs, "scheduler.log"), "-vv")
	startD := func(h *NetHost, name string, extra ...string) *daemon {
		args := append([]string{"-s", sh.IP, "-n", netname, "-N", name, "-b", mkdir("envs-" + name),
			"-l", filepath.Join(logs, name+".log"), "-vv"}, extra...)
		return start(t, h, filepath.Join(logs, name+".log"), []string{"ICECC_TEST_SOCKET=" + filepath.Join(socks, name)}, "iceccd", args...)
	}
	f.local = startD(n.Host(t), "local", "--no-remote", "-m", "0")
	for i := 0; i < hosts; i++ {
		h := n.Host(t)
		f.Hosts = append(f.Hosts, &IceccHost{NetHost: h, Slots: slots, d: startD(h, fmt.Sprintf("host%d", i+1), "-m", fmt.Sprint(slots))})
	}
	// Every daemon logs in to the scheduler within a few of its 3-second
	// discovery rounds.
	all := append([]*daemon{f.local}, f.hostDaemons()...)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		ready := true
		for _, d := range all {
			select {
			case <-d.done:
				t.Fatalf("%s exited:\n%s", d.cmd, d.Log())
			default:
			}
			if !strings.Contains(d.Log(), "Connected to scheduler") {
				ready = false
			}
		}
		if ready {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("the icecream daemons did not log in to the scheduler on %s in 30s:\n%s", sh.IP, f.Logs())
		}
	}
}

func (f *IceccFarm) hostDaemons() []*daemon {
	var ds []*daemon
	for _, h := range f.Hosts {
		ds = append(ds, h.d)
	}
	return ds
}

// start runs name in h's namespace in its own process group; args make it
// log to log.
func start(t T, h *NetHost, log string, env []string, name string, args ...string) *daemon {
	t.Helper()
	d := &daemon{cmd: h.Command(name, args...), log: log, done: make(chan struct{})}
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { _ = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(d.kill)
	return d
}

// kill kills the daemon with its process group (a host that dies) and
// waits for it; safe to call twice.
func (d *daemon) kill() {
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.done
}

// Log is what the daemon logged so far.
func (d *daemon) Log() string {
	b, _ := os.ReadFile(d.log)
	return string(b)
}

// Kill kills the compile host's daemon and its compiles at once.
func (h *IceccHost) Kill() { h.d.kill() }

// Compiled counts the compiles the host's daemon completed for a client.
func (h *IceccHost) Compiled() int {
	return strings.Count(h.d.Log(), "Remote compilation completed with exit code 0")
}

// Logs are every daemon's log, for a failing test.
func (f *IceccFarm) Logs() string {
	var b strings.Builder
	for _, d := range append([]*daemon{f.scheduler, f.local}, f.hostDaemons()...) {
		fmt.Fprintf(&b, "--- %s\n%s\n", d.log, d.Log())
	}
	return b.String()
}
