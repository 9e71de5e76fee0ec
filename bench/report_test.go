package bench_test

import (
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
)

// TestWriteText compares the report with sysbench 1.0.20's layout, line by line,
// for a hand-made result.
func TestWriteText(t *testing.T) {
	r := &bench.Result{
		Window: 3002300 * time.Microsecond, Events: 3989, Reads: 55846, Other: 7978,
		TPS: 1328.6, QPS: 21258,
		LatencyMin: 510 * time.Microsecond, LatencyAvg: 1500 * time.Microsecond, LatencyMax: 94870 * time.Microsecond,
		LatencyPct: 3550 * time.Microsecond, LatencySum: 5994180 * time.Microsecond, Percentile: 95,
		ThreadEvents: []int64{1681, 2308}, ThreadTime: []time.Duration{2997 * time.Millisecond, 2997 * time.Millisecond},
		Intervals: []bench.Interval{
			{At: time.Second, Length: time.Second, TPS: 1519.19, QPS: 24332.01, ReadsPS: 21291.63, OtherPS: 3040.38, P95: 2970 * time.Microsecond},
			{At: 2 * time.Second, Length: time.Second, TPS: 1063.03, QPS: 17000.42, ReadsPS: 14874.36, OtherPS: 2126.05, P95: 3750 * time.Microsecond},
			{At: 3002300 * time.Microsecond, Length: 1002300 * time.Microsecond, TPS: 1402.95, QPS: 22448.17, ReadsPS: 19642.27, OtherPS: 2805.90, P95: 3620 * time.Microsecond},
		},
	}
	o := bench.DefaultOptions()
	o.Threads = 2
	o.ReportInterval = time.Second
	var b strings.Builder
	if err := r.WriteText(&b, o); err != nil {
		t.Fatal(err)
	}
	// Lines as sysbench 1.0.20 prints them for the same numbers.
	want := []string{
		"[ 1s ] thds: 2 tps: 1519.19 qps: 24332.01 (r/w/o: 21291.63/0.00/3040.38) lat (ms,95%): 2.97 err/s: 0.00 reconn/s: 0.00",
		"[ 3s ] thds: 2 tps: 1402.95 qps: 22448.17 (r/w/o: 19642.27/0.00/2805.90) lat (ms,95%): 3.62 err/s: 0.00 reconn/s: 0.00",
		"SQL statistics:",
		"    queries performed:",
		"        read:                            55846",
		"        write:                           0",
		"        other:                           7978",
		"        total:                           63824",
		"    transactions:                        3989   (1328.65 per sec.)",
		"    queries:                             63824  (21258.37 per sec.)",
		"    ignored errors:                      0      (0.00 per sec.)",
		"    reconnects:                          0      (0.00 per sec.)",
		"General statistics:",
		"    total time:                          3.0023s",
		"    total number of events:              3989",
		"Latency (ms):",
		"         min:                                    0.51",
		"         avg:                                    1.50",
		"         max:                                   94.87",
		"         95th percentile:                        3.55",
		"         sum:                                 5994.18",
		"Threads fairness:",
		"    events (avg/stddev):           1994.5000/313.50",
		"    execution time (avg/stddev):   2.9970/0.00",
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(b.String(), "\n") {
		lines[l] = true
	}
	for _, w := range want {
		if !lines[w] {
			t.Errorf("missing line:\n%q\nin:\n%s", w, b.String())
		}
	}
}
