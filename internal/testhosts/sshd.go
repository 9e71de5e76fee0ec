package testhosts

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/perfbisect/perfbisect/internal/neighbour"
	"github.com/perfbisect/perfbisect/internal/testenv"
)

// SSHHost is an OpenSSH server on its own loopback address, a runner host
// of start --runner: everything it runs (its sessions, their perfbisect
// and servers) is in a CPU cgroup of its own, on the CPUs it was given,
// with a machine lock of its own (PERFBISECT_MACHINE_LOCK).
type SSHHost struct {
	Host string // "127.0.0.2"
	Port int
	// Config is an ssh client configuration that reaches it as root with
	// the test's key (ssh -F Config).
	Config string
	Lock   string // its machine lock's path

	cg   *neighbour.Cgroup
	cmd  *exec.Cmd
	log  testenv.Buffer
	done chan struct{}
}

// SSHOptions shape a test host: the CPUs its processes run on (taskset -c
// list; "" all) and a CPU quota (CPUs' worth of time, 0.5 is half of one;
// 0 none): a slower host.
type SSHOptions struct {
	CPUs  string
	Quota float64
}

// StartSSHD starts sshd on host (a loopback address) at port 2222, root
// allowed with a key made for the test, and waits until it answers. It
// needs root (the cgroup, sshd's privilege separation) and sshd
// (openssh-server); the test fails otherwise. Everything it ran is killed
// when the test ends.
func StartSSHD(t T, host string, o SSHOptions) *SSHHost {
	t.Helper()
	if !strings.HasPrefix(host, "127.") {
		t.Fatalf("test host %s: want a loopback address (127.0.0.2, ...)", host)
	}
	sshd := "/usr/sbin/sshd"
	if _, err := os.Stat(sshd); err != nil {
		t.Fatalf("sshd (openssh-server) is not installed: %v", err)
	}
	dir, err := os.MkdirTemp("", "pb-sshd-"+host+"-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, k := range []string{"host_key", "client_key"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub, _ := os.ReadFile(filepath.Join(dir, "client_key.pub"))
	auth := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(auth, pub, 0o600); err != nil {
		t.Fatalf("%v", err)
	}
	_ = os.MkdirAll("/run/sshd", 0o755) // privilege separation's directory
	h := &SSHHost{Host: host, Port: 2222, Lock: filepath.Join(dir, "machine.lock"), done: make(chan struct{})}
	conf := filepath.Join(dir, "sshd_config")
	err = os.WriteFile(conf, []byte(fmt.Sprintf(`ListenAddress %s:%d
HostKey %s
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
LogLevel ERROR
SetEnv PERFBISECT_MACHINE_LOCK=%s
`, host, h.Port, filepath.Join(dir, "host_key"), auth, h.Lock)), 0o600)
	if err != nil {
		t.Fatalf("%v", err)
	}
	h.Config = filepath.Join(dir, "ssh_config")
	err = os.WriteFile(h.Config, []byte(fmt.Sprintf(`Host %s
	User root
	Port %d
	IdentityFile %s
	IdentitiesOnly yes
	UserKnownHostsFile /dev/null
	StrictHostKeyChecking no
	LogLevel ERROR
`, host, h.Port, filepath.Join(dir, "client_key"))), 0o600)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if h.cg, err = neighbour.New(fmt.Sprintf("pb-testhost-%s-%d", strings.ReplaceAll(host, ".", "-"), os.Getpid())); err != nil {
		t.Fatalf("test host %s: %v", host, err)
	}
	t.Cleanup(func() { _ = h.cg.Remove() })
	if o.Quota > 0 {
		if err := h.cg.Limit(o.Quota); err != nil {
			t.Fatalf("test host %s: CPU quota: %v", host, err)
		}
	}
	argv := []string{sshd, "-D", "-e", "-f", conf}
	if o.CPUs != "" {
		argv = append([]string{"taskset", "-c", o.CPUs}, argv...)
	}
	h.cmd = exec.Command(argv[0], argv[1:]...)
	h.cmd.Stdout, h.cmd.Stderr = &h.log, &h.log
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := h.cmd.Start(); err != nil {
		t.Fatalf("sshd on %s: %v", host, err)
	}
	if err := h.cg.Add(h.cmd.Process.Pid); err != nil {
		_ = h.cmd.Process.Kill()
		t.Fatalf("test host %s: into its cgroup: %v", host, err)
	}
	go func() { _ = h.cmd.Wait(); close(h.done) }()
	t.Cleanup(h.Kill)
	addr := net.JoinHostPort(host, strconv.Itoa(h.Port))
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return h
		}
		select {
		case <-h.done:
			t.Fatalf("sshd on %s exited: %s", host, h.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd on %s does not answer after 10s (%v): %s", host, err, h.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill kills the host: sshd and every process of its cgroup (its
// sessions, their perfbisect and servers), as a machine that dies. Safe
// to call twice.
func (h *SSHHost) Kill() {
	if h.cmd.Process != nil {
		_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	}
	killCgroup(h.cg.Dir())
	<-h.done
}

// Processes are the pids of the host's cgroup.
func (h *SSHHost) Processes() []int { return cgroupProcs(h.cg.Dir()) }

// killCgroup kills every process of the cgroup at dir until none is left
// (or 2 s have passed): a test host that dies.
func killCgroup(dir string) {
	for i := 0; i < 100; i++ {
		pids := cgroupProcs(dir)
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cgroupProcs are the pids of the cgroup at dir.
func cgroupProcs(dir string) []int {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(f); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// Log is what sshd logged.
func (h *SSHHost) Log() string { return h.log.String() }
