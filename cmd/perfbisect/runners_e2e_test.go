package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/internal/testenv"
	"github.com/perfbisect/perfbisect/internal/testhosts"
)

// hostRuns returns the hosts that measured the runs stored for the state
// directory's latest start session, in order.
func hostRuns(t *testing.T, state string) []string {
	t.Helper()
	_, runs := latestRuns(t, state)
	var out []string
	for _, r := range runs {
		out = append(out, r.Host)
	}
	return out
}

// workOn lists the processes of a test host that are measurements (its
// daemons, sshd or slurmd and slurmstepd, left out), as "pid command".
func workOn(pids []int) []string {
	var out []string
	for _, p := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p))
		if err != nil {
			continue
		}
		switch c := strings.TrimSpace(string(b)); c {
		case "sshd", "slurmd", "slurmstepd", "taskset":
		default:
			out = append(out, fmt.Sprintf("%d %s", p, c))
		}
	}
	return out
}

// TestBisectOnRunnerHosts: a bisection whose runs are taken on two runner
// hosts, one reached over SSH (a real sshd on 127.0.0.2, under a CPU quota:
// slower, so each host's runs have their own level) and one through a real
// Slurm cluster (slurmctld, and slurmd as node pbnode1 on 127.0.0.4), each
// on a CPU of its own and measuring its own good and bad with the install
// trees shipped there; the coordinator is killed with SIGKILL (nothing
// outlives it on the hosts), resumed, and the SSH host is killed during
// the resume (its runs go to the other): the fixture's culprit is named,
// and the store keeps every run, from both hosts.
func TestBisectOnRunnerHosts(t *testing.T) {
	testenv.Machine(t)
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	if os.Geteuid() != 0 {
		t.Skip("test hosts need root (sshd, slurmd, cgroups)")
	}
	began := time.Now()
	defer func() { t.Logf("%.0fs in all", time.Since(began).Seconds()) }()
	repo, culprit := makeFixture(t, "-n", "8", "--culprit-pos", "5", "--broken-pos", "0")
	ssh := testhosts.StartSSHD(t, "127.0.0.2", testhosts.SSHOptions{CPUs: "0", Quota: 0.6})
	slurm := testhosts.StartSlurm(t, "pbnode1", "127.0.0.4", testhosts.SSHOptions{CPUs: "1"})
	env := []string{"PERFBISECT_SSH=ssh -F " + ssh.Config, "SLURM_CONF=" + slurm.Conf}
	roots := t.TempDir()
	n2, n3 := "ssh://127.0.0.2"+filepath.Join(roots, "h2"), "slurm://pbnode1"+filepath.Join(roots, "h3") // the runs' Host
	r2, r3 := n2+"?perfbisect="+binary, n3+"?perfbisect="+binary
	state := t.TempDir()
	start := func(state string, runners ...string) []string {
		a := []string{"start", "--repo", repo, "--good", "good", "--bad", "bad", "--state-dir", state, "--no-explain"}
		for _, r := range runners {
			a = append(a, "--runner", r)
		}
		return append(a, smallRun...)
	}
	args := start(state, r2, r3)

	// A host that runs another perfbisect is refused, naming it.
	other := filepath.Join(t.TempDir(), "perfbisect")
	if b, err := os.ReadFile(binary); err != nil || os.WriteFile(other, append(b, 0), 0o755) != nil {
		t.Fatal("copying the binary")
	}
	bad := perfbisect(t, env, start(t.TempDir(), strings.Replace(r2, binary, other, 1), r3)...)
	if bad.code != exitUsage || !strings.Contains(bad.stderr, "runs another perfbisect") || !strings.Contains(bad.stderr, "127.0.0.2") {
		t.Errorf("a host with another perfbisect: exit %d, want 2 naming it:\n%s", bad.code, bad.stderr)
	}

	// Killed after 6 runs: nothing stays running on the hosts.
	cmd := command(t, args...)
	cmd.Env = append(os.Environ(), env...)
	var first bytes.Buffer
	cmd.Stdout, cmd.Stderr = &first, &first
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the killed start's output:\n%s", tail(first.String(), 60))
		}
	})
	waitFor(t, cmd, 5*time.Minute, "6 stored runs", func() bool { return len(hostRuns(t, state)) >= 6 })
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	t.Logf("killed at %.0fs", time.Since(began).Seconds())
	before := hostRuns(t, state)
	for name, procs := range map[string]func() []int{"ssh": ssh.Processes, "slurm": slurm.Processes} {
		deadline := time.Now().Add(20 * time.Second)
		for len(workOn(procs())) > 0 && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		if w := workOn(procs()); len(w) > 0 {
			t.Errorf("%s host: still running 20 s after the coordinator was killed: %v", name, w)
		}
	}
	if !slices.Contains(before, n2) || !slices.Contains(before, n3) {
		t.Errorf("runs before the kill from %v, want both hosts\n%s", before, tail(first.String(), 30))
	}

	// Resumed; the SSH host dies part-way: its runs go to the other.
	res := command(t, "resume", "--state-dir", state, "--repo", repo)
	res.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	res.Stdout, res.Stderr = &out, &errb
	if err := res.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, res, 5*time.Minute, "4 more runs", func() bool { return len(hostRuns(t, state)) >= len(before)+4 })
	ssh.Kill()
	t.Logf("host killed at %.0fs", time.Since(began).Seconds())
	killedAt := len(hostRuns(t, state))
	_ = res.Wait()
	t.Logf("resume: exit %d\n%s\n%s", res.ProcessState.ExitCode(), out.String(), tail(errb.String(), 40))
	if res.ProcessState.ExitCode() != exitOK || !strings.Contains(out.String(), "first bad commit: "+culprit) {
		t.Fatalf("resume with a host killed: exit %d, want 0 naming %s", res.ProcessState.ExitCode(), culprit)
	}
	if !strings.Contains(errb.String(), "runner host 127.0.0.2 lost") {
		t.Errorf("the host's death was not said")
	}
	after := hostRuns(t, state)
	if len(after) < len(before) || !slices.Equal(after[:len(before)], before) {
		t.Errorf("the runs stored before the kill changed on resume")
	}
	var lateOnDead int
	for _, h := range after[killedAt:] {
		if h == n2 {
			lateOnDead++
		}
	}
	if lateOnDead > 1 { // one may have been recorded as the host died
		t.Errorf("%d runs recorded on the dead host after its death", lateOnDead)
	}
	if n := len(after) - killedAt; n < 2 {
		t.Errorf("only %d runs after the host died: the session did not go on without it", n)
	}
	if w := workOn(slurm.Processes()); len(w) > 0 {
		t.Errorf("left running on the Slurm host: %v", w)
	}
}
