package build

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

// oldMariaDB is a tree that configures as MariaDB 10.0.22-10.0.26's did on
// Debian 12 (gcc 12, CMake 3.25) for the switches perfbisect's preset sets:
// "system" PCRE wants PCRE 1, which the machine lacks; PLUGIN_TOKUDB=NO does
// not keep TokuDB out (WITHOUT_TOKUDB does), and TokuDB needs C++11; the
// libmysql linker-script check fails unless symbol versioning is disabled;
// and, as every real configure does, it prints notices of optional packages
// it did not find.
const oldMariaDB = `cmake_minimum_required(VERSION 3.10)
project(MySQL C)
message(STATUS "Could NOT find Boost")
message(STATUS "Could NOT find JNI (missing: JAVA_AWT_LIBRARY JAVA_JVM_LIBRARY)")
if(WITH_PCRE STREQUAL "system")
  message(FATAL_ERROR "system pcre is not found or unusable")
endif()
if(WITH_SSL STREQUAL "system")
  message(FATAL_ERROR "Cannot find appropriate system libraries for SSL. Use WITH_SSL=bundled to enable SSL support")
endif()
if(NOT DISABLE_LIBMYSQLCLIENT_SYMBOL_VERSIONING)
  message(FATAL_ERROR "Version script check failed. Either switch to GNU ld or run cmake with -DDISABLE_LIBMYSQLCLIENT_SYMBOL_VERSIONING=TRUE")
endif()
set(SRCS sql/mysqld.c)
if(NOT WITHOUT_TOKUDB)
  list(APPEND SRCS storage/tokudb/ha_tokudb.c)
endif()
add_executable(mysqld ${SRCS})
install(TARGETS mysqld DESTINATION bin)
`

func oldTree(t *testing.T) (*project, string) {
	p := newProject(t, 1)
	for _, d := range []string{"sql", "storage/tokudb", "storage/maria"} {
		if err := os.MkdirAll(filepath.Join(p.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p.write("CMakeLists.txt", oldMariaDB)
	p.write("VERSION", "MYSQL_VERSION_MAJOR=10\nMYSQL_VERSION_MINOR=0\nMYSQL_VERSION_PATCH=22\n")
	p.write("sql/mysqld.c", "int main(void){return 0;}\n")
	p.write("storage/tokudb/ha_tokudb.c", "#error This file requires compiler and library support for the ISO C++ 2011 standard\n")
	p.write("storage/maria/ha_maria.c", "\n")
	return p, p.commit("mariadb-10.0.22")
}

// A 10.0 tree builds with no arguments but the preset's; each switch the
// preset sets for it, taken back with --cmake-args, fails as the real tree
// did, and the failure names the error that stopped the build (not the
// configure notices before it), blames the machine only for a missing
// package (naming the Debian package), and remembers only a compiler error.
func TestOldMariaDBTreeBuildsWithThePreset(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	p, commit := oldTree(t)
	ctx := context.Background()
	b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Recipe: Recipe{NoCcache: true}}
	prefix, err := b.Build(ctx, commit)
	if err != nil {
		t.Fatalf("MariaDB 10.0.22 with the default preset: %v", err)
	}
	if _, err := os.Stat(filepath.Join(prefix, "bin", "mysqld")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		arg, step, line   string
		machine, remember bool
		packages          []string
	}{
		{"-DWITH_PCRE=system", "configure", "system pcre is not found or unusable", true, false, []string{"libpcre3-dev"}},
		// As MariaDB 10.3.39 said with libssl-dev (OpenSSL 3) installed.
		{"-DWITH_SSL=system", "configure", "Cannot find appropriate system libraries for SSL", true, false, []string{"libssl-dev"}},
		{"-DDISABLE_LIBMYSQLCLIENT_SYMBOL_VERSIONING=FALSE", "configure", "Either switch to GNU ld", false, false, nil},
		{"-DWITHOUT_TOKUDB=0", "build", "#error This file requires", false, true, nil},
	} {
		b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Recipe: Recipe{NoCcache: true, CMakeArgs: []string{c.arg}}}
		_, err := b.Build(ctx, commit)
		var be *BuildError
		if !errors.As(err, &be) {
			t.Fatalf("%s: want a build error, got %v", c.arg, err)
		}
		if be.Step != c.step || len(be.Lines) == 0 || !strings.Contains(be.Lines[0], c.line) {
			t.Errorf("%s: %s step, first line %q; want the %s step naming %q", c.arg, be.Step, be.Lines, c.step, c.line)
		}
		if strings.Contains(err.Error(), "Could NOT find") {
			t.Errorf("%s: a configure notice in the diagnosis: %v", c.arg, err)
		}
		if be.Machine != c.machine || !slices.Equal(be.Packages, c.packages) {
			t.Errorf("%s: machine %v packages %q, want %v %q", c.arg, be.Machine, be.Packages, c.machine, c.packages)
		}
		// A package the machine has is not the answer: the error says so.
		var installed []string
		for _, p := range c.packages {
			if st, err := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Status}", p).Output(); err == nil && string(st) == "installed" {
				installed = append(installed, p)
			}
		}
		if !slices.Equal(be.Installed, installed) {
			t.Errorf("%s: installed %q, dpkg says %q", c.arg, be.Installed, installed)
		}
		switch {
		case c.packages != nil && len(installed) == len(c.packages):
			if !strings.Contains(err.Error(), "is installed, but this tree cannot use") || strings.Contains(err.Error(), "apt-get install") {
				t.Errorf("%s: %q installed, yet the error does not say so: %v", c.arg, installed, err)
			}
		case c.packages != nil && !strings.Contains(err.Error(), "apt-get install "+strings.Join(c.packages, " ")):
			t.Errorf("%s: the error does not say what to install: %v", c.arg, err)
		}
		if (be.Remembered != "") != c.remember {
			t.Errorf("%s: remembered %q, want %v", c.arg, be.Remembered, c.remember)
		}
	}
}

// Every package the diagnosis may name is one Debian has (where the machine
// has its package lists).
func TestDebianPackagesExist(t *testing.T) {
	if out, err := exec.Command("apt-cache", "show", "bash").CombinedOutput(); err != nil || len(out) == 0 {
		t.Skip("no apt package lists on this machine (apt-get update)")
	}
	var names []string
	for _, p := range DebianPackages {
		if !slices.Contains(names, p.Package) {
			names = append(names, p.Package)
		}
	}
	// One apt-cache call for all of them (one each took 20 s).
	out, _ := exec.Command("apt-cache", append([]string{"show", "--no-all-versions"}, names...)...).CombinedOutput()
	found := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(l, "Package: "); ok {
			found[strings.TrimSpace(name)] = true
		}
	}
	for _, p := range DebianPackages {
		if !found[p.Package] {
			t.Errorf("%s (for %q) is not a Debian package here", p.Package, p.Missing)
		}
	}
}

// The diagnosis reads the failing step's first error: a notice of an
// optional package before it is not the cause; a CMake error's indented
// message is part of it.
func TestDiagnoseFirstErrorOfTheFailingStep(t *testing.T) {
	for _, c := range []struct {
		log      string
		fault    fault
		first    string
		packages []string
	}{
		{"# configure: cmake\n-- Could NOT find Boost\n-- Configuring done\n# build: cmake --build\nx.c:1:2: error: expected ';'\n", faultRevision, "x.c:1:2: error: expected ';'", nil},
		{"# configure: cmake\n-- Could NOT find JNI\nCMake Error at libmysql/CMakeLists.txt:12 (MESSAGE):\n  Version script check failed.  Either switch to GNU ld\nCall Stack (most recent call first):\n  CMakeLists.txt:3\n", faultRevision, "CMake Error at libmysql/CMakeLists.txt:12 (MESSAGE): Version script check failed. Either switch to GNU ld", nil},
		{"# configure: cmake\nCMake Error at /usr/share/cmake-3.25/Modules/FindPackageHandleStandardArgs.cmake:230 (message):\n  Could NOT find ZLIB (missing: ZLIB_LIBRARY ZLIB_INCLUDE_DIR)\n", faultMachine, "CMake Error at /usr/share/cmake-3.25/Modules/FindPackageHandleStandardArgs.cmake:230 (message): Could NOT find ZLIB (missing: ZLIB_LIBRARY ZLIB_INCLUDE_DIR)", []string{"zlib1g-dev"}},
		{"# build: cmake --build\nsql/x.cc:3:10: fatal error: pcre2.h: No such file or directory\n", faultUnknown, "sql/x.cc:3:10: fatal error: pcre2.h: No such file or directory", []string{"libpcre2-dev"}},
		// CMake's Makefiles call GNU make gmake; a tree that lost a file
		// (git add without -f of a tarball that ships ignored files).
		{"# build: cmake --build\ngmake[2]: *** No rule to make target 'dbug/user.r', needed by 'dbug/user.ps'.  Stop.\ngmake[2]: *** Waiting for unfinished jobs....\n[ 30%] Generating example3.r\ngmake[1]: *** [CMakeFiles/Makefile2:4438: dbug/CMakeFiles/user_ps.dir/all] Error 2\ngmake[1]: *** Waiting for unfinished jobs....\n[ 30%] Built target GenError\ngmake: *** [Makefile:156: all] Error 2\n", faultUnknown, "gmake[2]: *** No rule to make target 'dbug/user.r', needed by 'dbug/user.ps'. Stop.", nil},
		// An error of an earlier, finished step (make -k) is not this step's.
		{"# configure: cmake\nCMake Error: stale\n# build: cmake --build\nld: cannot open output file: No space left on device\n", faultMachine, "ld: cannot open output file: No space left on device", nil},
	} {
		path := filepath.Join(t.TempDir(), "build.log")
		if err := os.WriteFile(path, []byte(c.log), 0o644); err != nil {
			t.Fatal(err)
		}
		d := diagnose(path, "")
		if d.Fault != c.fault || len(d.Lines) == 0 || d.Lines[0] != c.first || !slices.Equal(d.Packages, c.packages) {
			t.Errorf("%q:\n got %v %q %q\nwant %v %q %q", c.log, d.Fault, d.Lines, d.Packages, c.fault, c.first, c.packages)
		}
	}
}

// CMake's two spaces after a period, dash's "not found", make's missing
// prerequisite: each is read for what it is.
func TestDiagnoseMessagesOfTheTools(t *testing.T) {
	for _, c := range []struct {
		log      string
		fault    fault
		packages []string
	}{
		{"# configure: cmake\nCMake Error at cmake/readline.cmake:85 (MESSAGE):\n  Curses library not found.  Please install appropriate package,\n", faultMachine, []string{"libncurses-dev"}},
		{"# configure: cmake\nCMake Error at cmake/ssl.cmake:230 (MESSAGE):\n  Cannot find appropriate system libraries for SSL.  Make sure you've\n", faultMachine, []string{"libssl-dev"}},
		{"# build: sh -c make\nsh: 1: make: not found\n", faultMachine, []string{"make"}},
		// MariaDB 10.11 without libfmt-dev downloads fmt, with no network here.
		{"# build: cmake --build\nCMake Error at libfmt-stamp/download-libfmt.cmake:170 (message):\n  Each download failed!\n\n    error: downloading 'https://github.com/fmtlib/fmt/releases/download/8.0.1/fmt-8.0.1.zip' failed\n          status_code: 6\n          status_string: \"Couldn't resolve host name\"\n", faultMachine, []string{"libfmt-dev"}},
		// MySQL 5.7 without its Boost release (boost.cmake's words).
		{"# configure: cmake\n-- Could NOT find Boost\n-- MySQL currently requires boost_1_59_0\n\nCMake Error at cmake/boost.cmake:81 (MESSAGE):\n  You can download it with -DDOWNLOAD_BOOST=1 -DWITH_BOOST=<directory>\n\n  This CMake script will look for boost in <directory>.  If it is not there,\n", faultMachine, nil},
		{"# build: cmake --build\nmake[2]: *** No rule to make target '/usr/lib/x86_64-linux-gnu/libboost_system.so.1.74.0', needed by 'sql/mysqld'.  Stop.\n", faultUnknown, nil},
	} {
		path := filepath.Join(t.TempDir(), "build.log")
		if err := os.WriteFile(path, []byte(c.log), 0o644); err != nil {
			t.Fatal(err)
		}
		d := diagnose(path, "")
		if d.Fault != c.fault || !slices.Equal(d.Packages, c.packages) || len(d.Lines) == 0 {
			t.Errorf("%q: got %v %q %q, want %v %q", c.log, d.Fault, d.Packages, d.Lines, c.fault, c.packages)
		}
	}
}

// A compiler driver that cannot run a tool of its own is the machine's:
// the tool and its package are read from gcc's words (ASCII or typographic
// quotes) or clang's, and the hint says what fits the tool and whether its
// package is installed.
func TestDiagnoseToolTheCompilerCannotRun(t *testing.T) {
	for _, c := range []struct {
		log, tool, why string
		packages       []string
		hint           string // in toolHint's words, none installed
	}{
		{"cc: fatal error: cannot execute 'as': execvp: No such file or directory\ncompilation terminated.", "as", "No such file or directory", []string{"binutils"}, "install binutils"},
		{"collect2: fatal error: cannot find ‘ld’\ncompilation terminated.", "ld", "", []string{"binutils"}, "install binutils"},
		{"clang: error: unable to execute command: Executable \"ld\" doesn't exist!", "ld", "", []string{"binutils"}, "install binutils"},
		{"clang: error: unable to execute command: Executable \"ld.lld\" doesn't exist!", "ld.lld", "", []string{"lld"}, "install lld"},
		{"c++: fatal error: cannot execute ‘cc1plus’: execvp: No such file or directory", "cc1plus", "No such file or directory", []string{"g++"}, `gcc cannot find its own "cc1plus"`},
		{"gcc: fatal error: cannot execute ‘collect2’: execvp: No such file or directory", "collect2", "No such file or directory", []string{"gcc"}, `gcc cannot find its own "collect2"`},
		// Found, and could not start: the machine's limits, not a missing
		// tool; gcc names it by path then.
		{"gcc: fatal error: cannot execute ‘as’: vfork: Resource temporarily unavailable", "as", "Resource temporarily unavailable", []string{"binutils"}, "no process or memory left"},
		{"g++: fatal error: cannot execute ‘/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus’: vfork: Resource temporarily unavailable", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", "Resource temporarily unavailable", []string{"g++"}, "ulimit -u"},
		{"gcc: fatal error: cannot execute ‘/tmp/g/cc1’: execv: Exec format error", "/tmp/g/cc1", "Exec format error", []string{"gcc"}, "a broken toolchain (apt-get install --reinstall gcc)"},
	} {
		path := filepath.Join(t.TempDir(), "build.log")
		if err := os.WriteFile(path, []byte("# build: cmake --build\n"+c.log+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		d := diagnose(path, "")
		if d.Fault != faultMachine || d.Tool != c.tool || d.ToolErr != c.why || !slices.Equal(d.Packages, c.packages) {
			t.Errorf("%q: fault %v tool %q (%q) packages %q, want the machine's, %q (%q), %q", c.log, d.Fault, d.Tool, d.ToolErr, d.Packages, c.tool, c.why, c.packages)
		}
		if h := toolHint(d.Tool, d.ToolErr, d.Packages, nil); !strings.Contains(h, c.hint) {
			t.Errorf("%q: hint %q, want %q", c.log, h, c.hint)
		}
	}
	// The first sign decides: a crash or a full disk keeps its own hint.
	for _, log := range []string{
		"x.c:1:1: internal compiler error: Segmentation fault\ncc: fatal error: cannot execute 'as': execvp: No such file or directory",
		"cc1: fatal error: x.s: No space left on device\ncc: fatal error: cannot execute 'as': execvp: No such file or directory",
	} {
		path := filepath.Join(t.TempDir(), "build.log")
		if err := os.WriteFile(path, []byte("# build: make\n"+log+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if d := diagnose(path, ""); d.Tool != "" {
			t.Errorf("%q: tool %q read after another sign", log, d.Tool)
		}
	}
	for _, c := range []struct {
		tool            string
		pkgs, installed []string
		want, not       string
	}{
		{"as", []string{"binutils"}, []string{"binutils"}, `binutils is installed, but the compiler did not find its "as" on the build's PATH`, "apt-get install"},
		{"as", []string{"binutils"}, nil, "apt-get install binutils", "PATH="},
		{"cc1plus", []string{"g++"}, []string{"g++"}, `gcc cannot find its own "cc1plus"`, "PATH="},
		{"odd-tool", nil, nil, "install it, or put the directory that holds it on the build's PATH", "apt-get"},
	} {
		h := toolHint(c.tool, "", c.pkgs, c.installed)
		if !strings.Contains(h, c.want) || strings.Contains(h, c.not) {
			t.Errorf("hint for %s (packages %q, installed %q): %q, want %q and no %q", c.tool, c.pkgs, c.installed, h, c.want, c.not)
		}
	}
}

// mysql57 configures as MySQL 5.7's cmake/boost.cmake does: without
// -DWITH_BOOST naming a directory with Boost 1.59 it says which release it
// requires and stops with "You can download it with -DDOWNLOAD_BOOST=1 ..."
// (and Debian's Boost, 1.74, is refused as the wrong release).
const mysql57 = `cmake_minimum_required(VERSION 3.10)
project(MySQL C)
message(STATUS "Could NOT find Boost")
set(BOOST_PACKAGE_NAME "boost_1_59_0")
if(NOT EXISTS "${WITH_BOOST}/boost/version.hpp")
  message(STATUS "Could not find (the correct version of) boost.")
  message(STATUS "MySQL currently requires ${BOOST_PACKAGE_NAME}\n")
  message(FATAL_ERROR
    "You can download it with -DDOWNLOAD_BOOST=1 -DWITH_BOOST=<directory>\n"
    "This CMake script will look for boost in <directory>. "
    "If it is not there, it will download and unpack it "
    "(in that directory) for you.\n"
    "If you are inside a firewall, you may need to use an http proxy:\n"
    "export http_proxy=http://example.com:80\n")
endif()
add_executable(mysqld sql/mysqld.c)
install(TARGETS mysqld DESTINATION bin)
`

// A MySQL 5.7 tree without its Boost release is the machine's to fix, not
// the revision's: the build stops (never remembered as the revision's
// failure), says which release and how to give it (Debian has no package
// of it: libboost-dev is not the answer), and builds once it is given.
func TestMySQL57WithoutItsBoostIsTheMachines(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	p := newProject(t, 1)
	if err := os.MkdirAll(filepath.Join(p.dir, "sql"), 0o755); err != nil {
		t.Fatal(err)
	}
	p.write("CMakeLists.txt", mysql57)
	p.write("VERSION", "MYSQL_VERSION_MAJOR=5\nMYSQL_VERSION_MINOR=7\nMYSQL_VERSION_PATCH=44\n")
	p.write("sql/mysqld.c", "int main(void){return 0;}\n")
	commit := p.commit("mysql-5.7.44")
	ctx := context.Background()
	b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Recipe: Recipe{NoCcache: true}}
	_, err := b.Build(ctx, commit)
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("without Boost: want a build error, got %v", err)
	}
	if !be.Machine || be.Remembered != "" || len(be.Packages) != 0 || !strings.Contains(be.Hint, "boost_1_59_0") {
		t.Errorf("machine %v remembered %q packages %q hint %q: want the machine's, not remembered, no package, boost_1_59_0 named", be.Machine, be.Remembered, be.Packages, be.Hint)
	}
	msg := err.Error()
	if !strings.Contains(msg, "not the revision's fault") || !strings.Contains(msg, "--cmake-args -DWITH_BOOST=DIR") || strings.Contains(msg, "apt-get install") {
		t.Errorf("the error does not say what to do: %v", msg)
	}
	boost := t.TempDir()
	if err := os.MkdirAll(filepath.Join(boost, "boost"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(boost, "boost", "version.hpp"), []byte("#define BOOST_VERSION 105900\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Recipe.CMakeArgs = []string{"-DWITH_BOOST=" + boost}
	if _, err := b.Build(ctx, commit); err != nil {
		t.Errorf("with -DWITH_BOOST: %v", err)
	}

	// A tree in the layout of MySQL's mysql-boost tarballs carries the
	// release its cmake/boost.cmake names: the preset gives it to CMake.
	p.write("cmake/boost.cmake", "SET(BOOST_PACKAGE_NAME \"boost_1_59_0\")\n")
	p.write("boost/boost_1_59_0/boost/version.hpp", "#define BOOST_VERSION 105900\n")
	bundled := p.commit("mysql-5.7.44 with mysql-boost's boost/")
	b.Recipe.CMakeArgs = nil
	r, err := b.Resolve(bundled)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tree.Boost != "boost/boost_1_59_0" || !strings.Contains(strings.Join(r.Notes, "; "), "the tree's own Boost (boost/boost_1_59_0)") {
		t.Errorf("tree %+v notes %q: want the tree's boost/boost_1_59_0 found and said", r.Tree, r.Notes)
	}
	if _, err := b.Build(ctx, bundled); err != nil {
		t.Errorf("with the tree's own Boost: %v", err)
	}
}

// A MySQL 5.7 milestone (5.7.5) prints no "currently requires" line: the
// release wanted is read from the checkout's cmake/boost.cmake.
func TestBoostHintNamesTheTreesRelease(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(filepath.Join(src, "cmake"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "cmake", "boost.cmake"), []byte("SET(BOOST_PACKAGE_NAME \"boost_1_55_0\")\nSET(BOOST_TARBALL \"${BOOST_PACKAGE_NAME}.tar.gz\")\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "build.log")
	// As mysql-5.7.5 configured on Debian 12 (its log, cut).
	if err := os.WriteFile(log, []byte("# configure: cmake\n-- MySQL 5.7.5-m15\n-- Looked for boost/version.hpp in  and \n-- Could not find (the correct version of) boost.\n\n"+
		"CMake Error at cmake/boost.cmake:37 (MESSAGE):\n  You can download it with -DDOWNLOAD_BOOST=1 -DWITH_BOOST=<directory>\n\n"+
		"  This CMake script will look for boost in <directory>.  If it is not there,\n\nCall Stack (most recent call first):\n  cmake/boost.cmake:174 (COULD_NOT_FIND_BOOST)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ src, want string }{
		{src, "only against boost_1_55_0 exactly"},
		{"", "the Boost release its cmake/boost.cmake names"},
	} {
		d := diagnose(log, c.src)
		if d.Fault != faultMachine || !strings.Contains(d.Hint, c.want) || !strings.Contains(d.Hint, "-DWITH_BOOST=DIR") {
			t.Errorf("src %q: fault %v hint %q, want the machine's naming %q", c.src, d.Fault, d.Hint, c.want)
		}
	}
}

// A compiler that crashes (gcc's "internal compiler error: Segmentation
// fault", as cc1plus did on MariaDB 10.0.22's row0mysql.cc here) is the
// machine's: the build is done again once, and a second crash stops the
// build as the machine's, never remembered against the revision.
func TestCompilerCrashIsTheMachines(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	p := newProject(t, 2)
	commit := p.git("rev-parse", "HEAD")
	dir := t.TempDir()
	crashes := filepath.Join(dir, "crashes") // how many crashes are left
	launcher := filepath.Join(dir, "crashy-cc")
	script := "#!/bin/sh\n" +
		"n=$(cat " + crashes + " 2>/dev/null || echo 0)\n" +
		"case \" $* \" in *u1.c*) if [ \"$n\" -gt 0 ]; then echo $((n-1)) > " + crashes + "\n" +
		"  echo \"u1.c:3:1: internal compiler error: Segmentation fault\" >&2; echo 'Please submit a full bug report' >&2; exit 4; fi;; esac\n" +
		"exec \"$@\"\n"
	if err := os.WriteFile(launcher, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		crashes string
		ok      bool
	}{{"1", true}, {"2", false}} {
		if err := os.WriteFile(crashes, []byte(c.crashes), 0o644); err != nil {
			t.Fatal(err)
		}
		var log strings.Builder
		b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Log: &log, Recipe: Recipe{NoCcache: true, CMakeArgs: []string{"-DCMAKE_C_COMPILER_LAUNCHER=" + launcher}}}
		_, err := b.Build(ctx, commit)
		if !strings.Contains(log.String(), "the compiler crashed (internal compiler error); building again once") {
			t.Errorf("%s crash(es): the log does not say the build is done again:\n%s", c.crashes, log.String())
		}
		if c.ok {
			if err != nil {
				t.Errorf("one crash, then a good build: %v", err)
			}
			continue
		}
		var be *BuildError
		if !errors.As(err, &be) || !be.Machine || be.Remembered != "" || !strings.Contains(be.Hint, "not the revision") {
			t.Errorf("two crashes: %v (machine %v, remembered %q): want the machine's, not remembered, said so", err, be != nil && be.Machine, be.Remembered)
		}
	}
}

// A compiler that cannot run its assembler or its linker (binutils
// installed, left off PATH here: the case a user's PATH makes) fails the
// configure step as the machine's: not remembered against the revision,
// the tool named, what to do said. The machine's real gcc and CMake say it.
func TestMissingAssemblerIsTheMachines(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	t.Setenv("CC", "gcc") // the compiler whose words are read here
	p := newProject(t, 1)
	head := p.git("rev-parse", "HEAD")
	path := os.Getenv("PATH")
	for _, tool := range []string{"as", "ld"} {
		if at, err := exec.Command("gcc", "-print-prog-name="+tool).Output(); err != nil || filepath.IsAbs(strings.TrimSpace(string(at))) {
			t.Logf("this gcc does not look for %s on PATH (%q, %v)", tool, at, err)
			continue
		}
		bin := t.TempDir()
		for _, dir := range filepath.SplitList(path) {
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				name := e.Name()
				if name == tool || strings.HasSuffix(name, "-"+tool) || tool == "ld" && strings.HasPrefix(name, "ld.") {
					continue
				}
				_ = os.Symlink(filepath.Join(dir, name), filepath.Join(bin, name)) // the first on PATH wins, as for a shell
			}
		}
		t.Setenv("PATH", bin)
		state := t.TempDir()
		b := &Builder{Repo: p.repo, StateDir: state, Recipe: Recipe{NoCcache: true}}
		_, err := b.Build(context.Background(), head)
		var be *BuildError
		if !errors.As(err, &be) {
			t.Fatalf("without %s: want a build error, got %v", tool, err)
		}
		if !be.Machine || be.Remembered != "" || !slices.Equal(be.Packages, []string{"binutils"}) {
			t.Errorf("without %s: machine %v remembered %q packages %q: want the machine's, not remembered, binutils", tool, be.Machine, be.Remembered, be.Packages)
		}
		msg := err.Error()
		t.Log(msg)
		for _, want := range []string{"not the revision's fault", `binutils is installed, but the compiler did not find its "` + tool + `" on the build's PATH`, "PATH=" + bin} {
			if !strings.Contains(msg, want) {
				t.Errorf("without %s, the error lacks %q: %v", tool, want, msg)
			}
		}
		if ms, _ := filepath.Glob(filepath.Join(state, "installs", "*", "*.failed.json")); len(ms) > 0 {
			t.Errorf("without %s, the machine's failure was remembered as the revision's: %v", tool, ms)
		}
	}
}
