package measure

import (
	"encoding/json"
	"fmt"
	"github.com/google/renameio/v2"
	"os"
	"sort"
	"time"

	"golang.org/x/sys/unix"

	"github.com/perfbisect/perfbisect/serverctl"
	"github.com/perfbisect/perfbisect/stats"
)

// signs is what a run's own processes said of the machine over its window,
// beyond steal and other processes' CPU: a neighbour that no such counter
// shows still slows the server's threads (they wait for a CPU while
// runnable, or the server's cgroup is throttled by a CPU quota) or every
// process's work (the client's CPU per transaction rises with the server's).
type signs struct {
	waitShare float64       // the server's run delay / (run delay + CPU) over the window; -1 unknown
	throttled time.Duration // the server's CPU cgroup's throttled time, summed over CPUs; -1 unknown
	// capacity is the CPU time the server could have had over the window
	// (window x the CPUs it may run on), what throttled is a share of.
	capacity     time.Duration
	clientPerTxn float64 // µs of the client's CPU per transaction; 0 unknown
	serverPerTxn float64 // µs of the server's CPU per transaction; 0 unknown
}

// unknownSigns are the signs of a run whose window could not be read.
var unknownSigns = signs{waitShare: -1, throttled: -1}

// Neighbour rules: a run is disturbed (measured again, not counted) when
//   - its server's cgroup was throttled for more than ThrottledShare of the
//     CPU time it could have had (cpu.stat sums its CPUs' throttled time)
//     and, once the session has sessionHistory runs (of any revision), more
//     than twice the lower quartile of the last sessionWindow runs' shares
//     plus ThrottledShare: a quota that throttles three in four runs is the
//     machine's constant, not a disturbance, however much its share varies
//     from run to run, while runs that a passing quota caught in part never
//     make one look usual. In a window the quota throttled, this rule alone
//     judges the run: its threads' wait and the CPU per transaction rise
//     with the throttling;
//   - its server's threads waited for a CPU a WaitShareRise larger share of
//     their runnable time than the median of the revision's runs;
//   - the client's CPU per transaction rose by SlowClientRise and the
//     server's by SlowServerRise over the medians of the revision's runs:
//     the client does the same work whatever the revision, so the machine
//     itself was slower.
//
// The runs are each run's first attempt (a sample of the machine at an
// arbitrary moment: the attempts after it cluster where a neighbour is), so
// a condition that stays becomes the level. The last two rules compare a
// run with its own revision's runs only: a revision's own behaviour (more
// CPU per transaction, a stall) is in all of its runs.
const (
	// ThrottledShare is the share of its CPU time a run's server may lose
	// to a CPU quota's throttling.
	ThrottledShare = 0.02
	// WaitShareRise is how far (a share of runnable time) the server's
	// threads' wait for a CPU may rise over the revision's median.
	WaitShareRise = 0.15
	// SlowClientRise and SlowServerRise are the rises of the client's and
	// the server's CPU per transaction over the revision's medians that,
	// together, say the machine was slower.
	SlowClientRise = 0.25
	SlowServerRise = 0.10
)

// minHistory is the number of runs of a revision the relative rules need.
const minHistory = 3

// sessionHistory is the number of the session's runs the throttling rule
// needs before a quota can be the level, and sessionWindow the most recent
// runs it looks at (a quota that appears and stays becomes the level).
const (
	sessionHistory = 6
	sessionWindow  = 12
)

// schedProbe reads the server's scheduler statistics and its cgroup's
// throttled time at the window's edges.
type schedProbe struct {
	s0, s1   serverctl.Sched
	t0, t1   serverctl.Throttle
	sOK, tOK bool
	sErr     bool
	cpus     int // the CPUs the server may run on (0: unknown)
}

func (p *schedProbe) begin(pid int) {
	var err error
	p.s0, err = serverctl.ProcessSched(pid)
	p.sErr = err != nil
	p.t0, p.tOK = serverctl.CgroupThrottle(pid)
	var set unix.CPUSet
	if unix.SchedGetaffinity(pid, &set) == nil {
		p.cpus = set.Count()
	}
}

func (p *schedProbe) end(pid int) {
	var err error
	p.s1, err = serverctl.ProcessSched(pid)
	p.sOK = err == nil && !p.sErr
	var ok bool
	p.t1, ok = serverctl.CgroupThrottle(pid)
	p.tOK = p.tOK && ok
}

// signs returns what the probe saw over a window of the given length, with
// the client's and the server's CPU per transaction (µs, 0 when unknown).
func (p *schedProbe) signs(window time.Duration, clientPerTxn, serverPerTxn float64) signs {
	cpus := p.cpus
	if cpus <= 0 {
		cpus = serverctl.MachineCPUs()
	}
	s := signs{waitShare: -1, throttled: -1, capacity: window * time.Duration(cpus), clientPerTxn: clientPerTxn, serverPerTxn: serverPerTxn}
	if p.sOK {
		if cpu, wait := p.s1.Since(p.s0); cpu+wait > 0 {
			s.waitShare = float64(wait) / float64(cpu+wait)
		}
	}
	if p.tOK {
		s.throttled = p.t1.Since(p.t0)
	}
	return s
}

// neighbourSign returns why s says the machine was disturbed next to the
// revision's runs hist and, for throttling (a property of the machine more
// than of a revision), every revision's runs all (the rules above), and
// the kind of disturbance ("throttled", "descheduled", "slow machine"); ""
// when nothing.
func neighbourSign(s signs, hist, all []signs) (why, kind string) {
	medOf := func(hist []signs, f func(signs) float64) (float64, bool) {
		var xs []float64
		for _, h := range hist {
			if v := f(h); v >= 0 {
				xs = append(xs, v)
			}
		}
		if len(xs) < minHistory {
			return 0, false
		}
		return stats.Median(xs), true
	}
	med := func(f func(signs) float64) (float64, bool) { return medOf(hist, f) }
	if s.throttled >= 0 && s.capacity > 0 {
		share := float64(s.throttled) / float64(s.capacity)
		if share > ThrottledShare {
			base, ok := throttledLevel(all)
			if !ok || share > 2*base+ThrottledShare {
				return fmt.Sprintf("the server's CPU cgroup was throttled for %.2f of the window's %.1f CPU-seconds (a CPU quota: cpu.max, cpu.cfs_quota_us)",
					s.throttled.Seconds(), s.capacity.Seconds()), "throttled"
			}
			// The quota is the level; the wait and the CPU it costs are too.
			return "", ""
		}
	}
	if s.waitShare >= 0 {
		if base, ok := med(func(h signs) float64 { return h.waitShare }); ok && s.waitShare > base+WaitShareRise {
			return fmt.Sprintf("the server's threads waited for a CPU %.0f%% of their runnable time, against %.0f%% in the revision's other runs (descheduled: a CPU limit or a neighbour)",
				100*s.waitShare, 100*base), "descheduled"
		}
	}
	if s.clientPerTxn > 0 && s.serverPerTxn > 0 {
		c, okc := med(func(h signs) float64 { return positive(h.clientPerTxn) })
		v, oks := med(func(h signs) float64 { return positive(h.serverPerTxn) })
		if okc && oks && s.clientPerTxn > c*(1+SlowClientRise) && s.serverPerTxn > v*(1+SlowServerRise) {
			return fmt.Sprintf("the client's CPU per transaction was %+.0f%% and the server's %+.0f%% against the revision's other runs (the machine ran slower: a neighbour sharing its caches or memory bandwidth)",
				100*(s.clientPerTxn/c-1), 100*(s.serverPerTxn/v-1)), "slow machine"
		}
	}
	return "", ""
}

// throttledLevel is the lower quartile of the throttled shares of the last
// sessionWindow runs in all that read one; false with fewer than
// sessionHistory.
func throttledLevel(all []signs) (float64, bool) {
	var xs []float64
	for i := len(all) - 1; i >= 0 && len(xs) < sessionWindow; i-- {
		if h := all[i]; h.throttled >= 0 && h.capacity > 0 {
			xs = append(xs, float64(h.throttled)/float64(h.capacity))
		}
	}
	if len(xs) < sessionHistory {
		return 0, false
	}
	sort.Float64s(xs)
	return xs[len(xs)/4], true
}

// positive is v, or -1 (unknown) when v is not above 0.
func positive(v float64) float64 {
	if v > 0 {
		return v
	}
	return -1
}

// history is Config.HistoryFile's content: the last sessionWindow signs
// of every revision and of all runs.
type history struct {
	Revisions map[string][]savedSigns `json:"revisions"`
	All       []savedSigns            `json:"all"`
}

// savedSigns are signs as a history file keeps them.
type savedSigns struct {
	WaitShare    float64       `json:"wait_share"`
	Throttled    time.Duration `json:"throttled"`
	Capacity     time.Duration `json:"capacity"`
	ClientPerTxn float64       `json:"client_per_txn"`
	ServerPerTxn float64       `json:"server_per_txn"`
}

func (s signs) saved() savedSigns {
	return savedSigns{s.waitShare, s.throttled, s.capacity, s.clientPerTxn, s.serverPerTxn}
}

func (s savedSigns) signs() signs {
	return signs{s.WaitShare, s.Throttled, s.Capacity, s.ClientPerTxn, s.ServerPerTxn}
}

// loadHistory reads Config.HistoryFile into the histories.
func (m *Measurer) loadHistory() {
	if m.cfg.HistoryFile == "" {
		return
	}
	b, err := os.ReadFile(m.cfg.HistoryFile)
	var h history
	if err != nil || json.Unmarshal(b, &h) != nil {
		return
	}
	for c, ss := range h.Revisions {
		for _, s := range ss {
			m.signs[c] = append(m.signs[c], s.signs())
		}
	}
	for _, s := range h.All {
		m.allSigns = append(m.allSigns, s.signs())
	}
}

// saveHistory writes the histories' last sessionWindow entries to
// Config.HistoryFile (replaced whole).
func (m *Measurer) saveHistory() {
	if m.cfg.HistoryFile == "" {
		return
	}
	last := func(ss []signs) []savedSigns {
		var out []savedSigns
		for _, s := range ss[max(0, len(ss)-sessionWindow):] {
			out = append(out, s.saved())
		}
		return out
	}
	h := history{Revisions: map[string][]savedSigns{}, All: last(m.allSigns)}
	for c, ss := range m.signs {
		h.Revisions[c] = last(ss)
	}
	b, err := json.Marshal(h)
	if err != nil {
		return
	}
	if err := renameio.WriteFile(m.cfg.HistoryFile, b, 0o600); err != nil {
		m.logf("note: the runs' history %s: %v", m.cfg.HistoryFile, err)
	}
}
