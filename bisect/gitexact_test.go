package bisect

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// These tests build real repositories with the git CLI and check that Next
// names the very commit `git rev-list --bisect` names, at every step of whole
// bisections, with and without --first-parent, and that Candidates lists the
// commits in `git rev-list`'s order.

const baseDate = 1600000000

// gitEnv is the environment of every git command of the tests: no user or
// system configuration, a fixed identity.
func gitEnv(home string) []string {
	return append(os.Environ(),
		"HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
}

// runGit runs git in dir with extra environment and stdin, failing the test on
// error, and returns the trimmed output.
func runGit(t testing.TB, dir string, env []string, stdin []byte, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(dir), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, stderr.Bytes())
	}
	return strings.TrimSpace(string(out))
}

// porcelain builds a history with ordinary git commands (commit, checkout,
// merge), each dated explicitly through GIT_AUTHOR_DATE/GIT_COMMITTER_DATE.
type porcelain struct {
	t     testing.TB
	dir   string
	date  int64
	step  int64 // added to date before each commit; 0 gives equal dates
	names map[string]string
}

func newPorcelain(t testing.TB, step int64) *porcelain {
	p := &porcelain{t: t, dir: t.TempDir(), date: baseDate, step: step, names: map[string]string{}}
	p.git("init", "-q", "-b", "main")
	return p
}

func (p *porcelain) git(args ...string) string {
	p.t.Helper()
	d := fmt.Sprintf("@%d +0000", p.date)
	return runGit(p.t, p.dir, []string{"GIT_AUTHOR_DATE=" + d, "GIT_COMMITTER_DATE=" + d}, nil, args...)
}

// commit makes an empty commit named name on the current branch.
func (p *porcelain) commit(name string) string {
	p.t.Helper()
	p.date += p.step
	p.git("commit", "-q", "--allow-empty", "-m", name)
	p.names[name] = p.git("rev-parse", "HEAD")
	return p.names[name]
}

// merge merges rev into the current branch with a merge commit named name.
func (p *porcelain) merge(name, rev string) string {
	p.t.Helper()
	p.date += p.step
	p.git("merge", "-q", "--no-ff", "-m", name, rev)
	p.names[name] = p.git("rev-parse", "HEAD")
	return p.names[name]
}

func (p *porcelain) checkout(args ...string) {
	p.t.Helper()
	p.git(append([]string{"checkout", "-q"}, args...)...)
}

// dagNode is a commit of a generated history: parents by index (smaller than
// its own) and committer date.
type dagNode struct {
	parents []int
	date    int64
}

// fastImport writes nodes into a new repository in one git fast-import run
// (dates explicit in the stream) and returns their hashes; the branch main
// points at the last one.
func fastImport(t *testing.T, nodes []dagNode) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	runGit(t, dir, nil, nil, "init", "-q", "-b", "main")
	var b bytes.Buffer
	for i, n := range nodes {
		msg := fmt.Sprintf("c%d", i)
		fmt.Fprintf(&b, "reset refs/heads/build\ncommit refs/heads/build\nmark :%d\n", i+1)
		fmt.Fprintf(&b, "author t <t@example.com> %d +0000\ncommitter t <t@example.com> %d +0000\n", n.date, n.date)
		fmt.Fprintf(&b, "data %d\n%s\n", len(msg), msg)
		for j, p := range n.parents {
			if j == 0 {
				fmt.Fprintf(&b, "from :%d\n", p+1)
			} else {
				fmt.Fprintf(&b, "merge :%d\n", p+1)
			}
		}
		content := fmt.Sprintf("%d\n", i)
		fmt.Fprintf(&b, "M 644 inline f\ndata %d\n%s\n", len(content), content)
	}
	fmt.Fprintf(&b, "reset refs/heads/main\nfrom :%d\n\n", len(nodes))
	marks := filepath.Join(dir, ".git", "marks")
	runGit(t, dir, nil, b.Bytes(), "fast-import", "--quiet", "--export-marks="+marks)
	data, err := os.ReadFile(marks)
	if err != nil {
		t.Fatal(err)
	}
	hashes := make([]string, len(nodes))
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m int
		var h string
		if _, err := fmt.Sscanf(line, ":%d %s", &m, &h); err != nil {
			t.Fatalf("marks line %q: %v", line, err)
		}
		hashes[m-1] = h
	}
	return dir, hashes
}

// gitOracle answers rev-list questions about one repository, memoised (the
// bisections of one history share their first steps).
type gitOracle struct {
	t    *testing.T
	dir  string
	mu   sync.Mutex
	memo map[string]string
}

func (o *gitOracle) revList(args ...string) string {
	o.t.Helper()
	key := strings.Join(args, " ")
	o.mu.Lock()
	out, ok := o.memo[key]
	o.mu.Unlock()
	if ok {
		return out
	}
	out = runGit(o.t, o.dir, nil, nil, append([]string{"rev-list"}, args...)...)
	o.mu.Lock()
	if o.memo == nil {
		o.memo = map[string]string{}
	}
	o.memo[key] = out
	o.mu.Unlock()
	return out
}

// revArgs is "[--first-parent] bad ^good..." for rev-list.
func revArgs(opts Options, bad string, goods []string) []string {
	var args []string
	if opts.FirstParent {
		args = append(args, "--first-parent")
	}
	args = append(args, bad)
	for _, g := range goods {
		args = append(args, "^"+g)
	}
	return args
}

// readRange reads the history between good and bad the way perfbisect does:
// OpenRepo, Range.
func readRange(t *testing.T, dir, good, bad string) []Commit {
	t.Helper()
	r, err := OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := Range(r, good, bad)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Time == 0 {
			t.Fatalf("Range left Time 0 on %s", c.Hash)
		}
	}
	return cs
}

// bisectLikeGit runs a whole bisection for culprit (a commit is bad when it
// reaches culprit) and checks every step against git: Candidates against
// `git rev-list`, Next against `git rev-list --bisect`, the marks so far given
// to git as the current bad and every good. It returns the number of steps.
//
// With skewed non-nil, a history whose committer dates go backwards is
// allowed one known divergence: git's walk (limit_list) stops a few commits
// after everything left in its queue is older than the last interesting commit
// and uninteresting, so under clock skew it can keep commits that are in fact
// ancestors of a good commit (it has not yet marked them). Search never
// proposes such commits. Where git's candidates are exactly those, and
// ours are its list without them, the step counts in *skewed and Next is
// not compared; any other difference fails.
func bisectLikeGit(t *testing.T, o *gitOracle, cs []Commit, good, bad string, opts Options, culprit string, skewed *int) int {
	t.Helper()
	s, err := NewSearchOptions(cs, []string{good}, bad, opts)
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string][]string{}
	for _, c := range cs {
		parents[c.Hash] = c.Parents
	}
	reaches := func(from string) bool {
		seen := map[string]bool{}
		stack := []string{from}
		for len(stack) > 0 {
			h := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if h == culprit {
				return true
			}
			if !seen[h] {
				seen[h] = true
				stack = append(stack, parents[h]...)
			}
		}
		return false
	}
	goods := []string{good}
	for step := 0; ; step++ {
		if step > 100 {
			t.Fatal("bisection does not end")
		}
		args := revArgs(opts, bad, goods)
		want := o.revList(append([]string{"--bisect"}, args...)...)
		if gitList, ours := o.revList(args...), strings.Join(s.Candidates(), "\n"); ours != gitList {
			if skewed == nil || !skewExplains(o, strings.Split(gitList, "\n"), s.Candidates(), goods) {
				t.Fatalf("step %d: Candidates differ from git rev-list %s\ngot:\n%s\nwant:\n%s", step, strings.Join(args, " "), ours, gitList)
			}
			*skewed++
			want = ""
		}
		got, ok := s.Next()
		if !ok {
			if n := len(s.Candidates()); n != 1 || (want != bad && want != "") {
				t.Fatalf("step %d: Next is over with %d candidates; git rev-list --bisect %s names %s (bad %s)", step, n, strings.Join(args, " "), want, bad)
			}
			if r := s.Result(); r.Outcome != Found || r.FirstBad != culprit {
				t.Fatalf("culprit %.10s: result %+v", culprit, r)
			}
			return step
		}
		if want != "" && got != want {
			w := s.weights()
			t.Fatalf("step %d: Next = %.10s (w=%d), git rev-list --bisect %s = %.10s (w=%d), N=%d",
				step, got, w[got], strings.Join(args, " "), want, w[want], len(s.Candidates()))
		}
		if reaches(got) {
			s.Mark(got, Bad)
			bad = got
		} else {
			s.Mark(got, Good)
			goods = append(goods, got)
		}
	}
}

// checkHistory bisects the history good..bad in both modes against git, for
// perMode random culprits per mode (every candidate when perMode is 0 or
// there are fewer).
func checkHistory(t *testing.T, dir, good, bad string, rng *rand.Rand, perMode int) {
	t.Helper()
	o := &gitOracle{t: t, dir: dir}
	cs := readRange(t, dir, good, bad)
	for _, opts := range []Options{{}, {FirstParent: true}} {
		s, err := NewSearchOptions(cs, []string{good}, bad, opts)
		if err != nil {
			t.Fatal(err)
		}
		cands := s.Candidates()
		// Synthetic commits (Time 0 everywhere) behave as git does with
		// equal dates.
		zero := slices.Clone(cs)
		for i := range zero {
			zero[i].Time = 0
		}
		z, err := NewSearchOptions(zero, []string{good}, bad, opts)
		if err != nil {
			t.Fatal(err)
		}
		zn, _ := z.Next()
		if sn, _ := s.Next(); allEqualTimes(cs) && (!slices.Equal(z.Candidates(), cands) || zn != sn) {
			t.Errorf("Time 0 differs from equal dates: %v/%s vs %v/%s", z.Candidates(), zn, cands, sn)
		}
		picks := cands
		if perMode > 0 && len(cands) > perMode {
			picks = nil
			for _, i := range rng.Perm(len(cands))[:perMode] {
				picks = append(picks, cands[i])
			}
		}
		for _, c := range picks {
			bisectLikeGit(t, o, cs, good, bad, opts, c, nil)
		}
	}
}

// TestGitExactHandmade checks hand-made histories built with git commit and
// git merge: linear, side branches merged back (and main merged into a side
// branch), criss-cross merges, with increasing and with equal dates.
func TestGitExactHandmade(t *testing.T) {
	builds := map[string]func(p *porcelain) (good, bad string){
		"linear": func(p *porcelain) (string, string) {
			good := p.commit("base")
			var bad string
			for i := 1; i <= 32; i++ {
				bad = p.commit(fmt.Sprintf("c%d", i))
			}
			return good, bad
		},
		"side-branches": func(p *porcelain) (string, string) {
			p.commit("root")
			good := p.commit("m0")
			p.commit("m1")
			p.commit("m2")
			p.checkout("-b", "feat", p.names["m1"])
			p.commit("f1")
			p.checkout("main")
			p.commit("m3")
			p.checkout("feat")
			p.commit("f2")
			p.merge("sync-main-into-feat", "main")
			p.commit("f3")
			p.checkout("-b", "fix", p.names["root"]) // forked before good
			p.commit("x1")
			p.commit("x2")
			p.checkout("main")
			p.commit("m4")
			p.merge("merge-feat", "feat")
			p.commit("m5")
			p.merge("merge-fix", "fix")
			for i := 6; i <= 12; i++ {
				p.commit(fmt.Sprintf("m%d", i))
			}
			return good, p.names["m12"]
		},
		"criss-cross": func(p *porcelain) (string, string) {
			good := p.commit("base")
			p.commit("m1")
			p.checkout("-b", "a")
			p.commit("a1")
			p.commit("a2")
			p.checkout("-b", "b", p.names["m1"])
			p.commit("b1")
			p.checkout("a")
			p.merge("a-merges-b", p.names["b1"])
			p.checkout("b")
			p.merge("b-merges-a", p.names["a2"])
			p.commit("b2")
			p.checkout("a")
			p.commit("a3")
			p.merge("a-merges-b-again", "b")
			p.checkout("b")
			p.commit("b3")
			p.merge("b-merges-a-again", p.names["a3"])
			p.checkout("main")
			p.commit("m2")
			p.merge("main-merges-a", "a")
			p.merge("main-merges-b", "b")
			p.commit("m3")
			p.commit("m4")
			return good, p.names["m4"]
		},
	}
	for name, build := range builds {
		for _, dates := range []struct {
			name string
			step int64
		}{{"increasing", 60}, {"equal", 0}} {
			t.Run(name+"/"+dates.name, func(t *testing.T) {
				t.Parallel()
				p := newPorcelain(t, dates.step)
				good, bad := build(p)
				checkHistory(t, p.dir, good, bad, rand.New(rand.NewSource(1)), 5)
			})
		}
	}
}

// randomDAG makes a history of n commits: work on several branches, new
// branches forked from any commit, a few extra roots, merges of branch tips
// and of older commits (criss-cross ones among them), never octopus merges.
// Dates by mode: 0 increasing, 1 all equal, 2 equal in groups of four, 3 a
// child at its newest parent's date or up to two steps later (so side
// branches interleave, with many ties).
func randomDAG(rng *rand.Rand, n, mode int) []dagNode {
	nodes := []dagNode{{}}
	tips := []int{0}
	add := func(parents ...int) int {
		nodes = append(nodes, dagNode{parents: parents})
		return len(nodes) - 1
	}
	for len(nodes) < n-1 {
		r := rng.Float64()
		switch {
		case r < 0.5:
			i := rng.Intn(len(tips))
			tips[i] = add(tips[i])
		case r < 0.62:
			tips = append(tips, add(rng.Intn(len(nodes))))
		case r < 0.65:
			tips = append(tips, add())
		case len(tips) >= 2 && r < 0.9:
			i, j := rng.Intn(len(tips)), rng.Intn(len(tips)-1)
			if j >= i {
				j++
			}
			tips[i] = add(tips[i], tips[j])
			if rng.Intn(2) == 0 { // the merged branch ends
				tips = append(tips[:j], tips[j+1:]...)
			}
		default:
			i := rng.Intn(len(tips))
			if o := rng.Intn(len(nodes)); o != tips[i] {
				tips[i] = add(tips[i], o)
			}
		}
	}
	// main (tips[0]) merges another branch at the end.
	if len(tips) > 1 {
		tips[0] = add(tips[0], tips[1+rng.Intn(len(tips)-1)])
	} else {
		tips[0] = add(tips[0])
	}
	if tips[0] != len(nodes)-1 {
		panic("bad is not last")
	}
	for i := range nodes {
		switch mode {
		case 0:
			nodes[i].date = baseDate + int64(i)*100 + rng.Int63n(50)
		case 1:
			nodes[i].date = baseDate
		case 2:
			nodes[i].date = baseDate + int64(i/4)*100
		case 3:
			d := int64(baseDate)
			for _, p := range nodes[i].parents {
				d = max(d, nodes[p].date)
			}
			nodes[i].date = d + int64(rng.Intn(3))*100
		}
	}
	return nodes
}

// TestGitExactRandomDAGs checks 40 generated histories of 20 to 80 commits
// (fixed seed), each bisected for two random culprits without and two with
// --first-parent, against git at every step.
func TestGitExactRandomDAGs(t *testing.T) {
	rng := rand.New(rand.NewSource(20240611))
	for k := 0; k < 40; k++ {
		n := 20 + rng.Intn(61)
		mode := k % 4
		seed := rng.Int63()
		t.Run(fmt.Sprintf("dag%02d-n%d-dates%d", k, n, mode), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewSource(seed))
			nodes := randomDAG(rng, n, mode)
			dir, hashes := fastImport(t, nodes)
			bad := hashes[len(hashes)-1]
			// good: a random proper ancestor of bad (often the root).
			anc := map[int]bool{}
			var walk func(int)
			walk = func(i int) {
				if !anc[i] {
					anc[i] = true
					for _, p := range nodes[i].parents {
						walk(p)
					}
				}
			}
			walk(len(nodes) - 1)
			var ancs []int
			for i := range anc {
				if i != len(nodes)-1 {
					ancs = append(ancs, i)
				}
			}
			slices.Sort(ancs)
			good := hashes[ancs[rng.Intn(len(ancs)/2+1)]]
			o := &gitOracle{t: t, dir: dir}
			cs := readRange(t, dir, good, bad)
			for _, opts := range []Options{{}, {FirstParent: true}} {
				s, err := NewSearchOptions(cs, []string{good}, bad, opts)
				if err != nil {
					t.Fatal(err)
				}
				cands := s.Candidates()
				for i := 0; i < 2; i++ {
					bisectLikeGit(t, o, cs, good, bad, opts, cands[rng.Intn(len(cands))], nil)
				}
			}
		})
	}
}

// TestGitExactLargeLinear checks a chain long enough (4100 commits) for
// git's looser half-way test (|2w - N| < N/1024) to pick a commit other
// than the exact middle.
func TestGitExactLargeLinear(t *testing.T) {
	t.Parallel()
	const n = 4100
	nodes := make([]dagNode, n)
	for i := range nodes {
		nodes[i].date = baseDate + int64(i)
		if i > 0 {
			nodes[i].parents = []int{i - 1}
		}
	}
	dir, hashes := fastImport(t, nodes)
	o := &gitOracle{t: t, dir: dir}
	cs := readRange(t, dir, hashes[0], hashes[n-1])
	s, err := NewSearch(cs, []string{hashes[0]}, hashes[n-1])
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.Next()
	want := o.revList("--bisect", hashes[n-1], "^"+hashes[0])
	if got != want {
		t.Fatalf("Next = %s, git = %s", got, want)
	}
	// N = 4099, N/1024 = 4: git stops at the first weight with |2w-N| < 4,
	// counting from the oldest: w = 2048 (2w-N = -3), not 2049 or 2050.
	if w := s.weights()[got]; w != 2048 {
		t.Errorf("pick reaches %d of %d", w, n-1)
	}
	bisectLikeGit(t, o, cs, hashes[0], hashes[n-1], Options{}, hashes[1234], nil)
}

// skewExplains reports whether git's candidate list differs from ours only
// by commits that are ancestors of a good commit, in the same order otherwise.
func skewExplains(o *gitOracle, gitList, ours, goods []string) bool {
	goodAnc := map[string]bool{}
	for _, h := range strings.Split(o.revList(goods...), "\n") {
		goodAnc[h] = true
	}
	var rest []string
	extra := 0
	for _, h := range gitList {
		if goodAnc[h] {
			extra++
			continue
		}
		rest = append(rest, h)
	}
	return extra > 0 && slices.Equal(rest, ours)
}

// TestGitClockSkew bisects histories whose dates go backwards (a child older
// than its parent) against git. Where git's walk has not yet found that some
// commits are ancestors of a good one (see bisectLikeGit), git may propose a
// commit already known good; Search does not, and the step is only counted.
// Every other step must match git exactly.
func TestGitClockSkew(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for k := 0; k < 10; k++ {
		n := 20 + rng.Intn(61)
		nodes := randomDAG(rng, n, 0)
		for i := range nodes {
			nodes[i].date = baseDate + rng.Int63n(5)*100
		}
		seed := rng.Int63()
		t.Run(fmt.Sprintf("dag%02d-n%d", k, n), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewSource(seed))
			dir, hashes := fastImport(t, nodes)
			good, bad := hashes[0], hashes[len(hashes)-1]
			o := &gitOracle{t: t, dir: dir}
			cs := readRange(t, dir, good, bad)
			skewed, steps := 0, 0
			for _, opts := range []Options{{}, {FirstParent: true}} {
				s, err := NewSearchOptions(cs, []string{good}, bad, opts)
				if err != nil {
					t.Fatal(err)
				}
				cands := s.Candidates()
				for i := 0; i < 2; i++ {
					steps += bisectLikeGit(t, o, cs, good, bad, opts, cands[rng.Intn(len(cands))], &skewed)
				}
			}
			if skewed > 0 {
				t.Logf("%d of %d steps: git's walk kept ancestors of good commits (clock skew)", skewed, steps)
			}
		})
	}
}

func allEqualTimes(cs []Commit) bool {
	for _, c := range cs {
		if c.Time != cs[0].Time {
			return false
		}
	}
	return true
}
