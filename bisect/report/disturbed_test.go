package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
)

func TestDisturbedCounts(t *testing.T) {
	runs := []bisect.Run{
		{TPS: 100, Facts: map[string]string{}},
		{TPS: 100, Facts: map[string]string{"discarded_runs": "40.0 tps (steal 0.00s, other processes 0.00s of the window's 2.0 CPU-seconds; the server's CPU cgroup was throttled for 1.40 of the window's 2.0 CPU-seconds (a CPU quota: cpu.max, cpu.cfs_quota_us)); 50.0 tps (steal 0.00s, other processes 1.00s of the window's 2.0 CPU-seconds)",
			bisect.FactDiscardedKinds: "throttled,other processes"}},
		{TPS: 100, Facts: map[string]string{"discarded_runs": "60.0 tps (x)", bisect.FactDiscardedKinds: "throttled",
			"disturbed": "steal 0.00s, ...; the client's CPU per transaction was +40%", bisect.FactDisturbedKinds: "slow machine"}},
	}
	d := disturbedOf(runs)
	if d == nil || d.MeasuredAgain != 3 || d.AgainByKind["throttled"] != 2 || d.AgainByKind["other processes"] != 1 || d.Counted != 1 || d.CountedByKind["slow machine"] != 1 {
		t.Fatalf("counts %+v", d)
	}
	want := "3 run(s) measured again, not counted (throttled 2, other processes 1); 1 run(s) counted although disturbed, their re-measurements spent (slow machine 1)"
	if d.String() != want {
		t.Errorf("line %q\nwant %q", d.String(), want)
	}
	if disturbedOf(runs[:1]) != nil {
		t.Errorf("a session without disturbed runs counts some")
	}
	var b bytes.Buffer
	Final(&b, &session.Result{Outcome: session.NoRegression, Runs: map[string][]bisect.Run{"a": runs}}, func(string) string { return "" })
	if !strings.Contains(b.String(), "disturbed: "+want) {
		t.Errorf("the answer does not count the disturbed runs:\n%s", b.String())
	}
}
