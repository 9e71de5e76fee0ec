package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/internal/neighbour"
	"github.com/perfbisect/perfbisect/internal/testenv"
	"github.com/perfbisect/perfbisect/serverctl"
)

// TestBisectWithNeighbours: a bisection of the fixture (a 6 MB buffer pool
// from the culprit on) while two neighbours come and go at random: a CPU
// quota of 0.4 CPU on the cgroup of perfbisect and its servers (no steal
// counter shows it) and a memory bandwidth hog in a cgroup of its own. It
// names the culprit, the runs the neighbours disturbed were measured again
// and counted in the answer by kind, and no counted run was throttled
// without saying so.
func TestBisectWithNeighbours(t *testing.T) {
	testenv.Machine(t)
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	throttled, err := neighbour.New(fmt.Sprintf("perfbisect-e2e-%d", os.Getpid()))
	if err != nil {
		t.Skipf("%v", err)
	}
	defer throttled.Remove()
	hogs, err := neighbour.New(fmt.Sprintf("perfbisect-e2e-hog-%d", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	defer hogs.Remove()

	// 6 commits (3 of them documentation-only, left out): the neighbours
	// come often enough in the session's two minutes, and the suite's
	// time stays within its budget.
	repo, culprit := makeFixture(t, "--commits", "6", "--culprit-pos", "4", "--broken-pos", "0")
	state := t.TempDir()
	out := filepath.Join(t.TempDir(), "result.json")
	args := append([]string{"start", "--repo", repo, "--good", "good", "--bad", "bad",
		"--workload", "oltp_read_only", "--table-size", "100000", "--state-dir", state, "--json", out,
		"--no-explain", "--max-runs", "120"}, shortRun...)
	cmd := command(t, args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := throttled.Add(cmd.Process.Pid); err != nil { // its servers start in it too
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	seed := uint64(time.Now().UnixNano())
	quota, waitQuota := neighbour.Throttle(ctx, throttled, 0.4,
		neighbour.Schedule{MinOff: 4 * time.Second, MaxOff: 15 * time.Second, MinOn: 2 * time.Second, MaxOn: 5 * time.Second}, seed)
	hog, waitHog := neighbour.Hog(ctx, hogs,
		neighbour.Schedule{MinOff: 8 * time.Second, MaxOff: 25 * time.Second, MinOn: 2 * time.Second, MaxOn: 4 * time.Second}, seed+1)
	err = cmd.Wait()
	cancel()
	waitQuota()
	waitHog()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	qn, qon := quota.Visits()
	hn, hon := hog.Visits()
	t.Logf("seed %d; the quota came %d times (%s in all), the hog %d times (%s)\nexit %d\n--- stdout\n%s--- stderr (last lines)\n%s",
		seed, qn, qon, hn, hon, code, so.String(), tail(se.String(), 25))
	if code != exitOK {
		t.Fatalf("exit %d, want 0", code)
	}
	j := readJSON(t, out)
	if j.FirstBad == nil || *j.FirstBad != culprit {
		t.Fatalf("first_bad %v, want %s", j.FirstBad, culprit)
	}
	if qn == 0 || hn == 0 {
		t.Fatalf("a neighbour never came (quota %d, hog %d): the session ran without them", qn, hn)
	}
	d := j.Disturbed
	if d == nil || d.MeasuredAgain == 0 || d.AgainByKind["throttled"] == 0 {
		t.Errorf("the answer counts no run the quota disturbed: %+v", d)
	} else if !strings.Contains(so.String(), "disturbed: ") || !strings.Contains(so.String(), "throttled") {
		t.Errorf("the printed answer does not count the disturbed runs")
	}
	// A counted run the quota throttled says so (it counts only when its
	// re-measurements ran out).
	capacity := 1.0 * float64(serverctl.MachineCPUs())
	for _, tc := range j.Tested {
		for _, r := range tc.Runs {
			th, err := strconv.ParseFloat(r.Facts["throttled_s"], 64)
			if err != nil {
				t.Errorf("a run of %.10s without throttled_s: %v", tc.Commit, r.Facts)
				continue
			}
			if th > 0.03*capacity && r.Facts["disturbed"] == "" {
				t.Errorf("a run of %.10s counts throttled for %.2f of %.1f CPU-seconds without saying so: %v", tc.Commit, th, capacity, r.Facts)
			}
		}
	}
	if s := serversUnder(state); len(s) > 0 {
		t.Errorf("servers left running: %v", s)
	}
}
