package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/bisect/session"
	"github.com/perfbisect/perfbisect/bisect/simmeasure"
	"github.com/perfbisect/perfbisect/internal/testenv"
)

// cutter cancels the session's context when the inner measurer is asked for
// run number after+1: an interrupt between two runs.
type cutter struct {
	*simmeasure.Measurer
	after  int
	cancel context.CancelFunc
}

func (c *cutter) Measure(ctx context.Context, commit string, runs int) ([]bisect.Run, error) {
	if c.Calls >= c.after {
		c.cancel()
		return nil, ctx.Err()
	}
	return c.Measurer.Measure(ctx, commit, runs)
}

func newSim(cs []bisect.Commit, hs []string, seed uint64) *simmeasure.Measurer {
	return &simmeasure.Measurer{Commits: cs, Base: 600, Culprits: map[string]float64{hs[27]: 0.6}, CV: 0.05,
		Untestable: map[string]string{hs[20]: "build failed"}, Rand: rand.New(rand.NewPCG(seed, 3))}
}

// recorded wires a session's events and steps into st.
func recorded(t *testing.T, st *Store, id int64, cfg session.Config) session.Config {
	steps := 0
	cfg.Hooks.Record = func(seq int, e session.Event) error { return st.Append(id, seq, e) }
	cfg.Hooks.OnStep = func(s session.Step) {
		if err := st.AddStep(id, steps, s); err != nil {
			t.Error(err)
		}
		steps++
	}
	cfg.Hooks.Diverged = func(seq int) {
		if err := st.Truncate(id, seq, steps); err != nil {
			t.Error(err)
		}
	}
	return cfg
}

func TestResumeReplaysStoredRunsAndReachesTheSameAnswer(t *testing.T) {
	cs, hs := simmeasure.Chain(40)
	base := session.Config{Good: hs[0], Bad: hs[40], Commits: cs, Repeats: 6, MaxRepeats: 18,
		Threshold: 0.05, Confidence: 0.95, Metric: session.TPS}

	// The uninterrupted session, for reference.
	ref := newSim(cs, hs, 11)
	s, err := session.New(base, ref)
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Run(context.Background())
	if err != nil || want.Outcome != session.Found || want.FirstBad != hs[27] {
		t.Fatalf("reference session: %v %+v", err, want)
	}

	for _, cut := range []int{1, 7, ref.Calls / 2, ref.Calls - 1} {
		t.Run(fmt.Sprintf("cut after %d of %d runs", cut, ref.Calls), func(t *testing.T) {
			st, err := Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			x, err := st.Begin(KindStart, []string{"start"}, "/", hs[0], hs[40], Identity{"repeats": fmt.Sprint(base.Repeats)})
			if err != nil {
				t.Fatal(err)
			}
			m := newSim(cs, hs, 11) // the same machine: noise continues where it stopped
			ctx, cancel := context.WithCancel(context.Background())
			s, _ := session.New(recorded(t, st, x.ID, base), &cutter{Measurer: m, after: cut, cancel: cancel})
			if _, err := s.Run(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted session: %v", err)
			}
			events, err := st.Events(x.ID)
			if err != nil {
				t.Fatal(err)
			}
			n, _ := st.RunCount(x.ID)
			if n != cut {
				t.Fatalf("%d runs stored, want the %d measured before the interrupt", n, cut)
			}

			// Resume: a new session over the stored events, on the same machine.
			before := m.Calls
			cfg := recorded(t, st, x.ID, base)
			cfg.Replay = events
			s2, _ := session.New(cfg, m)
			got, err := s2.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got.Outcome != want.Outcome || got.FirstBad != want.FirstBad {
				t.Fatalf("resumed: %s %.10s, uninterrupted: %s %.10s", got.Outcome, got.FirstBad, want.Outcome, want.FirstBad)
			}
			if live := m.Calls - before; live != ref.Calls-cut {
				t.Errorf("resumed session measured %d runs, want %d (%d total, %d stored)", live, ref.Calls-cut, ref.Calls, cut)
			}
			if got.Replayed != len(events) {
				t.Errorf("replayed %d of %d stored events", got.Replayed, len(events))
			}
			if !reflect.DeepEqual(got.Verdicts, want.Verdicts) || !reflect.DeepEqual(got.Skipped, want.Skipped) {
				t.Errorf("verdicts differ:\n%v\n%v", got.Verdicts, want.Verdicts)
			}
			all, _ := st.RunCount(x.ID)
			if all != ref.Calls {
				t.Errorf("store holds %d runs, want %d", all, ref.Calls)
			}
			steps, _ := st.Steps(x.ID)
			if len(steps) != len(want.Steps) {
				t.Errorf("store holds %d steps, want %d", len(steps), len(want.Steps))
			}
		})
	}
}

func TestResumeWithOtherSettingsLeavesTheReplay(t *testing.T) {
	cs, hs := simmeasure.Chain(40)
	base := session.Config{Good: hs[0], Bad: hs[40], Commits: cs, Repeats: 6, MaxRepeats: 18,
		Threshold: 0.05, Confidence: 0.95, Metric: session.TPS}
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	x, _ := st.Begin(KindStart, nil, "/", hs[0], hs[40], Identity{"repeats": fmt.Sprint(base.Repeats)})
	m := newSim(cs, hs, 5)
	ctx, cancel := context.WithCancel(context.Background())
	s, _ := session.New(recorded(t, st, x.ID, base), &cutter{Measurer: m, after: 30, cancel: cancel})
	_, _ = s.Run(ctx)
	events, _ := st.Events(x.ID)

	// Fewer starting repeats: the endpoints' first look comes earlier, so the
	// session asks for a midpoint where the store has endpoint runs.
	other := base
	other.Repeats = 4
	diverged := -1
	cfg := recorded(t, st, x.ID, other)
	inner := cfg.Hooks.Diverged
	cfg.Hooks.Diverged = func(seq int) { diverged = seq; inner(seq) }
	cfg.Replay = events
	s2, _ := session.New(cfg, m)
	got, err := s2.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diverged < 0 || diverged >= len(events) {
		t.Fatalf("diverged at %d of %d events", diverged, len(events))
	}
	if got.Replayed != diverged {
		t.Errorf("replayed %d events, diverged at %d", got.Replayed, diverged)
	}
	stored, err := st.Events(x.ID)
	if err != nil {
		t.Fatal(err) // a gap in the sequence would be an error here
	}
	runs := 0
	for _, rs := range got.Runs {
		runs += len(rs)
	}
	nrun := 0
	for _, e := range stored {
		if e.Run != nil {
			nrun++
		}
	}
	if nrun != runs {
		t.Errorf("store holds %d runs, the session used %d", nrun, runs)
	}
}

func TestStoreFileIsPrivateAndSessionsEnd(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("store mode %v, want 0600", fi.Mode().Perm())
	}
	a, _ := st.Begin(KindStart, []string{"start", "--good", "a"}, "/tmp", "g", "b", Identity{"repeats": "6"})
	if cur, _ := st.Current(KindStart); cur == nil || cur.ID != a.ID || !reflect.DeepEqual(cur.Args, []string{"start", "--good", "a"}) {
		t.Fatalf("current session: %+v", cur)
	}
	r := bisect.Run{Commit: "g", TPS: 123.5, ServerOptions: "--innodb_buffer_pool_size=6M\n"}
	if err := st.Append(a.ID, 0, session.Event{Kind: session.EventRun, Commit: "g", Run: &r}); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(a.ID, 0, session.Event{Kind: session.EventRun, Commit: "g", Run: &r}); err == nil {
		t.Error("a second event 0 was accepted")
	}
	ev, _ := st.Events(a.ID)
	if len(ev) != 1 || ev[0].Run.TPS != 123.5 || ev[0].Run.ServerOptions != r.ServerOptions {
		t.Errorf("stored run: %+v", ev)
	}
	if err := st.End(a.ID, Done, "found", map[string]string{"first_bad": "x"}); err != nil {
		t.Fatal(err)
	}
	if cur, _ := st.Current(KindStart); cur != nil {
		t.Errorf("ended session still current: %+v", cur)
	}
	// A later comparison is the newest session, but not the newest bisection.
	cmp, _ := st.Begin(KindCompare, []string{"compare", "a", "b"}, "/tmp", "a", "b", nil)
	if x, _ := st.LatestOf(KindStart, KindRun); x == nil || x.ID != a.ID {
		t.Errorf("latest bisection: %+v", x)
	}
	if x, _ := st.LatestOf(); x == nil || x.ID != cmp.ID {
		t.Errorf("latest of any kind: %+v", x)
	}
	st.Close()
	// Reopened, everything is there.
	st, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, _ := st.LatestOf(KindStart)
	if l == nil || l.State != Done || l.Outcome != "found" || string(l.Result) != `{"first_bad":"x"}` {
		t.Errorf("latest after reopen: %+v", l)
	}
}

func TestBuildsAreStored(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	x, _ := st.Begin(KindStart, nil, "/", "g", "b", nil)
	want := []Build{
		{Commit: "a", Recipe: "r1", Prefix: "/p/a", Seconds: 12.5, Flavor: "MariaDB", Version: "10.11.6"},
		{Commit: "b", Recipe: "r1", Seconds: 3, Error: "build b: exit status 2"},
	}
	for _, b := range want {
		if err := st.AddBuild(x.ID, b); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.Builds(x.ID)
	if err != nil || len(got) != 2 {
		t.Fatalf("builds: %v %+v", err, got)
	}
	for i := range want {
		got[i].Created = time.Time{}
		if got[i] != want[i] {
			t.Errorf("build %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestEarlierRunsMatchTheWorkloadOnly(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	same := Identity{"workload": "w1", "recipe": "r1", "threshold": "0.05"}
	other := Identity{"workload": "w2", "recipe": "r1", "threshold": "0.05"}
	looser := Identity{"workload": "w1", "recipe": "r1", "threshold": "0.10"}
	a, _ := st.Begin(KindStart, nil, "/", "g", "b", same)
	b, _ := st.Begin(KindStart, nil, "/", "g", "b", other)
	c, _ := st.Begin(KindStart, nil, "/", "g", "b", looser)
	cur, _ := st.Begin(KindStart, nil, "/", "g", "b", same)
	for i, id := range []int64{a.ID, b.ID, c.ID, cur.ID} {
		r := bisect.Run{Commit: "g", TPS: float64(100 + i)}
		if err := st.Append(id, 0, session.Event{Kind: session.EventRun, Commit: "g", Run: &r}); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := st.EarlierRuns(cur.ID, "g", []string{"workload", "recipe"})
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, r := range runs {
		got = append(got, r.TPS)
	}
	// a (same workload) and c (same workload, other threshold); not b, not cur.
	if !reflect.DeepEqual(got, []float64{100, 102}) {
		t.Errorf("earlier runs %v, want [100 102]", got)
	}
}

func TestDamagedStoreIsNamed(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		st.Begin(KindStart, nil, "/", "g", "b", Identity{"pad": strings.Repeat("x", 500)})
	}
	st.Close()
	p := filepath.Join(dir, FileName)
	b, _ := os.ReadFile(p)
	for i := 4096; i < len(b); i += 7 {
		b[i] = 0xA5 // garbage over every page after the first
	}
	os.WriteFile(p, b, 0o600)
	os.Remove(p + "-wal")
	_, err = Open(dir)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "move it away") {
		t.Errorf("damaged store: %v", err)
	}
}

// BenchmarkAppend is the store's cost per run (one transaction, WAL,
// synchronous=FULL): go test -bench Append ./bisect/store
func BenchmarkAppend(b *testing.B) {
	st, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	x, _ := st.Begin(KindStart, nil, "/", "g", "b", nil)
	r := bisect.Run{Commit: "g", TPS: 500, ServerOptions: strings.Repeat("--innodb-buffer-pool-size=6M\n", 40)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := st.Append(x.ID, i, session.Event{Kind: session.EventRun, Commit: "g", Run: &r}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestServerOptionsPerCommit: the last stored run of each commit gives its
// options, commits in the order first measured; failures and runs of other
// sessions do not count.
func TestServerOptionsPerCommit(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	x, _ := st.Begin(KindStart, nil, "/", "g", "b", nil)
	y, _ := st.Begin(KindStart, nil, "/", "g", "b", nil)
	run := func(c, o string) session.Event {
		return session.Event{Kind: session.EventRun, Commit: c, Run: &bisect.Run{Commit: c, TPS: 1, ServerOptions: o}}
	}
	for i, e := range []session.Event{run("b", "--port=1"), run("g", "--port=2"), {Kind: session.EventRun, Commit: "m", Reason: "server crashed"},
		run("b", "--port=3")} {
		if err := st.Append(x.ID, i, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Append(y.ID, 0, run("z", "--port=9")); err != nil {
		t.Fatal(err)
	}
	commits, options, err := st.ServerOptions(x.ID)
	if err != nil || strings.Join(commits, ",") != "b,g" || strings.Join(options, ",") != "--port=3,--port=2" {
		t.Errorf("ServerOptions: %v %q %q, want b,g with --port=3,--port=2", err, commits, options)
	}
}

// A store written before the schema was versioned (user_version 0) opens as
// version 1 with its sessions; one a newer perfbisect wrote is refused,
// naming the file and what to do, and left as it is.
func TestSchemaVersion(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := st.Begin(KindStart, []string{"start"}, "/tmp", "g", "b", nil)
	r := bisect.Run{Commit: "g", TPS: 321}
	if err := st.Append(a.ID, 0, session.Event{Kind: session.EventRun, Commit: "g", Run: &r}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	p := filepath.Join(dir, FileName)
	setVersion := func(v int) {
		t.Helper()
		db, err := sql.Open("sqlite", "file:"+p)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
			t.Fatal(err)
		}
	}
	version := func() int {
		t.Helper()
		db, err := sql.Open("sqlite", "file:"+p)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var v int
		if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := version(); v != SchemaVersion {
		t.Fatalf("a new store has schema version %d, want %d", v, SchemaVersion)
	}
	// As every store before the version was kept: version 1's tables
	// (no events.took_ns, no events.mark, no builds.cached) and
	// user_version 0, with a build attempt stored.
	func() {
		db, err := sql.Open("sqlite", "file:"+p)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, col := range []string{"events DROP COLUMN took_ns", "events DROP COLUMN mark", "builds DROP COLUMN cached", "sessions DROP COLUMN workload"} {
			if _, err := db.Exec("ALTER TABLE " + col); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Exec(`INSERT INTO builds (session, commit_hash, recipe, prefix, seconds, flavor, version, error, created) VALUES (?, 'a', 'r', '/p', 600, 'MariaDB', '10.0.22', '', '2026-12-01T00:00:00Z')`, a.ID); err != nil {
			t.Fatal(err)
		}
	}()
	setVersion(0)
	st, err = Open(dir)
	if err != nil {
		t.Fatalf("unversioned store: %v", err)
	}
	if ev, _ := st.Events(a.ID); len(ev) != 1 || ev[0].Run.TPS != 321 {
		t.Errorf("the unversioned store's run after opening: %+v", ev)
	}
	// Version 2 keeps how long a prepare took.
	if err := st.Append(a.ID, 1, session.Event{Kind: session.EventPrepare, Commit: "b", Took: 1500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	// Version 3 keeps a hand mark's verdict.
	if err := st.Append(a.ID, 2, session.MarkEvent(session.Marked{Commit: "c", Mark: bisect.Skip, Reason: "does not build with gcc 12"})); err != nil {
		t.Fatal(err)
	}
	if ev, _ := st.Events(a.ID); len(ev) != 3 || ev[1].Took != 1500*time.Millisecond || ev[0].Took != 0 ||
		ev[2].Kind != session.EventMark || ev[2].Mark != "skip" || ev[2].Reason != "does not build with gcc 12" || ev[1].Mark != "" {
		t.Errorf("events after migrating: %+v", ev)
	}
	// Version 4 tells a cache hit from a build; the old attempt was built.
	if err := st.AddBuild(a.ID, Build{Commit: "a", Recipe: "r", Prefix: "/p", Seconds: 0.01, Cached: true}); err != nil {
		t.Fatal(err)
	}
	if bs, err := st.Builds(a.ID); err != nil || len(bs) != 2 || bs[0].Cached || bs[0].Seconds != 600 || !bs[1].Cached {
		t.Errorf("builds after migrating: %+v, %v", bs, err)
	}
	// Version 5 says what a session's runs measure.
	if x, err := st.Session(a.ID); err != nil || x.Workload != "" {
		t.Errorf("a migrated session's workload: %q, %v; want none said", x.Workload, err)
	}
	if err := st.Describe(a.ID, "join.lua, 2 threads, run by sysbench"); err != nil {
		t.Fatal(err)
	}
	if x, err := st.Session(a.ID); err != nil || x.Workload != "join.lua, 2 threads, run by sysbench" {
		t.Errorf("workload after Describe: %q, %v", x.Workload, err)
	}
	st.Close()
	if v := version(); v != SchemaVersion {
		t.Errorf("after opening an unversioned store: schema version %d, want %d", v, SchemaVersion)
	}
	setVersion(SchemaVersion + 1)
	_, err = Open(dir)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "newer perfbisect") || !strings.Contains(err.Error(), "--state-dir") {
		t.Errorf("a newer store: %v", err)
	}
	if v := version(); v != SchemaVersion+1 {
		t.Errorf("a refused newer store was changed: version %d", v)
	}
}

// TestStoreOfAnOlderPerfbisect opens testdata/v1.db, a store that perfbisect
// with schema version 1 wrote (scripts/make-store-fixture.sh: a finished and
// an unfinished start, a compare, a scan, a git bisect run session): it is
// migrated, every session and its events read back, and every stored key is
// its identity's Key (so an unfinished session still resumes).
func TestStoreOfAnOlderPerfbisect(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join("testdata", "v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var v int
	if err := st.db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil || v != SchemaVersion {
		t.Errorf("schema version %d after opening (%v), want %d", v, err, SchemaVersion)
	}
	all, err := st.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, x := range all {
		kinds = append(kinds, string(x.Kind)+" "+string(x.State))
		if x.Key != x.Identity().Key() {
			t.Errorf("session %d: stored key %s, its identity's Key %s", x.ID, x.Key, x.Identity().Key())
		}
		evs, err := st.Events(x.ID)
		// A scan keeps its runs in its result, not as events.
		if err != nil || len(evs) == 0 && x.Kind != KindScan {
			t.Errorf("session %d: %d events (%v)", x.ID, len(evs), err)
		}
		for _, e := range evs {
			if e.Run != nil && e.Run.TPS <= 0 {
				t.Errorf("session %d: a run with tps %v", x.ID, e.Run.TPS)
			}
		}
	}
	if want := "start done,compare done,scan done,run running,start running"; strings.Join(kinds, ",") != want {
		t.Errorf("sessions %q, want %q", strings.Join(kinds, ","), want)
	}
}

// TestDecisionsDecodeSteps: the steps stored come back as the session's own
// type, with their evidence, in order.
func TestDecisionsDecodeSteps(t *testing.T) {
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sess, err := st.Begin(KindStart, []string{"start"}, "/", "g", "b", Identity{"good": "g"})
	if err != nil {
		t.Fatal(err)
	}
	in := []session.Step{
		{Role: session.RoleEndpoints, Commit: "b", Verdict: "bad", Reason: "differ", Looks: 2},
		{Role: session.RoleMidpoint, Commit: "m", Verdict: "good", Reason: "like good", Looks: 6},
	}
	for i, s := range in {
		if err := st.AddStep(sess.ID, i, s); err != nil {
			t.Fatal(err)
		}
	}
	out, err := st.Decisions(sess.ID)
	if err != nil || len(out) != 2 || out[1].Commit != "m" || out[1].Looks != 6 || out[0].Role != session.RoleEndpoints {
		t.Fatalf("Decisions = %+v, %v", out, err)
	}
}

// TestOpenReadOnly: a store on a filesystem remounted read-only (a real
// tmpfs) cannot be opened for writing, and OpenReadOnly reads every session
// and event, also those a killed writer left in the WAL file.
func TestOpenReadOnly(t *testing.T) {
	dir := testenv.Tmpfs(t, "64m")
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := st.Begin(KindStart, []string{"start"}, "/src", "good", "bad", Identity{"repo": "/src"})
	for i := 0; i < 3; i++ {
		r := bisect.Run{Commit: "good", TPS: float64(100 + i)}
		if err := st.Append(a.ID, i, session.Event{Kind: session.EventRun, Commit: "good", Run: &r}); err != nil {
			t.Fatal(err)
		}
	}
	// Left open, as by a killed perfbisect: the last writes may be in the
	// WAL only. The remount needs no file open for writing: copy the files
	// as they are into a fresh tmpfs made read-only.
	ro := testenv.Tmpfs(t, "64m")
	files, _ := filepath.Glob(filepath.Join(dir, FileName+"*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ro, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	testenv.ReadOnly(t, ro, "64m")
	if _, err := Open(ro); err == nil || !errors.Is(err, syscall.EROFS) {
		t.Errorf("Open on a read-only filesystem: %v, want EROFS", err)
	}
	r, err := OpenReadOnly(ro)
	if err != nil {
		t.Fatalf("OpenReadOnly: %v (files %v)", err, files)
	}
	defer r.Close()
	x, err := r.LatestOf(KindStart)
	if err != nil || x == nil || x.ID != a.ID {
		t.Fatalf("latest session: %+v %v", x, err)
	}
	ev, err := r.Events(a.ID)
	if err != nil || len(ev) != 3 || ev[2].Run.TPS != 102 {
		t.Errorf("events read-only: %d %v, want the 3 stored", len(ev), err)
	}
	if err := r.Append(a.ID, 3, session.Event{Kind: session.EventRun, Commit: "good"}); err == nil {
		t.Errorf("a write to a read-only store succeeded")
	}

	// Closed cleanly (no WAL file left), then read-only.
	clean := testenv.Tmpfs(t, "64m")
	st, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if left, _ := filepath.Glob(filepath.Join(dir, FileName+"-*")); len(left) > 0 {
		t.Fatalf("a clean close left %v", left)
	}
	b, _ := os.ReadFile(filepath.Join(dir, FileName))
	if err := os.WriteFile(filepath.Join(clean, FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.ReadOnly(t, clean, "64m")
	r2, err := OpenReadOnly(clean)
	if err != nil {
		t.Fatalf("OpenReadOnly of a cleanly closed store: %v", err)
	}
	defer r2.Close()
	if ev, err := r2.Events(a.ID); err != nil || len(ev) != 3 {
		t.Errorf("events of the cleanly closed store: %d %v", len(ev), err)
	}
}
