package build

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

// reuseCMake is a project whose build has the traps that made an incremental
// build compile another revision's code: gen.c stands for a release's
// pre-generated parser, copied into the build directory only when no copy is
// there yet (MariaDB's COPY_BISON_OUTPUT); WITH_FAST is an option() whose
// default a revision may change; extra/*.c is globbed (a file added or
// removed there changes the program without any CMakeLists.txt change).
func reuseCMake(fast string) string {
	return `cmake_minimum_required(VERSION 3.10)
project(p C)
option(WITH_FAST "fast" ` + fast + `)
if(WITH_FAST)
  add_definitions(-DFAST=100)
else()
  add_definitions(-DFAST=0)
endif()
if(NOT EXISTS ${CMAKE_BINARY_DIR}/gen.c)
  configure_file(${CMAKE_SOURCE_DIR}/gen.c ${CMAKE_BINARY_DIR}/gen.c COPYONLY)
endif()
file(GLOB EXTRAS ${CMAKE_SOURCE_DIR}/extra/*.c)
include_directories(${CMAKE_SOURCE_DIR}/inc2 ${CMAKE_SOURCE_DIR}/inc1)
file(CREATE_LINK ${CMAKE_SOURCE_DIR}/tests ${CMAKE_BINARY_DIR}/tests SYMBOLIC)
add_executable(mariadbd main.c unit.c ${CMAKE_BINARY_DIR}/gen.c ${EXTRAS})
install(TARGETS mariadbd DESTINATION bin)
`
}

// exitCode runs the installed server of prefix and returns its exit code.
func exitCode(t *testing.T, prefix string) int {
	t.Helper()
	return exitOf(t, filepath.Join(prefix, "bin", "mariadbd"))
}

// exitOf runs the program at path and returns its exit code.
func exitOf(t *testing.T, path string) int {
	t.Helper()
	err := exec.Command(path).Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// A build directory that builds revisions one after another, in any order,
// gives each the server a clean build of it gives: the same exit code (what
// the code does) and the same code digest (what was compiled), across C
// edits (built incrementally), a changed pre-generated file that the build
// directory holds a copy of, a changed option() default, files added to and
// removed from a glob, a header added before another of its name on the
// include path, and a failed build and its fix (each of these built in
// a fresh build directory, saying why); a file the build directory reaches
// through a link to the source is no copy (built incrementally).
func TestIncrementalBuildIsACleanBuild(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	p := newProject(t, 1)
	for _, d := range []string{"extra", "inc1", "inc2", "tests"} {
		if err := os.MkdirAll(filepath.Join(p.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p.write("CMakeLists.txt", reuseCMake("OFF"))
	p.write("inc1/opt.h", "#define OPT 10\n")
	p.write("inc2/README", "headers that win over inc1's\n")
	p.write("gen.c", "int gen(void){return 1;}\n")
	p.write("unit.c", "int unit(void){return 3;}\n")
	p.write("main.c", "#include \"opt.h\"\nint gen(void);\nint unit(void);\nint main(void){return gen()+OPT+unit()+FAST;}\n")
	p.write("extra/e1.c", "int e1(void){return 11;}\n")
	p.write("tests/x.test", "SELECT 1;\n") // linked from the build directory, as a test suite may be
	type rev struct {
		name, commit string
		want         int    // exit code
		why          string // "" incremental, else a word of the fresh build's reason
	}
	revs := []rev{{name: "base", commit: p.commit("base"), want: 14}}
	add := func(name string, want int, why string, edit func()) {
		edit()
		revs = append(revs, rev{name, p.commit(name), want, why})
	}
	add("unit edit", 15, "", func() { p.write("unit.c", "int unit(void){return 4;}\n") })
	add("header edit", 25, "", func() { p.write("inc1/opt.h", "#define OPT 20\n") })
	add("new parser", 26, "gen.c", func() { p.write("gen.c", "int gen(void){return 2;}\n") })
	add("fast default", 126, "CMakeLists.txt", func() { p.write("CMakeLists.txt", reuseCMake("ON")) })
	add("extra added", 126, "extra/e2.c", func() { p.write("extra/e2.c", "int e2(void){return 12;}\n") })
	add("extra removed", 126, "extra/e1.c", func() { os.Remove(filepath.Join(p.dir, "extra", "e1.c")) })
	add("shadowing header", 136, "inc2/opt.h", func() { p.write("inc2/opt.h", "#define OPT 30\n") })
	add("broken", -1, "", func() { p.write("unit.c", "int unit(void){return 4}\n") })
	add("fixed", 137, "did not finish", func() { p.write("unit.c", "int unit(void){return 5;}\n") })
	add("readme", 137, "", func() { p.write("README", "docs\n") })
	add("test edit", 137, "", func() { p.write("tests/x.test", "SELECT 2;\n") })

	state := t.TempDir()
	b := &Builder{Repo: p.repo, StateDir: state, Recipe: Recipe{NoCcache: true}}
	ctx := context.Background()
	digests := map[string]string{}
	build := func(r rev) string {
		t.Helper()
		prefix, err := b.Build(ctx, r.commit)
		if r.want < 0 {
			var be *BuildError
			if !errors.As(err, &be) {
				t.Fatalf("%s: want a build error, got %v", r.name, err)
			}
			return ""
		}
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		if got := exitCode(t, prefix); got != r.want {
			t.Errorf("%s: the server exits %d, want %d", r.name, got, r.want)
		}
		d, err := CodeDigest(filepath.Join(prefix, "bin", "mariadbd"))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// In history order, then back to earlier revisions (a bisection jumps).
	order := append(append([]rev(nil), revs...), revs[1], revs[3], revs[0], revs[4])
	for i, r := range order {
		os.RemoveAll(filepath.Join(state, "installs")) // build every time
		d := build(r)
		log, _ := os.ReadFile(buildLog(t, state, r.commit))
		fresh := strings.Contains(string(log), "# fresh build directory")
		if i > 0 && i < len(revs) && r.want >= 0 {
			switch {
			case r.why == "" && fresh:
				t.Errorf("%s: built in a fresh build directory, want incremental:\n%s", r.name, log)
			case r.why != "" && (!fresh || !strings.Contains(string(log), r.why)):
				t.Errorf("%s: want a fresh build directory naming %q:\n%s", r.name, r.why, log)
			}
		}
		if d == "" {
			continue
		}
		if prev, ok := digests[r.name]; ok && prev != d {
			t.Errorf("%s: built again after other revisions, its code differs", r.name)
		}
		digests[r.name] = d
	}
	// Clean builds of each revision, in the same directories.
	for _, r := range revs {
		if r.want < 0 {
			continue
		}
		os.RemoveAll(filepath.Join(state, "installs"))
		matches, _ := filepath.Glob(filepath.Join(state, "build-*"))
		for _, m := range matches {
			os.RemoveAll(m)
		}
		if d := build(r); d != digests[r.name] {
			t.Errorf("%s: the incremental build's code differs from a clean build's", r.name)
		}
	}
}

// The code digest sees code, not the file: stripping debug information keeps
// it, a changed constant changes it.
func TestCodeDigest(t *testing.T) {
	testenv.Require(t, testenv.BuildTools) // compiles with cc
	dir := t.TempDir()
	cc := func(name, src string, args ...string) string {
		t.Helper()
		c := filepath.Join(dir, name+".c")
		out := filepath.Join(dir, name)
		if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, err := exec.Command("gcc", append([]string{"-o", out, c}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("gcc: %v\n%s", err, b)
		}
		return out
	}
	a := cc("a", "int main(void){return 1;}\n", "-g")
	d0, err := CodeDigest(a)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("strip", "--strip-debug", a).CombinedOutput(); err != nil {
		t.Fatalf("strip: %v\n%s", err, b)
	}
	if d1, _ := CodeDigest(a); d1 != d0 {
		t.Error("stripping debug information changed the code digest")
	}
	if d2, _ := CodeDigest(cc("b", "int main(void){return 2;}\n", "-g")); d2 == d0 {
		t.Error("another constant, the same code digest")
	}
	if _, err := CodeDigest(filepath.Join(dir, "a.c")); err == nil {
		t.Error("a C source has a code digest")
	}
}

// A build that fails in a reused build directory (here an object file a
// crash left truncated, newer than its source) is built again in a fresh one
// before the revision is blamed: it builds, and nothing is remembered.
func TestFailedIncrementalBuildIsRetriedFresh(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	p := newProject(t, 2)
	v0 := p.git("rev-parse", "HEAD")
	p.write("u1.c", "int u1(void){return 11;}\n")
	v1 := p.commit("v1")
	state := t.TempDir()
	b := &Builder{Repo: p.repo, StateDir: state, Recipe: Recipe{NoCcache: true}}
	ctx := context.Background()
	if _, err := b.Build(ctx, v0); err != nil {
		t.Fatal(err)
	}
	objs, _ := filepath.Glob(filepath.Join(state, "build-*", "CMakeFiles", "mariadbd.dir", "u0.c.o"))
	if len(objs) != 1 {
		t.Fatalf("object of u0.c: %v", objs)
	}
	if err := os.WriteFile(objs[0], []byte("truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	prefix, err := b.Build(ctx, v1)
	if err != nil {
		t.Fatalf("a revision that builds clean was blamed: %v", err)
	}
	if got := exitCode(t, prefix); got != (0+11+0)%7 { // main returns (u0()+u1()+...)%7
		t.Errorf("the server exits %d", got)
	}
	log, _ := os.ReadFile(buildLog(t, state, v1))
	if !strings.Contains(string(log), "building again in a fresh one") {
		t.Errorf("no fresh retry in the log:\n%s", log)
	}
	if ms, _ := filepath.Glob(filepath.Join(state, "installs", "*", "*.failed.json")); len(ms) > 0 {
		t.Errorf("the failure of the reused build directory was remembered: %v", ms)
	}
}
