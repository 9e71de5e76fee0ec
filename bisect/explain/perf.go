// Package explain says why a revision is slower than another: from runs
// profiled apart from any verdict's, where the server's CPU went (perf
// cpu-clock samples with call graphs, per function and per transaction),
// which SHOW GLOBAL STATUS counters changed per transaction, and which
// settings the two servers run with differently.
package explain

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/pprof/profile"

	"github.com/perfbisect/perfbisect/serverctl"
)

// ErrNoPerf is wrapped by Check's error when perf cannot profile here (the
// machine's: a package or a kernel setting, said in the message).
var ErrNoPerf = errors.New("perf cannot profile on this machine")

// Check reports whether perf can sample another process's CPU on this
// machine: installed (Debian's linux-perf) and permitted
// (kernel.perf_event_paranoid at most 1 for a user other than root).
// Errors wrap ErrNoPerf and name the package or setting that gives it.
func Check() error {
	if _, err := exec.LookPath("perf"); err != nil {
		return fmt.Errorf("%w: perf is not installed (apt-get install linux-perf)", ErrNoPerf)
	}
	if os.Geteuid() == 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return nil // not Linux's file: perf itself will say
	}
	if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 1 {
		return fmt.Errorf("%w: kernel.perf_event_paranoid is %d; profiling another process needs 1 or less (sysctl kernel.perf_event_paranoid=1) or root", ErrNoPerf, n)
	}
	return nil
}

// CallGraphs are perf's call-graph modes Profiler takes: frame pointers
// (cheap; whole stacks only for a build that keeps them) and DWARF
// unwinding (whole stacks of any build with unwind tables, dearer).
var CallGraphs = []string{"dwarf", "fp"}

// Profiler profiles a server through a run's window (measure.Config.Probe):
// perf record of cpu-clock samples with call graphs, SHOW GLOBAL STATUS,
// INNODB_METRICS and performance_schema's waits at both ends, the
// variables at the end and, with Digests, the statement digests at both
// ends. Each run's files go into a directory of its own under Dir
// (profile-N), which Probe's end returns.
type Profiler struct {
	Dir       string // where the runs' directories go (made as needed)
	CallGraph string // a CallGraphs mode; "" is dwarf
	Freq      int    // samples per second per CPU; 0 is 499
	NoPerf    bool   // read the status and variables only (perf cannot run here)
	// Digests has each run's statement times read from performance_schema's
	// statement digests (serverctl.DigestSettings on), for a workload that
	// cannot time its own (sysbench).
	Digests bool
	// Names name the runs' directories by the subject's key ("base":
	// base-1, base-2, ...); a key not in it is named profile-N.
	Names map[string]string
	seen  map[string]int
	mu    sync.Mutex
	n     int
}

// PerfData, statusFile and variablesFile are a profiled run's files;
// buildIDs, under the Profiler's Dir, is perf's build-id cache of its runs
// (perf --buildid-dir): one copy of each server binary profiled, where perf
// script finds one deleted since (a code layout), instead of the user's
// ~/.debug.
const (
	PerfData      = "perf.data"
	buildIDs      = "perf-buildids"
	statusFile    = "status.json"
	variablesFile = "variables.json"
)

// buildIDDir is the runs' build-id cache.
func (p *Profiler) buildIDDir() string { return filepath.Join(p.Dir, buildIDs) }

// Clean removes what perf wrote that the profiles do not keep: every run's
// perf.data (Samples has read those it uses; failed runs and runs measured
// again leave theirs) and the build-id cache. Call it once the runs are
// read. Errors are ignored: nothing of the profiles depends on them.
func (p *Profiler) Clean() {
	runs, _ := os.ReadDir(p.Dir)
	for _, r := range runs {
		if r.IsDir() {
			_ = os.Remove(filepath.Join(p.Dir, r.Name(), PerfData))
		}
	}
	_ = os.RemoveAll(p.buildIDDir())
}

// Probe turns INNODB_METRICS on, starts perf on srv's process and then
// reads the digests (Digests) and the counters; the function it returns
// reads the counters again, stops perf and writes the run's directory
// (with the window's statement digests, their samples EXPLAINed), which it
// returns. A run that fails before
// its window closes leaves perf to end with the server it watched. Errors: perf could not start or stop, or
// the server could not be read (the machine's or the server's, never a
// verdict).
func (p *Profiler) Probe(ctx context.Context, key string, srv *serverctl.Server) (func() (string, error), error) {
	p.mu.Lock()
	p.n++
	dir := filepath.Join(p.Dir, fmt.Sprintf("profile-%d", p.n))
	if name := p.Names[key]; name != "" {
		if p.seen == nil {
			p.seen = map[string]int{}
		}
		p.seen[name]++
		dir = filepath.Join(p.Dir, fmt.Sprintf("%s-%d", name, p.seen[name]))
	}
	p.mu.Unlock()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	// The counters are read last here and first at the end, so that what
	// they count spans the window whose transactions divide them; turning
	// INNODB_METRICS on and attaching perf come before.
	if _, err := srv.InnoDBMetrics(ctx, true); err != nil {
		return nil, err
	}
	if p.NoPerf {
		digests := p.digests(ctx, srv)
		before, err := counts(ctx, srv)
		if err != nil {
			return nil, err
		}
		return p.end(ctx, srv, dir, before, digests, nil, nil), nil
	}
	mode := p.CallGraph
	if mode == "" {
		mode = "dwarf"
	}
	freq := p.Freq
	if freq == 0 {
		freq = 499
	}
	cg := mode
	if mode == "dwarf" {
		cg = "dwarf,16384" // half the default stack copy: the server's frames fit
	}
	args := []string{"--buildid-dir", p.buildIDDir(), "record", "-q", "-e", "cpu-clock", "-F", strconv.Itoa(freq), "--call-graph", cg,
		"-p", strconv.Itoa(srv.Pid()), "-o", filepath.Join(dir, PerfData)}
	cmd := exec.Command("perf", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPerf, err)
	}
	// perf writes its header once it is attached: the window opens then.
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if st, err := os.Stat(filepath.Join(dir, PerfData)); err == nil && st.Size() > 0 {
			break
		}
	}
	digests := p.digests(ctx, srv)
	before, err := counts(ctx, srv)
	if err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		return nil, err
	}
	return p.end(ctx, srv, dir, before, digests, cmd, &stderr), nil
}

// digests reads the server's statement digests at the window's start
// (Digests), without samples; nil without Digests or when they cannot be
// read (the run then has no statement times: the rest of the explanation
// stands).
func (p *Profiler) digests(ctx context.Context, srv *serverctl.Server) *[]serverctl.Digest {
	if !p.Digests {
		return nil
	}
	ds, err := srv.StatementDigests(ctx, false)
	if err != nil {
		return nil
	}
	return &ds
}

// end is Probe's end: perf (when cmd is not nil) stopped, the status
// deltas and the variables (and with Digests the statement times) written
// into dir.
func (p *Profiler) end(ctx context.Context, srv *serverctl.Server, dir string, before map[string]int64, digests *[]serverctl.Digest, cmd *exec.Cmd, stderr *strings.Builder) func() (string, error) {
	return func() (string, error) {
		after, err := counts(ctx, srv)
		if cmd != nil {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var werr error
			select {
			case werr = <-done:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				werr = <-done
			}
			if werr != nil && !interrupted(werr) {
				return "", fmt.Errorf("perf record: %v: %s", werr, strings.TrimSpace(stderr.String()))
			}
		}
		if err != nil {
			return "", err
		}
		delta := map[string]int64{}
		for k, a := range after {
			if b, ok := before[k]; ok {
				delta[k] = a - b
			} else if strings.HasPrefix(k, WaitPrefix) {
				delta[k] = a // a wait event first seen in the window: the head's new waiting
			}
		}
		vars, err := srv.GlobalVariables(ctx)
		if err != nil {
			return "", err
		}
		if digests != nil {
			writeDigests(ctx, srv, dir, *digests)
		}
		if err := writeJSON(filepath.Join(dir, statusFile), delta); err != nil {
			return "", err
		}
		return dir, writeJSON(filepath.Join(dir, variablesFile), vars)
	}
}

// MetricPrefix begins the name of an INNODB_METRICS counter among a run's
// status deltas ("INNODB_METRICS.buffer_LRU_batch_flush_total_pages").
const MetricPrefix = "INNODB_METRICS."

// WaitPrefix begins the name of a performance_schema wait event among a
// run's status deltas, whose value is the time waited in picoseconds
// ("performance_schema.wait/io/file/innodb/innodb_data_file").
const WaitPrefix = "performance_schema."

// counts reads SHOW GLOBAL STATUS, the enabled INNODB_METRICS counters and
// performance_schema's time waited per wait event (where it is on) as one
// map.
func counts(ctx context.Context, srv *serverctl.Server) (map[string]int64, error) {
	st, err := srv.GlobalStatus(ctx)
	if err != nil {
		return nil, err
	}
	m, err := srv.InnoDBMetrics(ctx, false)
	if err != nil {
		return nil, err
	}
	for k, v := range m {
		st[MetricPrefix+k] = v
	}
	w, err := srv.WaitSummary(ctx)
	if err != nil {
		return nil, err
	}
	for k, v := range w {
		st[WaitPrefix+k] = v
	}
	return st, nil
}

// interrupted is perf's exit after the SIGINT that ends a recording.
func interrupted(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && (ws.Signaled() && ws.Signal() == syscall.SIGINT || ws.ExitStatus() == 130 || ws.ExitStatus() == 0)
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// Samples converts a profiled run's perf.data (in dir, a run's directory
// of p) into a pprof profile (sample
// types "samples"/count and "cpu"/nanoseconds, each sample's stack leaf
// first, functions by symbol, mappings by the file perf read them from),
// with perf script. Symbols perf cannot resolve are "[unknown]" in their
// file. Errors: perf script failed.
func (p *Profiler) Samples(ctx context.Context, dir string) (*profile.Profile, error) {
	cmd := exec.CommandContext(ctx, "perf", "--buildid-dir", p.buildIDDir(), "script", "-i", filepath.Join(dir, PerfData), "-F", "comm,tid,period,ip,sym,dso", "--no-inline")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPerf, err)
	}
	prof, perr := ParseScript(out)
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		return nil, fmt.Errorf("perf script of %s: %v: %s", dir, err, strings.TrimSpace(stderr.String()))
	}
	return prof, perr
}

// ParseScript reads perf script's output (-F comm,tid,period,ip,sym,dso
// with call graphs: a header line "comm tid period" per sample, then one
// line per frame "ADDR SYMBOL (DSO)", leaf first, then a blank line) into
// a pprof profile as Samples describes. Errors: the reader's.
func ParseScript(r io.Reader) (*profile.Profile, error) {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
	}
	funcs := map[[2]string]*profile.Function{}
	maps := map[string]*profile.Mapping{}
	locs := map[[2]string]*profile.Location{}
	location := func(sym, dso string) *profile.Location {
		k := [2]string{sym, dso}
		if l, ok := locs[k]; ok {
			return l
		}
		m, ok := maps[dso]
		if !ok {
			m = &profile.Mapping{ID: uint64(len(p.Mapping) + 1), File: dso, HasFunctions: true}
			maps[dso] = m
			p.Mapping = append(p.Mapping, m)
		}
		f, ok := funcs[k]
		if !ok {
			f = &profile.Function{ID: uint64(len(p.Function) + 1), Name: sym, SystemName: sym, Filename: dso}
			funcs[k] = f
			p.Function = append(p.Function, f)
		}
		l := &profile.Location{ID: uint64(len(p.Location) + 1), Mapping: m, Line: []profile.Line{{Function: f}}}
		locs[k] = l
		p.Location = append(p.Location, l)
		return l
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur *profile.Sample
	flush := func() {
		if cur != nil && len(cur.Location) > 0 {
			p.Sample = append(p.Sample, cur)
		}
		cur = nil
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] != ' ' && line[0] != '\t':
			flush()
			f := strings.Fields(line)
			period, _ := strconv.ParseInt(f[len(f)-1], 10, 64)
			cur = &profile.Sample{Value: []int64{1, period}}
		case cur != nil:
			sym, dso := frame(line)
			cur.Location = append(cur.Location, location(sym, dso))
		}
	}
	flush()
	if len(p.Sample) > 0 {
		p.Period = p.Sample[0].Value[1]
	}
	return p, sc.Err()
}

// frame splits a frame line "  ADDR SYMBOL (DSO)" into its symbol
// ("[unknown]" when perf had none; without a "+0x.." offset) and DSO.
func frame(line string) (sym, dso string) {
	s := strings.TrimSpace(line)
	if i := strings.IndexByte(s, ' '); i > 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	if i := strings.LastIndex(s, " ("); i >= 0 && strings.HasSuffix(s, ")") {
		sym, dso = s[:i], s[i+2:len(s)-1]
	} else {
		sym = s
	}
	if j := strings.LastIndex(sym, "+0x"); j > 0 {
		sym = sym[:j]
	}
	if sym == "" {
		sym = "[unknown]"
	}
	return sym, dso
}

// PerTransaction is p as CPU per transaction: one sample type,
// "cpu_per_txn" in nanoseconds, every sample's CPU divided by events and by
// runs (the side's runs, so that their profiles merged are the mean), the
// samples of one stack summed first. Two sides' profiles so made compare
// as the explanation does (pprof -diff_base), whatever their throughput.
func PerTransaction(p *profile.Profile, events int64, runs int) (*profile.Profile, error) {
	q, err := profile.Merge([]*profile.Profile{p})
	if err != nil {
		return nil, err
	}
	q.SampleType = []*profile.ValueType{{Type: "cpu_per_txn", Unit: "nanoseconds"}}
	q.DefaultSampleType = "cpu_per_txn"
	for _, s := range q.Sample {
		s.Value = []int64{s.Value[1]}
	}
	q.Scale(1 / float64(max(events, 1)) / float64(max(runs, 1)))
	q.Period = 0
	return q, nil
}
