package build

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/internal/testenv"
	"github.com/perfbisect/perfbisect/internal/testhosts"
)

func TestParseDistccHosts(t *testing.T) {
	for spec, want := range map[string]string{
		"localhost":                         "localhost -/2",
		"localhost/3 127.0.0.2/2,lzo":       "localhost -/3 127.0.0.2 127.0.0.2:3632/2",
		"build1:4000/8 --randomize":         "build1 build1:4000/8",
		"@build2/6,lzo,cpp user@build3":     "build2 -/6 build3 -/4",
		"[::1]/2,auth":                      "[::1] [::1]:3632/2",
		"[::1]:3700/4 b:3701":               "[::1] [::1]:3700/4 b b:3701/4",
		"--localslots=4 +zeroconf 10.0.0.5": "10.0.0.5 10.0.0.5:3632/4",
	} {
		hosts, err := ParseDistccHosts(spec)
		if err != nil {
			t.Errorf("%q: %v", spec, err)
			continue
		}
		var got []string
		for _, h := range hosts {
			addr := h.Addr
			if addr == "" {
				addr = "-"
			}
			if h.Name == addr {
				got = append(got, fmt.Sprintf("%s/%d", addr, h.Slots))
			} else {
				got = append(got, fmt.Sprintf("%s %s/%d", h.Name, addr, h.Slots))
			}
		}
		if g := strings.Join(got, " "); g != want {
			t.Errorf("%q: %s, want %s", spec, g, want)
		}
	}
	for spec, want := range map[string]string{
		"build1/0":       `limit "0"`,
		"build1/2,bogus": `option "bogus" is not one of distcc's`,
		"build1/x":       `limit "x"`,
		"build1:99999":   `port "99999"`,
		"/4":             "names no host",
		"--randomize":    "name no host",
		"":               "name no host",
	} {
		if _, err := ParseDistccHosts(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %s", spec, err, want)
		}
	}
	if hosts, _ := ParseDistccHosts("localhost/2 a/8 b"); FarmSlots(hosts) != 14 {
		t.Errorf("FarmSlots = %d, want 14", FarmSlots(hosts))
	}
}

// readCompiles on the lines distcc 3.4 and ccache 4.7 write.
func TestReadCompiles(t *testing.T) {
	dir := t.TempDir()
	dlog := filepath.Join(dir, "distcc.log")
	os.WriteFile(dlog, []byte(`distcc[11] compile from a.c to a.o
distcc[11] exec on 127.0.0.2/2: x86_64-linux-gnu-gcc -c a.c -o a.o
distcc[11] cpp a.c on localhost completed ok
distcc[11] compile a.c on 127.0.0.2/2 completed ok
distcc[12] exec on 127.0.0.3/2,lzo: x86_64-linux-gnu-gcc -c b.c -o b.o
distcc[12] compile b.c on 127.0.0.3/2,lzo completed ok
distcc[16] exec on 127.0.0.2/2: x86_64-linux-gnu-gcc -c f.c -o f.o
distcc[16] (dcc_readx) ERROR: unexpected eof on fd6
distcc[16] (dcc_r_token_int) ERROR: read failed while waiting for token "DONE"
distcc[16] exec on 127.0.0.3/2,lzo: x86_64-linux-gnu-gcc -c f.c -o f.o
distcc[16] compile f.c on 127.0.0.3/2,lzo completed ok
distcc[13] exec on 127.0.0.2/2: x86_64-linux-gnu-gcc -c c.c -o c.o
distcc[13] ERROR: nonblocking connect to 127.0.0.2:3632 failed: Connection refused
distcc[13] Warning: failed to distribute c.c to 127.0.0.2/2, running locally instead
distcc[13] exec on localhost: x86_64-linux-gnu-gcc -c c.c -o c.o
distcc[13] compile c.c on localhost completed ok
distcc[14] (dcc_build_somewhere) Warning: failed to distribute, running locally instead
distcc[14] exec on localhost: x86_64-linux-gnu-gcc -c d.c -o d.o
distcc[14] compile d.c on localhost completed ok
distcc[18] exec on 127.0.0.3/2,lzo: x86_64-linux-gnu-gcc -c bad.c -o bad.o
distcc[18] ERROR: compile bad.c on 127.0.0.3/2,lzo failed
distcc[18] exec on localhost: x86_64-linux-gnu-gcc -c bad.c -o bad.o
distcc[12] exec on 127.0.0.3/2,lzo: x86_64-linux-gnu-gcc -c h.c -o h.o
distcc[12] compile h.c on 127.0.0.3/2,lzo completed ok
distcc[17] exec on [::1]/2: x86_64-linux-gnu-gcc -c g.c -o g.o
distcc[17] ERROR: failed to resolve host [::1] port 3632: Name or service not known
distcc[17] exec on localhost: x86_64-linux-gnu-gcc -c g.c -o g.o
distcc[17] compile g.c on localhost completed ok
`), 0o644)
	clog := filepath.Join(dir, "ccache.log")
	os.WriteFile(clog, []byte("# a.c\ncache_miss\ndirect_cache_miss\n# f.c\ndirect_cache_hit\nlocal_storage_hit\n# g.c\npreprocessed_cache_hit\n"), 0o644)
	c := readCompiles(clog, dlog, "")
	want := "compiles: 2 from ccache, 7 compiled: 127.0.0.2 1, 127.0.0.3 3, this machine 3; 3 moved after a farm host failed: 127.0.0.2 Connection refused x2, [::1] not found (DNS) x1; 1 here with no farm host available"
	// A compile the compiler failed on a host (run here again by distcc)
	// is not a host failure; a pid that comes back is a new compile.
	if c.String() != want || c.Distributed() != 4 {
		t.Errorf("got %q (distributed %d)\nwant %q (4)", c, c.Distributed(), want)
	}
	// icecc 1.4's debug log: a host, a host lost mid-compile, a compile the
	// scheduler kept here, the stdout/stderr workaround, a pid that comes
	// back for another compile.
	ilog := filepath.Join(dir, "icecc.log")
	os.WriteFile(ilog, []byte(`ICECC[21] 2026-12-05 05:23:04: asking for host to use
ICECC[21] 2026-12-05 05:23:04: Have to use host 10.1.0.4:10245 - Job ID: 20 - env: x86_64 - has env: true - match j: 3
ICECC[22] 2026-12-05 05:23:04: asking for host to use
ICECC[22] 2026-12-05 05:23:04: Have to use host 10.1.0.4:10245 - Job ID: 21 - env: x86_64 - has env: true - match j: 3
ICECC[22] 2026-12-05 05:23:05: got exception Error 14 - error reading message from remote (10.1.0.4) 
ICECC[22] 2026-12-05 05:23:05: <building_local>
ICECC[23] 2026-12-05 05:23:04: asking for host to use
ICECC[23] 2026-12-05 05:23:04: building myself, but telling localhost
ICECC[24] 2026-12-05 05:23:04: asking for host to use
ICECC[24] 2026-12-05 05:23:04: Have to use host 10.1.0.5:10245 - Job ID: 22 - env: x86_64 - has env: true - match j: 1
ICECC[24] 2026-12-05 05:23:05: local build forced by remote exception: Error 102 - command needs stdout/stderr workaround, recompiling locally
ICECC[24] 2026-12-05 05:23:05: <building_local>
ICECC[21] 2026-12-05 05:23:09: asking for host to use
ICECC[21] 2026-12-05 05:23:09: Have to use host 10.1.0.5:10245 - Job ID: 30 - env: x86_64 - has env: true - match j: 1
`), 0o644)
	if s := readCompiles("", "", ilog).String(); s != "compiles: 5 compiled: 10.1.0.4 1, 10.1.0.5 1, this machine 3; 1 moved after a farm host failed: 10.1.0.4 error reading message from remote x1" {
		t.Errorf("icecc: %q", s)
	}
	if s := readCompiles("", filepath.Join(dir, "absent"), "").String(); s != "" {
		t.Errorf("no logs: %q, want nothing", s)
	}
	if s := readCompiles(clog, "", "").String(); s != "compiles: 2 from ccache, 1 compiled" {
		t.Errorf("ccache alone: %q", s)
	}
}

// farmUnits is the number of units of farmProject.
const farmUnits = 24

// farmProject is a project of farmUnits units that take a quarter of a
// second each to compile (the farm is busy long enough for a host to die
// in the middle of a build), its commit, what runs a server it built, and
// what the server built here without a farm computes.
func farmProject(t *testing.T) (p *project, commit string, exitOf func(prefix string) int, want int) {
	p = newProject(t, farmUnits)
	for i := 0; i < farmUnits; i++ {
		var src strings.Builder
		fmt.Fprintf(&src, "int u%d(void){ volatile int x = %d; int s = 0;\n", i, i+1)
		for k := 0; k < 4000; k++ {
			fmt.Fprintf(&src, " s += (x*%d) ^ (s >> 3);\n", k)
		}
		src.WriteString(" return s & 0xff; }\n")
		p.write(fmt.Sprintf("u%d.c", i), src.String())
	}
	commit = p.commit("heavier units")
	exitOf = func(prefix string) int {
		err := exec.Command(filepath.Join(prefix, "bin", "mariadbd")).Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	ref := &Builder{Repo: p.repo, StateDir: t.TempDir(), Recipe: Recipe{NoCcache: true}}
	prefix, err := ref.Build(context.Background(), commit)
	if err != nil {
		t.Fatal(err)
	}
	return p, commit, exitOf, exitOf(prefix)
}

// hostCount is a host's count in a build's "compiles:" line (0 when absent).
func hostCount(log, host string) int {
	m := regexp.MustCompile(`compiles: .*?\b` + regexp.QuoteMeta(host) + ` (\d+)`).FindStringSubmatch(log)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// A project built on a compile farm of two real distcc daemons on their own
// loopback addresses: each host's count in the build's words is what that
// daemon says it compiled; a host killed in the middle of the build costs
// the build nothing (its compiles go to the other host or run here, said as
// the machine's); with every host gone the build compiles here. Every
// build's server computes what the one built without a farm computes.
func TestBuildOnDistccFarm(t *testing.T) {
	testenv.Machine(t)
	testenv.Require(t, testenv.BuildTools, testenv.Distcc, testenv.Distccd)
	p, commit, exitOf, want := farmProject(t)
	const units = farmUnits

	t.Setenv("DISTCC_DIR", t.TempDir()) // distcc's backoff state: this test's own
	d2 := testhosts.StartDistccd(t, "127.0.0.2", 2)
	d3 := testhosts.StartDistccd(t, "127.0.0.3", 2)
	farmBuild := func(name string, during func(b *Builder)) (string, *Builder) {
		t.Setenv("CCACHE_DIR", t.TempDir()) // cold: every compile reaches distcc
		log := &testenv.Buffer{}
		b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Log: log, Recipe: Recipe{DistccHosts: d2.Host + "/2 " + d3.Host + "/2"}}
		if during != nil {
			b.Progress = func(pr Progress) {
				if pr.Step == "build" && pr.Percent < 0 {
					go during(b)
				}
			}
		}
		prefix, err := b.Build(context.Background(), commit)
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, log)
		}
		if got := exitOf(prefix); got != want {
			t.Errorf("%s: the server built on the farm exits %d, the one built here %d", name, got, want)
		}
		return log.String(), b
	}

	// Both hosts up.
	log, _ := farmBuild("both hosts", nil)
	t.Logf("both hosts:\n%s", log)
	n2, n3 := hostCount(log, d2.Host), hostCount(log, d3.Host)
	if n2 == 0 || n3 == 0 || n2 != d2.Compiled() || n3 != d3.Compiled() || n2+n3 < units {
		t.Errorf("both hosts: the build says %s %d, %s %d; the daemons compiled %d and %d; want both busy, %d units among them",
			d2.Host, n2, d3.Host, n3, d2.Compiled(), d3.Compiled(), units)
	}
	if strings.Contains(log, "failed") {
		t.Errorf("both hosts: a failure said:\n%s", log)
	}

	// 127.0.0.2 dies once it has completed a compile of this build.
	before2, before3 := d2.Compiled(), d3.Compiled()
	var killedAt int
	log, _ = farmBuild("a host killed", func(b *Builder) {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if d2.Compiled() > before2 {
				killedAt = d2.Compiled() - before2
				d2.Kill()
				return
			}
		}
	})
	t.Logf("a host killed after %d compiles:\n%s", killedAt, log)
	if killedAt == 0 {
		t.Fatalf("%s compiled nothing of the second build: the kill never came", d2.Host)
	}
	n2, n3 = hostCount(log, d2.Host), hostCount(log, d3.Host)
	here := hostCount(log, "this machine")
	// The killed daemon may die between sending a compile's object and
	// logging it: the build's count is where the objects came from.
	if done2 := d2.Compiled() - before2; n2 < done2 || n2 > done2+d2.Slots || n3 != d3.Compiled()-before3 {
		t.Errorf("a host killed: the build says %s %d, %s %d; the daemons compiled %d and %d",
			d2.Host, n2, d3.Host, n3, d2.Compiled()-before2, d3.Compiled()-before3)
	}
	if !regexp.MustCompile(`moved after a farm host failed: ` + regexp.QuoteMeta(d2.Host) + ` .* x\d`).MatchString(log) {
		t.Errorf("a host killed: the build does not say its compiles fell back from %s", d2.Addr)
	}
	if n2+n3+here < units || n2 >= units {
		t.Errorf("a host killed: %d + %d + %d here compiles, want the %d units among them and most away from the dead host", n2, n3, here, units)
	}

	// Every host gone: said before the build, compiled here.
	d3.Kill()
	log, _ = farmBuild("no host", nil)
	t.Logf("no host:\n%s", log)
	for _, d := range []*testhosts.Distccd{d2, d3} {
		if !strings.Contains(log, "distcc host "+d.Addr+" does not answer") || !strings.Contains(log, "not the revision's") {
			t.Errorf("no host: the build does not say %s is down as the machine's problem", d.Addr)
		}
	}
	if here := hostCount(log, "this machine"); here < units || hostCount(log, d2.Host)+hostCount(log, d3.Host) != 0 {
		t.Errorf("no host: %d compiled here, want all %d units", here, units)
	}
}

// The project built on an icecream farm of two real compile hosts, each an
// iceccd in its own network namespace with the scheduler in a third and
// this machine's iceccd in a fourth: each host's count in the build's words
// is what that host's daemon says it compiled; a host killed in the middle
// of the build costs the build nothing; with every host gone the compiles
// run here; with no iceccd on this machine the build says so and compiles
// here. Every server built computes what the one built without a farm
// computes.
func TestBuildOnIceccFarm(t *testing.T) {
	testenv.Machine(t)
	testenv.Require(t, testenv.BuildTools, testenv.Icecc, testenv.NetNS)
	p, commit, exitOf, want := farmProject(t)
	farm := testhosts.StartIcecc(t, testhosts.NewNetwork(t), 2, 2)
	h1, h2 := farm.Hosts[0], farm.Hosts[1]
	t.Setenv("ICECC_TEST_SOCKET", farm.Socket)
	farmBuild := func(name string, during func()) string {
		t.Setenv("CCACHE_DIR", t.TempDir()) // cold: every compile reaches icecc
		log := &testenv.Buffer{}
		b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Log: log, Recipe: Recipe{Icecc: true, Jobs: 6}}
		if during != nil {
			b.Progress = func(pr Progress) {
				if pr.Step == "build" && pr.Percent < 0 {
					go during()
				}
			}
		}
		prefix, err := b.Build(context.Background(), commit)
		if err != nil {
			t.Fatalf("%s: %v\n%s\n%s", name, err, log, farm.Logs())
		}
		if got := exitOf(prefix); got != want {
			t.Errorf("%s: the server built on the farm exits %d, the one built here %d", name, got, want)
		}
		t.Logf("%s:\n%s", name, log)
		return log.String()
	}

	log := farmBuild("both hosts", nil)
	n1, n2 := hostCount(log, h1.IP), hostCount(log, h2.IP)
	if n1 == 0 || n2 == 0 || n1 != h1.Compiled() || n2 != h2.Compiled() || n1+n2+hostCount(log, "this machine") < farmUnits {
		t.Errorf("both hosts: the build says %s %d, %s %d; the daemons compiled %d and %d; want both busy, %d units in all",
			h1.IP, n1, h2.IP, n2, h1.Compiled(), h2.Compiled(), farmUnits)
	}

	before1, before2 := h1.Compiled(), h2.Compiled()
	var killedAt int
	log = farmBuild("a host killed", func() {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if h1.Compiled() > before1 {
				killedAt = h1.Compiled() - before1
				h1.Kill()
				return
			}
		}
	})
	if killedAt == 0 {
		t.Fatalf("%s compiled nothing of the second build: the kill never came", h1.IP)
	}
	n1, n2 = hostCount(log, h1.IP), hostCount(log, h2.IP)
	// A compile the dead host had not finished counts where it was moved,
	// and one it finished but never sent back too (the daemon logged it).
	if done1 := h1.Compiled() - before1; n1 < done1-h1.Slots || n1 > done1+h1.Slots || n2 != h2.Compiled()-before2 || n1+n2+hostCount(log, "this machine") < farmUnits {
		t.Errorf("a host killed after %d compiles: the build says %s %d, %s %d (its daemon %d), here %d",
			killedAt, h1.IP, n1, h2.IP, n2, h2.Compiled()-before2, hostCount(log, "this machine"))
	}

	h2.Kill()
	log = farmBuild("no host", nil)
	if here := hostCount(log, "this machine"); here < farmUnits || hostCount(log, h1.IP)+hostCount(log, h2.IP) != 0 {
		t.Errorf("no host: %d compiled here, want all %d units", here, farmUnits)
	}

	// A daemon that is gone: the socket the build was told of is missing.
	t.Setenv("ICECC_TEST_SOCKET", filepath.Join(t.TempDir(), "no-daemon"))
	log = farmBuild("no iceccd", nil)
	if !strings.Contains(log, "icecc: no iceccd on this machine") || !strings.Contains(log, "not the revision's") {
		t.Errorf("no iceccd: the build does not say so as the machine's problem")
	}
}
