package testhosts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/perfbisect/perfbisect/internal/neighbour"
	"github.com/perfbisect/perfbisect/internal/testenv"
)

// SlurmCluster is a one-node Slurm cluster on this machine: munged with a
// key made for the test, slurmctld on 127.0.0.1 and one slurmd, the node,
// on its own loopback address. What the node runs (its job steps, their
// perfbisect and servers) is in a CPU cgroup of its own, on the CPUs it
// was given, with a machine lock of its own (a TaskProlog sets
// PERFBISECT_MACHINE_LOCK).
type SlurmCluster struct {
	Node string // the node's name ("pbnode1")
	Addr string // its address
	// Conf is the cluster's slurm.conf: SLURM_CONF for srun.
	Conf string
	Lock string // the node's machine lock

	cg      *neighbour.Cgroup
	daemons []*exec.Cmd
	slurmd  *exec.Cmd
	logs    map[string]*testenv.Buffer
	dir     string
}

// StartSlurm starts munged, slurmctld and the slurmd of node at addr (a
// loopback address), the node's processes under o (its CPUs, a quota), and
// waits until srun runs a step there. It needs root and Debian's
// slurmctld, slurmd, slurm-client and munge; the test fails otherwise.
// Everything is killed when the test ends.
func StartSlurm(t T, node, addr string, o SSHOptions) *SlurmCluster {
	t.Helper()
	for _, p := range []string{"munged", "slurmctld", "slurmd", "srun"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is not installed (slurmctld, slurmd, slurm-client, munge): %v", p, err)
		}
	}
	dir, err := os.MkdirTemp("", "pb-slurm-")
	if err != nil {
		t.Fatalf("%v", err)
	}
	_ = os.Chmod(dir, 0o755) // munged wants its socket's directories searchable
	c := &SlurmCluster{Node: node, Addr: addr, dir: dir, Lock: filepath.Join(dir, "machine.lock"), logs: map[string]*testenv.Buffer{}}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{"munge", "state", "spool"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatalf("%v", err)
		}
	}
	key := make([]byte, 1024)
	if f, err := os.Open("/dev/urandom"); err == nil {
		_, _ = f.Read(key)
		f.Close()
	}
	if err := os.WriteFile(filepath.Join(dir, "munge", "key"), key, 0o400); err != nil {
		t.Fatalf("%v", err)
	}
	sock := filepath.Join(dir, "munge", "sock")
	host, _ := os.Hostname()
	prolog := filepath.Join(dir, "prolog.sh")
	if err := os.WriteFile(prolog, []byte("#!/bin/sh\necho export PERFBISECT_MACHINE_LOCK="+c.Lock+"\n"), 0o755); err != nil {
		t.Fatalf("%v", err)
	}
	c.Conf = filepath.Join(dir, "slurm.conf")
	conf := fmt.Sprintf(`ClusterName=pbtest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=%[2]s
StateSaveLocation=%[3]s/state
SlurmdSpoolDir=%[3]s/spool
SlurmctldPidFile=%[3]s/slurmctld.pid
SlurmdPidFile=%[3]s/slurmd.pid
ProctrackType=proctrack/pgid
TaskPlugin=task/none
TaskProlog=%[4]s
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
MpiDefault=none
MailProg=/bin/true
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=%[5]s NodeAddr=%[6]s NodeHostname=%[1]s CPUs=%[7]d State=UNKNOWN
PartitionName=pb Nodes=%[5]s Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
`, host, sock, dir, prolog, node, addr, max(1, strings.Count(o.CPUs, ",")+1))
	if err := os.WriteFile(c.Conf, []byte(conf), 0o644); err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(c.kill)
	c.start(t, "munged", "munged", "-F", "--force", "--key-file="+filepath.Join(dir, "munge", "key"), "--socket="+sock,
		"--pid-file="+filepath.Join(dir, "munge", "pid"), "--seed-file="+filepath.Join(dir, "munge", "seed"), "--log-file="+filepath.Join(dir, "munge", "log"))
	waitFile(t, sock)
	c.start(t, "slurmctld", "slurmctld", "-D", "-f", c.Conf)
	if c.cg, err = neighbour.New(fmt.Sprintf("pb-testhost-%s-%d", node, os.Getpid())); err != nil {
		t.Fatalf("test host %s: %v", node, err)
	}
	t.Cleanup(func() { _ = c.cg.Remove() })
	if o.Quota > 0 {
		if err := c.cg.Limit(o.Quota); err != nil {
			t.Fatalf("test host %s: CPU quota: %v", node, err)
		}
	}
	argv := []string{"slurmd", "-D", "-f", c.Conf, "-N", node}
	if o.CPUs != "" {
		argv = append([]string{"taskset", "-c", o.CPUs}, argv...)
	}
	c.slurmd = c.start(t, "slurmd", argv...)
	if err := c.cg.Add(c.slurmd.Process.Pid); err != nil {
		t.Fatalf("test host %s: into its cgroup: %v", node, err)
	}
	// Up when a step runs there.
	var out []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		cmd := exec.Command("srun", "--nodelist", node, "-N1", "-n1", "--quiet", "--immediate=5", "true")
		cmd.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
		if out, err = cmd.CombinedOutput(); err == nil {
			return c
		}
	}
	t.Fatalf("slurm node %s: no step ran in 30s (%v: %s)\nslurmctld: %s\nslurmd: %s", node, err, out, c.logs["slurmctld"], c.logs["slurmd"])
	return nil
}

func (c *SlurmCluster) start(t T, name string, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	b := &testenv.Buffer{}
	c.logs[name] = b
	cmd.Stdout, cmd.Stderr = b, b
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { _ = cmd.Wait() }()
	c.daemons = append(c.daemons, cmd)
	return cmd
}

// Kill kills the node (slurmd and every process of its cgroup), as a
// machine that dies; the controller stays.
func (c *SlurmCluster) Kill() {
	if c.slurmd != nil && c.slurmd.Process != nil {
		_ = syscall.Kill(-c.slurmd.Process.Pid, syscall.SIGKILL)
	}
	if c.cg != nil {
		killCgroup(c.cg.Dir())
	}
}

// kill ends the node and the daemons.
func (c *SlurmCluster) kill() {
	c.Kill()
	for _, d := range c.daemons {
		if d.Process != nil {
			_ = syscall.Kill(-d.Process.Pid, syscall.SIGKILL)
		}
	}
}

// Processes are the pids of the node's cgroup (slurmd among them while it
// lives).
func (c *SlurmCluster) Processes() []int {
	if c.cg == nil {
		return nil
	}
	return cgroupProcs(c.cg.Dir())
}

// Log is what the daemon name (munged, slurmctld, slurmd) said.
func (c *SlurmCluster) Log(name string) string {
	if b := c.logs[name]; b != nil {
		return b.String()
	}
	return ""
}

// waitFile waits up to 10 s for p to exist.
func waitFile(t T, p string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(p); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear in 10s", p)
}
