package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// Config is what a Measurer needs besides its hosts.
type Config struct {
	// Build builds commit here (once; the build cache keeps it) and
	// returns its install tree and key (build.EntryKey). Errors: an
	// *bisect.UntestableError for the revision's fault; the machine's as
	// they are.
	Build func(ctx context.Context, commit string) (prefix, key string, err error)
	// Label names a revision in progress lines (nil: its short hash).
	Label func(commit string) string
	// Settings are the measurement's settings as the task carries them
	// (Task.Settings).
	Settings json.RawMessage
	// Version is this perfbisect's version as --version prints it.
	Version string
	Log     io.Writer // progress lines, the hosts' prefixed with their name; may be nil
	// Retry is how long a lost host stays out before it is tried again
	// (0: 5 minutes).
	Retry time.Duration
}

// Measurer is the bisect.HostMeasurer of a session with runner hosts. A
// round's planned runs (PlanRound) are built here one after the other,
// then sent to their hosts at once; MeasureOn then hands them out in the
// session's order. A run on a host that cannot be reached goes to the
// next host that can (its Run.Host says where it ran); when none can, the
// error is the machine's.
type Measurer struct {
	cfg   Config
	hosts []*host
	self  Identity

	logMu sync.Mutex
	// pending are the runs PlanRound sent, by host name, in the order
	// the host takes them.
	pending map[string][]*pending
}

type host struct {
	Host
	mu      sync.Mutex      // one task at a time
	shipped map[string]bool // install trees it holds, by key
	lost    error           // why it is out (nil: in)
	lostAt  time.Time
}

type pending struct {
	commit string
	cancel context.CancelFunc
	done   chan struct{}
	runs   []bisect.Run
	err    error
}

// New returns a Measurer for hosts (ParseHost's). Errors: no hosts, two
// with one name; this perfbisect's own executable cannot be read.
func New(cfg Config, hosts []Host) (*Measurer, error) {
	if len(hosts) == 0 {
		return nil, errors.New("runner: no hosts")
	}
	id, err := Self(cfg.Version)
	if err != nil {
		return nil, err
	}
	if cfg.Retry == 0 {
		cfg.Retry = 5 * time.Minute
	}
	m := &Measurer{cfg: cfg, self: id, pending: map[string][]*pending{}}
	seen, labels := map[string]bool{}, map[string]int{}
	for _, h := range hosts {
		if seen[h.Name] {
			return nil, usage.Errorf("{runner} %s given twice (two hosts with one root would wait for each other): give each host once, or another root", h.Name)
		}
		seen[h.Name] = true
		labels[h.Label]++
		m.hosts = append(m.hosts, &host{Host: h, shipped: map[string]bool{}})
	}
	for _, h := range m.hosts {
		if h.Label == "" || labels[h.Label] > 1 {
			h.Label = h.Name // two hosts at one address: their roots tell them apart
		}
	}
	return m, nil
}

// Summary says, per host, how many of runs (a session's, by revision)
// it measured and whether it is lost: "127.0.0.2 23 runs (lost: ssh:
// ...), slurm:node7 41 runs".
func (m *Measurer) Summary(runs map[string][]bisect.Run) string {
	n := map[string]int{}
	for _, rs := range runs {
		for _, r := range rs {
			n[r.Host]++
		}
	}
	var parts []string
	for _, h := range m.hosts {
		h.mu.Lock()
		part := fmt.Sprintf("%s %d runs", h.Label, n[h.Name])
		if h.lost != nil {
			part += fmt.Sprintf(" (lost: %v)", h.lost)
		}
		h.mu.Unlock()
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// Names are the hosts' names in the order given (session.Config.Hosts).
func (m *Measurer) Names() []string {
	var out []string
	for _, h := range m.hosts {
		out = append(out, h.Name)
	}
	return out
}

// Check asks every host for its perfbisect (`perfbisect task id`) and
// returns their identities, in the hosts' order; a host that cannot be
// reached is said, taken out as a lost host is (its runs go to the
// others), and its identity is zero. Errors: no host can be reached (the
// hosts' problem); a host that answers without a perfbisect, or with
// another build than this one's (usage: install the same one there).
func (m *Measurer) Check(ctx context.Context) ([]Identity, error) {
	out := make([]Identity, len(m.hosts))
	var lost []string
	for i, h := range m.hosts {
		var stdout bytes.Buffer
		err := h.Engine.Task(ctx, []string{"id"}, nil, &stdout, m.hostLog(h))
		var ee *ExitError
		switch {
		case errors.Is(err, ErrUnreachable) && ctx.Err() == nil:
			m.logf("runner host %s cannot be reached (%v): its runs go to the other hosts (it is tried again in %s); check it with $PERFBISECT_SSH, or leave out its --runner in a new session", h.Label, err, m.cfg.Retry)
			h.mu.Lock()
			h.lost, h.lostAt = err, time.Now()
			h.mu.Unlock()
			lost = append(lost, h.Label)
			continue
		case errors.As(err, &ee):
			return nil, usage.Errorf("runner host %s: `perfbisect task id` failed (%v): is perfbisect installed there? Copy this one there and name it with ?perfbisect=PATH in {runner}", h.Name, ee)
		case err != nil:
			return nil, fmt.Errorf("runner host %s: %w", h.Name, err)
		}
		var id Identity
		if err := json.Unmarshal(stdout.Bytes(), &id); err != nil {
			return nil, usage.Errorf("runner host %s: `perfbisect task id` said %q: not a perfbisect's identity (%v); name the host's perfbisect with ?perfbisect=PATH in {runner}", h.Name, excerptOf(stdout.String()), err)
		}
		if id.Build != m.self.Build {
			return nil, usage.Errorf("runner host %s runs another perfbisect (%s, build %.12s) than this one (%s, build %.12s): the built-in client is part of the measurement, so every host runs the same; copy this one there and name it with ?perfbisect=PATH in {runner}",
				h.Name, id.Version, id.Build, m.self.Version, m.self.Build)
		}
		out[i] = id
	}
	if len(lost) == len(m.hosts) {
		return nil, fmt.Errorf("no runner host can be reached (%s): the hosts' problem, not a revision's; run the same command again when one answers", strings.Join(lost, ", "))
	}
	return out, nil
}

// Prepare builds commit here (bisect.Preparer); the hosts prepare its
// datadir at its first run there.
func (m *Measurer) Prepare(ctx context.Context, commit string) error {
	_, _, err := m.cfg.Build(ctx, commit)
	return err
}

// Measure takes runs of commit on the first host that can (a session with
// one runner host).
func (m *Measurer) Measure(ctx context.Context, commit string, runs int) ([]bisect.Run, error) {
	return m.MeasureOn(ctx, m.hosts[0].Name, commit, runs)
}

// MeasureOn takes runs of commit on host (bisect.HostMeasurer): the next
// one PlanRound sent there when it is this, else now (a planned run that
// is not asked for is dropped with the rest of its host's plan). Errors
// as bisect.Measurer's; a host lost on the way moves the runs to another.
func (m *Measurer) MeasureOn(ctx context.Context, name, commit string, runs int) ([]bisect.Run, error) {
	var from *pending
	if q := m.pending[name]; len(q) > 0 {
		p := q[0]
		m.pending[name] = q[1:]
		select {
		case <-p.done:
		case <-ctx.Done():
			m.drop(name)
			p.cancel()
			<-p.done
			return nil, ctx.Err()
		}
		if p.commit == commit && runs == 1 && !errors.Is(p.err, ErrUnreachable) && !bisect.IsUntestable(p.err) {
			return p.runs, p.err
		}
		if p.commit == commit && runs == 1 && bisect.IsUntestable(p.err) {
			from = p // untestable there: the other hosts are asked
		} else {
			m.drop(name)
		}
	}
	i := m.index(name)
	if i < 0 {
		return nil, fmt.Errorf("runner: no host %q", name)
	}
	prefix, key, err := m.cfg.Build(ctx, commit)
	if err != nil {
		return nil, err
	}
	return m.anywhere(ctx, i, commit, prefix, key, runs, from)
}

// PlanRound builds the round's revisions here, one after the other, and
// sends every host its runs at once, a host's in their order
// (bisect.RoundPlanner); a revision that does not build, and what a
// host was to run after it, are left to MeasureOn, which says so.
func (m *Measurer) PlanRound(ctx context.Context, runs []bisect.HostRun) {
	type planned struct {
		commit, prefix, key string
		p                   *pending
	}
	plans := map[string][]planned{}
	var order []string
	broken := map[string]bool{}
	for _, r := range runs {
		i := m.index(r.Host)
		if i < 0 || len(m.pending[r.Host]) > 0 || !m.usable(m.hosts[i]) || broken[r.Host] {
			continue // a lost host's runs are MeasureOn's to move
		}
		prefix, key, err := m.cfg.Build(ctx, r.Commit)
		if err != nil {
			broken[r.Host] = true
			continue
		}
		if plans[r.Host] == nil {
			order = append(order, r.Host)
		}
		plans[r.Host] = append(plans[r.Host], planned{r.Commit, prefix, key, nil})
	}
	for _, name := range order {
		h := m.hosts[m.index(name)]
		pctx, cancel := context.WithCancel(ctx)
		var q []*pending
		for k := range plans[name] {
			p := &pending{commit: plans[name][k].commit, cancel: cancel, done: make(chan struct{})}
			plans[name][k].p = p
			q = append(q, p)
		}
		m.pending[name] = q
		go func(ps []planned) {
			defer cancel()
			for _, pl := range ps {
				if pctx.Err() != nil {
					pl.p.err = pctx.Err()
				} else {
					pl.p.runs, pl.p.err = m.on(pctx, h, pl.commit, pl.prefix, pl.key, 1)
				}
				close(pl.p.done)
			}
		}(plans[name])
	}
}

// drop cancels what PlanRound sent host name and has not been asked for,
// and waits for it to end.
func (m *Measurer) drop(name string) {
	for _, p := range m.pending[name] {
		p.cancel()
		<-p.done
	}
	delete(m.pending, name)
}

// Close ends the runs sent and not asked for (a session that ended
// within a round) and waits for their tasks to end.
func (m *Measurer) Close() {
	for name := range m.pending {
		m.drop(name)
	}
}

// anywhere takes the runs on host i, or, when it is lost, on the next
// host that is not (in the hosts' order, from i). A revision untestable
// on one host is tried on the next that is in: a host whose server fails
// for it alone is that host's problem, not the revision's, which is
// untestable only when every host that answers says so. from, when not
// nil, is host i's own answer already in hand.
func (m *Measurer) anywhere(ctx context.Context, i int, commit, prefix, key string, runs int, from *pending) ([]bisect.Run, error) {
	var lost []string
	var untestable error
	var where []string
	for k := range m.hosts {
		h := m.hosts[(i+k)%len(m.hosts)]
		if !m.usable(h) {
			lost = append(lost, fmt.Sprintf("%s (%v)", h.Label, h.lost))
			continue
		}
		var out []bisect.Run
		var err error
		if k == 0 && from != nil {
			out, err = from.runs, from.err
		} else {
			out, err = m.on(ctx, h, commit, prefix, key, runs)
		}
		switch {
		case bisect.IsUntestable(err) && ctx.Err() == nil:
			untestable = err
			where = append(where, h.Label)
			m.logf("%s: %s untestable there (%v); trying another host", h.Label, m.label(commit), err)
			continue
		case !errors.Is(err, ErrUnreachable):
			if err == nil && untestable != nil {
				m.logf("%s measured %s, which %s could not: their problem, not the revision's", h.Label, m.label(commit), strings.Join(where, ", "))
			}
			return out, err // its Run.Host says where it ran
		}
		lost = append(lost, fmt.Sprintf("%s (%v)", h.Label, err))
	}
	if untestable != nil {
		return nil, untestable // on every host that answered
	}
	return nil, fmt.Errorf("every runner host is lost: %s: the hosts' problem, not a revision's; when one is back, run the same command again to resume", strings.Join(lost, "; "))
}

// usable reports whether h is in, or was lost long enough ago to be tried
// again.
func (m *Measurer) usable(h *host) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lost == nil || time.Since(h.lostAt) >= m.cfg.Retry
}

// on takes runs of commit on h: ships its install tree there once, sends
// the task, reads the result. A host that cannot be reached is marked
// lost (the error wraps ErrUnreachable).
func (m *Measurer) on(ctx context.Context, h *host, commit, prefix, key string, runs int) ([]bisect.Run, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out, err := m.task(ctx, h, commit, prefix, key, runs, false)
	switch {
	case errors.Is(err, ErrUnreachable) && ctx.Err() == nil:
		if h.lost == nil {
			m.logf("runner host %s lost: %v; its runs go to the hosts still in (it is tried again in %s)", h.Label, err, m.cfg.Retry)
		}
		h.lost, h.lostAt = err, time.Now()
	case err == nil && h.lost != nil:
		m.logf("runner host %s is back", h.Label)
		h.lost = nil
	}
	for i := range out {
		out[i].Host = h.Name
	}
	return out, err
}

// task is on's work, h held.
func (m *Measurer) task(ctx context.Context, h *host, commit, prefix, key string, runs int, again bool) ([]bisect.Run, error) {
	if err := m.ship(ctx, h, commit, prefix, key); err != nil {
		return nil, err
	}
	t := Task{Perfbisect: m.self.Build, Commit: commit, Label: m.label(commit), Entry: key, Runs: runs, Settings: m.cfg.Settings}
	line, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	// The task stays open on the host's standard input until the result
	// is read: when this process goes, the task ends its server.
	held := make(chan struct{})
	in := io.MultiReader(bytes.NewReader(append(line, '\n')), heldOpen(held))
	var stdout bytes.Buffer
	args := []string{"run"}
	if h.Root != "" {
		args = append(args, "--root", h.Root)
	}
	err = h.Engine.Task(ctx, args, in, &stdout, m.hostLog(h))
	close(held)
	var res Result
	if jerr := json.Unmarshal(stdout.Bytes(), &res); jerr != nil {
		if err == nil || !errors.Is(err, ErrUnreachable) {
			err = lostf("the task answered no result (%v; %q)", errOr(err, jerr), excerptOf(stdout.String()))
		}
		return nil, err
	}
	for i := range res.Runs {
		if i < len(res.ServerOptions) {
			res.Runs[i].ServerOptions = res.ServerOptions[i]
		}
	}
	switch {
	case res.Kind == KindMissing:
		// Deleted or evicted on the host since it was shipped: shipped
		// again, once.
		delete(h.shipped, key)
		if !again {
			return m.task(ctx, h, commit, prefix, key, runs, true)
		}
		return res.Runs, lostf("its install tree %s went again once shipped: %s", key, res.Error)
	case res.Untestable != nil:
		return res.Runs, &bisect.UntestableError{Commit: commit, Reason: res.Untestable.Reason, Err: errors.New(res.Untestable.Err)}
	case res.Kind == KindUsage:
		return res.Runs, usage.Errorf("runner host %s: %s", h.Label, res.Error)
	case res.Kind == KindVersion:
		return res.Runs, usage.Errorf("runner host %s: %s", h.Label, res.Error)
	case res.Error != "":
		// The host's machine failed (a full disk, a missing package):
		// not the revision's; the run goes to another host.
		return res.Runs, lostf("its machine: %s", res.Error)
	case len(res.Runs) != runs:
		return res.Runs, lostf("the task gave %d runs of %d", len(res.Runs), runs)
	}
	return res.Runs, nil
}

// ship sends the install tree prefix (key) to h unless it holds it: asked
// once per key (`perfbisect task has`), sent once (`perfbisect task
// receive`, which checks it whole before it is used).
func (m *Measurer) ship(ctx context.Context, h *host, commit, prefix, key string) error {
	if h.shipped[key] {
		return nil
	}
	args := []string{"has", key}
	if h.Root != "" {
		args = []string{"has", "--root", h.Root, key}
	}
	err := h.Engine.Task(ctx, args, nil, io.Discard, m.hostLog(h))
	var ee *ExitError
	switch {
	case err == nil:
		h.shipped[key] = true
		return nil
	case !errors.As(err, &ee) || ee.Code != 1:
		return err
	}
	began := time.Now()
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(build.WriteEntry(pw, prefix, key)) }()
	args[0] = "receive"
	var stdout bytes.Buffer
	err = h.Engine.Task(ctx, args, pr, &stdout, m.hostLog(h))
	pr.CloseWithError(io.ErrClosedPipe)
	if errors.As(err, &ee) {
		// The host refused the tree (corrupt on the way, or a server
		// that cannot start there): the host's, not the revision's.
		err = lostf("it refused the build of %s: %s", m.label(commit), ee.Stderr)
	}
	if err != nil {
		return err
	}
	h.shipped[key] = true
	m.logf("%s: build of %s shipped in %.1fs", h.Label, m.label(commit), time.Since(began).Seconds())
	return nil
}

func (m *Measurer) index(name string) int {
	for i, h := range m.hosts {
		if h.Name == name {
			return i
		}
	}
	return -1
}

func (m *Measurer) label(commit string) string {
	if m.cfg.Label != nil {
		return m.cfg.Label(commit)
	}
	return fmt.Sprintf("%.10s", commit)
}

func (m *Measurer) logf(format string, args ...any) {
	if m.cfg.Log == nil {
		return
	}
	m.logMu.Lock()
	defer m.logMu.Unlock()
	fmt.Fprintf(m.cfg.Log, format+"\n", args...)
}

// hostLog is a writer of h's progress lines onto the log, each prefixed
// with its name.
func (m *Measurer) hostLog(h *host) io.Writer {
	return &prefixed{m: m, prefix: "[" + h.Label + "] "}
}

type prefixed struct {
	m      *Measurer
	prefix string
	part   []byte
}

func (p *prefixed) Write(b []byte) (int, error) {
	p.part = append(p.part, b...)
	for {
		i := bytes.IndexByte(p.part, '\n')
		if i < 0 {
			return len(b), nil
		}
		p.m.logf("%s%s", p.prefix, p.part[:i])
		p.part = p.part[i+1:]
	}
}

func excerptOf(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func errOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// heldOpen is a reader that blocks until done is closed, then ends.
type heldOpen chan struct{}

func (h heldOpen) Read([]byte) (int, error) {
	<-h
	return 0, io.EOF
}
