package build

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"

	"github.com/perfbisect/perfbisect/internal/reap"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

// project is a real git repository of a CMake C project with several
// translation units, a data file, and parts that running a server does not
// need (mysql-test/, include/, a static library).
type project struct {
	t     *testing.T
	dir   string
	git   func(args ...string) string
	repo  *git.Repository
	units int
}

func newProject(t *testing.T, units int) *project {
	t.Helper()
	testenv.Require(t, testenv.BuildTools) // a CMake project, built with cc
	p := &project{t: t, dir: t.TempDir(), units: units}
	p.git = gitIn(t, p.dir)
	p.git("init", "-q", "-b", "main")
	var srcs, decls, calls strings.Builder
	for i := 0; i < units; i++ {
		fmt.Fprintf(&srcs, " u%d.c", i)
		fmt.Fprintf(&decls, "int u%d(void);\n", i)
		fmt.Fprintf(&calls, "+u%d()", i)
		p.write(fmt.Sprintf("u%d.c", i), fmt.Sprintf("int u%d(void){return %d;}\n", i, i))
	}
	p.write("main.c", decls.String()+"int main(void){return (0"+calls.String()+")%7;}\n")
	p.write("CMakeLists.txt", "cmake_minimum_required(VERSION 3.10)\nproject(p C)\n"+
		"add_executable(mariadbd main.c"+srcs.String()+")\nadd_library(static STATIC u0.c)\n"+
		"install(TARGETS mariadbd DESTINATION bin)\ninstall(TARGETS static DESTINATION lib)\n"+
		"install(FILES data.txt DESTINATION share)\ninstall(FILES h.h DESTINATION include)\n"+
		"install(FILES h.h DESTINATION mysql-test/t)\n")
	p.write("data.txt", strings.Repeat("shared data\n", 1000))
	p.write("h.h", "/* header */\n")
	p.commit("v0")
	var err error
	if p.repo, err = git.PlainOpen(p.dir); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *project) write(name, content string) {
	p.t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(p.dir, name)), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, name), []byte(content), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

func (p *project) commit(msg string) string {
	p.git("add", "-A")
	p.git("commit", "-qm", msg)
	return p.git("rev-parse", "HEAD")
}

// counter returns a compiler launcher that counts its compiler runs (one line
// per run in the returned file) and the file.
func counter(t *testing.T) (launcher, count string) {
	dir := t.TempDir()
	count = filepath.Join(dir, "count")
	launcher = filepath.Join(dir, "launch.sh")
	script := "#!/bin/sh\necho \"$*\" >> " + count + "\nexec \"$@\"\n"
	if err := os.WriteFile(launcher, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return launcher, count
}

func compilerRuns(t *testing.T, count string) []string {
	b, err := os.ReadFile(count)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var runs []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(l, " -c ") { // a compile, not a link
			runs = append(runs, l)
		}
	}
	return runs
}

// The second revision's build recompiles only the translation unit that
// changed, without configuring again; a revision in the cache runs no compiler
// and returns the same prefix.
func TestIncrementalBuildAndCacheHit(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	p := newProject(t, 8)
	v0 := p.git("rev-parse", "HEAD")
	p.write("u5.c", "int u5(void){return 55;}\n")
	v1 := p.commit("v1")
	launcher, count := counter(t)
	b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Recipe: Recipe{NoCcache: true,
		CMakeArgs: []string{"-DCMAKE_C_COMPILER_LAUNCHER=" + launcher}}}
	ctx := context.Background()
	if b.Cached(v0) {
		t.Fatal("Cached before any build")
	}
	p0, err := b.Build(ctx, v0)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Cached(v0) || b.Cached(v1) {
		t.Errorf("after building v0: Cached(v0) %v, Cached(v1) %v", b.Cached(v0), b.Cached(v1))
	}
	if n := len(compilerRuns(t, count)); n != 10 { // main, 8 units, the static library's u0
		t.Fatalf("clean build compiled %d units, want 10", n)
	}
	os.Remove(count)
	p1, err := b.Build(ctx, v1)
	if err != nil {
		t.Fatal(err)
	}
	runs := compilerRuns(t, count)
	if len(runs) != 1 || !strings.Contains(runs[0], "u5.c") {
		t.Fatalf("incremental build compiled %d units, want only u5.c: %q", len(runs), runs)
	}
	log, _ := os.ReadFile(buildLog(t, b.StateDir, v1))
	if strings.Contains(string(log), "# configure") {
		t.Error("the build directory was configured again")
	}
	// Cache hit: the same prefix, no compiler run, even from a new Builder (a
	// later session).
	os.Remove(count)
	b2 := &Builder{Repo: p.repo, StateDir: b.StateDir, Recipe: b.Recipe}
	for _, c := range []struct{ commit, prefix string }{{v0, p0}, {v1, p1}} {
		got, err := b2.Build(ctx, c.commit)
		if err != nil || got != c.prefix {
			t.Fatalf("cached %s: %q, %v; want %s", c.commit, got, err, c.prefix)
		}
	}
	if runs := compilerRuns(t, count); len(runs) != 0 {
		t.Errorf("cache hits ran the compiler %d times", len(runs))
	}
	// The install went through DESTDIR into the cache entry; the compiled-in
	// prefix was never created.
	if _, err := os.Stat(filepath.Join(p1, "bin", "mariadbd")); err != nil {
		t.Error(err)
	}
	if ms, _ := filepath.Glob(filepath.Join(b.StateDir, "prefix-*")); len(ms) != 0 {
		t.Errorf("the fixed install prefix exists: %v", ms)
	}
}

// A cache entry keeps what running needs, drops tests, headers and static
// libraries, and shares unchanged files with the previous entry by hard link.
func TestCacheEntryIsPrunedAndShared(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	p := newProject(t, 2)
	v0 := p.git("rev-parse", "HEAD")
	p.write("u1.c", "int u1(void){return 11;}\n")
	v1 := p.commit("v1")
	b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Recipe: Recipe{NoCcache: true}}
	p0, err := b.Build(context.Background(), v0)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := b.Build(context.Background(), v1)
	if err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"mysql-test", "include", "lib/libstatic.a"} {
		if _, err := os.Stat(filepath.Join(p1, gone)); err == nil {
			t.Errorf("%s kept in the cache entry", gone)
		}
	}
	inode := func(path string) uint64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Sys().(*syscall.Stat_t).Ino
	}
	if inode(filepath.Join(p0, "share/data.txt")) != inode(filepath.Join(p1, "share/data.txt")) {
		t.Error("an unchanged file is not shared with the previous entry")
	}
	if inode(filepath.Join(p0, "bin/mariadbd")) == inode(filepath.Join(p1, "bin/mariadbd")) {
		t.Error("a changed binary is shared with the previous entry")
	}
	// Counted once: the two entries together hold less than twice one.
	entries := CacheEntries(b.StateDir)
	if len(entries) != 2 {
		t.Fatalf("%d cache entries, want 2", len(entries))
	}
	if entries[0].Dir != p1 || entries[1].Bytes >= entries[0].Bytes {
		t.Errorf("the older entry is charged %d bytes, the newer %d: shared files must be charged once, to the newer", entries[1].Bytes, entries[0].Bytes)
	}
}

// Least recently used entries beyond the budget are deleted, never one the
// Builder returned.
func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	p := newProject(t, 1)
	var commits []string
	for i := 0; i < 3; i++ {
		p.write("data.txt", strings.Repeat(fmt.Sprintf("revision %d\n", i), 40000)) // ~0.5 MB, new in each
		commits = append(commits, p.commit(fmt.Sprint("r", i)))
	}
	state := t.TempDir()
	ctx := context.Background()
	var prefixes []string
	for _, c := range commits {
		// A new Builder per revision: a later session, which does not protect
		// the earlier entries.
		b := &Builder{Repo: p.repo, StateDir: state, Recipe: Recipe{NoCcache: true}, CacheBudget: 1 << 20}
		pre, err := b.Build(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		prefixes = append(prefixes, pre)
		time.Sleep(20 * time.Millisecond) // distinct last-use times
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if exists(prefixes[0]) || !exists(prefixes[1]) || !exists(prefixes[2]) {
		t.Errorf("after 3 builds of ~0.6 MB with a 1 MiB budget: r0 %v r1 %v r2 %v; want only r0 evicted", exists(prefixes[0]), exists(prefixes[1]), exists(prefixes[2]))
	}
	// One Builder keeps every entry it returned, even over budget.
	b := &Builder{Repo: p.repo, StateDir: state, Recipe: Recipe{NoCcache: true}, CacheBudget: 1}
	for _, c := range commits {
		if _, err := b.Build(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for i, pre := range prefixes {
		if !exists(pre) {
			t.Errorf("r%d evicted while in use", i)
		}
	}
}

// A build past the timeout is killed with every process it started, and is a
// skip that is not remembered.
func TestBuildTimeoutKillsProcessGroup(t *testing.T) {
	p := newProject(t, 1)
	state := reap.Canonical(t.TempDir())
	b := &Builder{Repo: p.repo, StateDir: state, Timeout: 2 * time.Second,
		Recipe: Recipe{BuildCmd: "sleep 301 & sleep 302 & wait"}}
	_, err := b.Build(context.Background(), p.git("rev-parse", "HEAD"))
	var be *BuildError
	if !errors.As(err, &be) || !be.TimedOut || be.Machine {
		t.Fatalf("want a timed-out BuildError, got %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(reap.Find(state)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := reap.Find(state); len(left) > 0 {
		reap.Kill(left)
		t.Fatalf("processes left after the timeout: %+v", left)
	}
	if ms, _ := filepath.Glob(filepath.Join(state, "installs", "*", "*.failed.json")); len(ms) > 0 {
		t.Errorf("a timed-out build was remembered as failed: %v", ms)
	}
}

// A failure that is the machine's (a full disk) is not the revision's: it says
// so (the session stops) and is not remembered; a compiler error is remembered.
func TestBuildFailureKinds(t *testing.T) {
	p := newProject(t, 1)
	head := p.git("rev-parse", "HEAD")
	for _, c := range []struct {
		cmd               string
		machine, remember bool
	}{
		{`echo "cc1: fatal error: u0.s: No space left on device"; exit 1`, true, false},
		{`echo "u0.c:1:5: error: expected ';' before '}' token"; exit 1`, false, true},
		{`echo "something odd"; exit 1`, false, false},
		// Quoted source lines under a warning are not diagnostics.
		{`printf 'w.c:3:4: warning: x\n    3 |   printf("error: No space left on device");\ncc: fatal error: Killed signal terminated program cc1\n'; exit 1`, true, false},
		{`printf 'w.c:3:4: warning: x\n    3 |   printf("No space left on device: %%d");\nmain.c:1:1: error: expected ;\n'; exit 1`, false, true},
		// A missing header may be a -dev package the machine lacks: not remembered.
		{`echo "main.c:1:10: fatal error: pcre2.h: No such file or directory"; exit 1`, false, false},
		{`echo "CMake Error at CMakeLists.txt:3: Could NOT find OpenSSL"; exit 1`, true, false},
	} {
		state := t.TempDir()
		b := &Builder{Repo: p.repo, StateDir: state, Recipe: Recipe{BuildCmd: c.cmd}}
		_, err := b.Build(context.Background(), head)
		var be *BuildError
		if !errors.As(err, &be) {
			t.Fatalf("%s: want a BuildError, got %v", c.cmd, err)
		}
		if be.Machine != c.machine || len(be.Lines) == 0 {
			t.Errorf("%s: Machine %v (want %v), lines %q", c.cmd, be.Machine, c.machine, be.Lines)
		}
		ms, _ := filepath.Glob(filepath.Join(state, "installs", "*", "*.failed.json"))
		if (len(ms) > 0) != c.remember {
			t.Errorf("%s: remembered %v, want %v", c.cmd, len(ms) > 0, c.remember)
		}
	}
}

// --build-cmd/--install-cmd: the commands get the directories in their
// environment and install into $DESTDIR$PREFIX.
func TestBuildCommand(t *testing.T) {
	p := newProject(t, 1)
	b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Recipe: Recipe{
		BuildCmd:   `test -f "$SRC/main.c" && cc -o prog "$SRC/main.c" "$SRC/u0.c" && echo "[ 50%] linked"`,
		InstallCmd: `mkdir -p "$DESTDIR$PREFIX/bin" && cp prog "$DESTDIR$PREFIX/bin/mariadbd" && echo "$JOBS" > "$DESTDIR$PREFIX/jobs"`,
		Jobs:       3}}
	var pcts []int
	b.Progress = func(pr Progress) {
		if pr.Step == "build" && pr.Percent >= 0 {
			pcts = append(pcts, pr.Percent)
		}
	}
	prefix, err := b.Build(context.Background(), p.git("rev-parse", "HEAD"))
	if err != nil {
		t.Fatal(err)
	}
	if jobs, _ := os.ReadFile(filepath.Join(prefix, "jobs")); strings.TrimSpace(string(jobs)) != "3" {
		t.Errorf("JOBS = %q", jobs)
	}
	if _, err := os.Stat(filepath.Join(prefix, "bin", "mariadbd")); err != nil {
		t.Error(err)
	}
	if len(pcts) != 1 || pcts[0] != 50 {
		t.Errorf("progress from the build output: %v, want [50]", pcts)
	}
}

func TestPercent(t *testing.T) {
	for line, want := range map[string]int{
		"[ 45%] Building C object CMakeFiles/x.dir/a.c.o": 45,
		"[100%] Linking C executable mariadbd":            100,
		"[12/345] Building CXX object sql/CMakeFiles/x.o": 3,
		"[345/345] Linking CXX executable sql/mariadbd":   100,
		"Scanning dependencies of target x":               -1,
		"gcc -c a.c [ 45%]":                               -1,
	} {
		if got := Percent(line); got != want {
			t.Errorf("Percent(%q) = %d, want %d", line, got, want)
		}
	}
}

// --distcc-hosts: the compiles go through distcc (behind ccache when it is
// installed, as the launcher without it). "localhost" makes distcc compile
// locally, which is enough to see that it ran.
func TestDistccIsWiredIn(t *testing.T) {
	testenv.Require(t, testenv.BuildTools, testenv.Distcc)
	t.Setenv("DISTCC_VERBOSE", "1")
	t.Setenv("DISTCC_DIR", t.TempDir())
	t.Setenv("CCACHE_DIR", t.TempDir()) // cold: every compile is a miss that reaches distcc
	p := newProject(t, 2)
	for _, noCcache := range []bool{false, true} {
		out := &testenv.Buffer{}
		b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Log: out, Recipe: Recipe{DistccHosts: "localhost", NoCcache: noCcache}}
		commit := p.git("rev-parse", "HEAD")
		if _, err := b.Build(context.Background(), commit); err != nil {
			t.Fatal(err)
		}
		// distcc logs beside the build log (DISTCC_LOG), and the build
		// line counts its compiles: localhost is this machine.
		dlog, _ := os.ReadFile(strings.TrimSuffix(buildLog(t, b.StateDir, commit), ".log") + "-distcc.log")
		if strings.Count(string(dlog), "distcc[") == 0 || hostCount(out.String(), "this machine") < 3 {
			t.Errorf("no ccache %v: distcc did not run:\n%s\n%s", noCcache, out, dlog)
		}
	}
}

// In a known server tree (a preset applies) the cache keeps the server and
// the initialiser's helpers from bin/, not the client programs; symlinks to
// what was dropped go too.
func TestLeanEntryOfAServerTree(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	p := newProject(t, 1)
	p.write("VERSION", "MYSQL_VERSION_MAJOR=10\nMYSQL_VERSION_MINOR=11\nMYSQL_VERSION_PATCH=18\n")
	p.write("CMakeLists.txt", "cmake_minimum_required(VERSION 3.10)\nproject(p C)\n"+
		"add_executable(mariadbd main.c u0.c)\nadd_executable(mariadb-dump main.c u0.c)\nadd_executable(my_print_defaults main.c u0.c)\n"+
		"install(TARGETS mariadbd mariadb-dump my_print_defaults DESTINATION bin)\n"+
		"install(CODE \"file(CREATE_LINK mariadb-dump \\$ENV{DESTDIR}\\${CMAKE_INSTALL_PREFIX}/bin/mysqldump SYMBOLIC)\")\n"+
		"install(CODE \"file(CREATE_LINK mariadbd \\$ENV{DESTDIR}\\${CMAKE_INSTALL_PREFIX}/bin/mysqld SYMBOLIC)\")\n")
	commit := p.commit("a server tree")
	b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Recipe: Recipe{NoCcache: true}}
	prefix, err := b.Build(context.Background(), commit)
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(prefix, "bin"))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "mariadbd my_print_defaults mysqld" {
		t.Errorf("bin/ keeps %q, want mariadbd my_print_defaults mysqld", names)
	}
}

// A revision that changes an option()'s default gets it: the build directory's
// CMake cache does not carry the earlier revision's value over.
func TestChangedCMakeDefaultIsNotCarriedOver(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	p := newProject(t, 1)
	cm := func(def string) string {
		return "cmake_minimum_required(VERSION 3.10)\nproject(p C)\noption(WITH_FAST \"fast\" " + def + ")\n" +
			"if(WITH_FAST)\nadd_definitions(-DFAST)\nendif()\nadd_executable(mariadbd main.c)\ninstall(TARGETS mariadbd DESTINATION bin)\n"
	}
	p.write("main.c", "int main(void){\n#ifdef FAST\nreturn 7;\n#else\nreturn 0;\n#endif\n}\n")
	p.write("CMakeLists.txt", cm("OFF"))
	slow := p.commit("slow default")
	p.write("CMakeLists.txt", cm("ON"))
	fast := p.commit("fast default")
	b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Recipe: Recipe{NoCcache: true}}
	code := func(prefix string) int { return exitCode(t, prefix) }
	for _, c := range []struct {
		commit string
		want   int
	}{{slow, 0}, {fast, 7}, {slow, 0}} {
		os.RemoveAll(filepath.Join(b.StateDir, "installs")) // build again, in this order
		prefix, err := b.Build(context.Background(), c.commit)
		if err != nil {
			t.Fatal(err)
		}
		if got := code(prefix); got != c.want {
			t.Errorf("%.7s: the server returns %d, want %d (the build directory's cached option won)", c.commit, got, c.want)
		}
	}
}

// A build that succeeds but leaves a child running (holding the output open)
// is a success, and the child is ended; a timed-out build's children that left
// the process group (setsid) are ended too.
func TestBuildLeftovers(t *testing.T) {
	p := newProject(t, 1)
	head := p.git("rev-parse", "HEAD")
	state := reap.Canonical(t.TempDir())
	b := &Builder{Repo: p.repo, StateDir: state, Recipe: Recipe{
		BuildCmd: `sleep 303 & mkdir -p "$DESTDIR/bin" && cp /bin/true "$DESTDIR/bin/mariadbd"`}}
	if _, err := b.Build(context.Background(), head); err != nil {
		t.Fatalf("a build that left a child running: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	if left := reap.Find(state); len(left) > 0 {
		reap.Kill(left)
		t.Errorf("left running after a successful build: %+v", left)
	}
	state2 := reap.Canonical(t.TempDir())
	b2 := &Builder{Repo: p.repo, StateDir: state2, Timeout: time.Second, Recipe: Recipe{BuildCmd: `trap "" TERM; setsid sleep 304 & sleep 305`}}
	if _, err := b2.Build(context.Background(), head); err == nil {
		t.Fatal("want a timeout")
	}
	time.Sleep(200 * time.Millisecond)
	if left := reap.Find(state2); len(left) > 0 {
		reap.Kill(left)
		t.Errorf("left running after a timeout: %+v", left)
	}
}

// An install that writes nothing is a failure, not an empty cache entry; what
// an interrupted earlier session left in the cache is removed.
func TestEmptyInstallAndInterruptedLeftovers(t *testing.T) {
	p := newProject(t, 1)
	state := t.TempDir()
	stale := filepath.Join(state, "installs", "0123456789ab", "deadbeef.tmp", "bin")
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	b := &Builder{Repo: p.repo, StateDir: state, Recipe: Recipe{BuildCmd: `mkdir -p "$DESTDIR$PREFIX/bin"`}}
	_, err := b.Build(context.Background(), p.git("rev-parse", "HEAD"))
	var be *BuildError
	if !errors.As(err, &be) || be.Step != "install" || !strings.Contains(err.Error(), "nothing was installed") || strings.HasSuffix(err.Error(), ": ") {
		t.Errorf("empty install: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(stale)); err == nil {
		t.Error("an interrupted install of an earlier session was kept")
	}
}
