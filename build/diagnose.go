package build

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// fault is whose a failed build is.
type fault int

const (
	faultUnknown  fault = iota // skipped, not remembered
	faultRevision              // a compiler or CMake error: skipped (a compiler error is remembered)
	faultMachine               // the machine's: the session stops
)

var (
	// sourceQuote matches the source lines and carets compilers quote under a
	// diagnostic ("   12 |   printf(...)", "      |   ^~~"): never a verdict.
	sourceQuote = regexp.MustCompile(`^\s*\d*\s*\|`)
	// errorLine is a compiler's, linker's or CMake's own error line.
	errorLine = regexp.MustCompile(`:\d+(:\d+)?: (fatal )?error: |^CMake Error|undefined reference to |error: ld returned|: error: linker command failed|^g?make(\[\d+\])?: \*\*\* No rule to make target`)
	// missingFile is a missing include: a header the revision removed, or a
	// -dev package the machine lacks; perfbisect cannot tell, so it is not
	// remembered.
	missingFile = regexp.MustCompile(`fatal error: (.*): No such file or directory`)
	// stepHeader starts a step's output in the build log ("# build: cmake --build ...").
	stepHeader = regexp.MustCompile(`^# (configure|build|install): `)
)

// machineSigns are the tools' messages that blame the machine wherever they
// appear in the failing step: a full disk, missing memory, a compiler killed
// by a signal (the OOM killer), a missing tool.
var machineSigns = []string{"No space left on device", "Disk quota exceeded", "Cannot allocate memory", "virtual memory exhausted",
	"out of memory allocating", "memory exhausted", "Killed signal terminated program", "internal compiler error",
	"unable to execute command: Killed", "terminated with signal 9", "Read-only file system", ": command not found",
	// A compiler driver that could not run its assembler, linker or
	// compiler proper (toolFailed).
	"fatal error: cannot execute ", "collect2: fatal error: cannot find ", "unable to execute command: Executable "}

// toolFailed is a compiler driver's word for a program of its toolchain it
// could not run: gcc's "cannot execute 'as': execvp: No such file or
// directory" (the program by name or by path, typographic quotes in a UTF-8
// locale, then the system call's error: 1, 2), collect2's "cannot find
// 'ld'" (3), clang's "Executable "ld" doesn't exist" (4).
var toolFailed = regexp.MustCompile(`cannot execute ['‘]([^'’]+)['’](?::\s*\w+:\s*(.*))?|cannot find ['‘]([^'’]+)['’]|Executable "([^"]+)" doesn't exist`)

// gccOwn are the programs gcc runs from its own directory, never from PATH.
var gccOwn = map[string]string{"cc1": "the C compiler proper", "cc1plus": "the C++ compiler proper", "collect2": "gcc's link step"}

// toolHint says what to do about a program the compiler could not run
// (tool, by name or path; why: the system's error, "" when it is missing;
// pkgs: the Debian packages that provide it, installed: those of them dpkg
// says are installed). A program that exists but could not start is the
// machine's limits or a broken toolchain; a missing assembler or linker is
// looked up on PATH (installed: PATH left it out); gcc's own programs are
// in gcc's directory (its version's package is missing).
func toolHint(tool, why string, pkgs, installed []string) string {
	name := filepath.Base(tool)
	install := strings.Join(pkgs, " ")
	switch {
	case why != "" && !strings.Contains(why, "No such file or directory"):
		if strings.Contains(why, "Resource temporarily unavailable") || strings.Contains(why, "Cannot allocate memory") {
			return fmt.Sprintf("the compiler could not start %q (%s): the machine had no process or memory left for it (a process limit: ulimit -u, a cgroup's pids.max; or memory): raise the limit or build with fewer jobs", tool, why)
		}
		if install != "" {
			return fmt.Sprintf("the compiler could not run %q (%s): a broken toolchain (apt-get install --reinstall %s)", tool, why, install)
		}
		return fmt.Sprintf("the compiler could not run %q (%s): a broken toolchain", tool, why)
	case gccOwn[name] != "":
		return fmt.Sprintf("gcc cannot find its own %q (%s): install the compiler's package for the gcc version `gcc --version` names (apt-get install %s)", name, gccOwn[name], orDefault(install, "g++"))
	}
	path := os.Getenv("PATH")
	switch {
	case install != "" && len(installed) == len(pkgs):
		return fmt.Sprintf("%s is installed, but the compiler did not find its %q on the build's PATH (PATH=%s): put the directory that holds it on PATH", strings.Join(installed, " "), name, path)
	case install != "":
		return fmt.Sprintf("the compiler cannot run %q: install %s (apt-get install %s)", name, install, install)
	}
	return fmt.Sprintf("the compiler cannot run %q: install it, or put the directory that holds it on the build's PATH (PATH=%s)", name, path)
}

// orDefault is s, or def when s is "".
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// shNotFound is dash's (Debian's /bin/sh) "command not found": "sh: 1: bison: not found".
var shNotFound = regexp.MustCompile(`^(/bin/)?(ba|da)?sh: (line )?\d+: .*: not found$`)

// missingSigns blame the machine only inside the error that stopped the
// build: CMake prints "Could NOT find Boost" as a notice for every optional
// package it looks for, and only a required one ends in a CMake Error.
var missingSigns = []string{"Could NOT find ", "CMAKE_MAKE_PROGRAM is not set", "CMAKE_C_COMPILER not set", "CMAKE_CXX_COMPILER not set",
	"No CMAKE_C_COMPILER could be found", "No CMAKE_CXX_COMPILER could be found", "is not found or unusable",
	"required but not found", "not found. Please install", "is required to build", "Cannot find appropriate system libraries",
	"set to NOTFOUND", "library not found", "not found. Install",
	// A bundled library CMake downloads when the system's is missing
	// (MariaDB 10.11's libfmt): no network here, or none wanted.
	"Each download failed", "Couldn't resolve host name", "Could not resolve host"}

// boostRequired is MySQL's status line before its Boost error ("MySQL
// currently requires boost_1_59_0"); boostError is that error (MySQL 5.7
// and 8.0 build against one Boost release exactly, in no Debian package).
var (
	boostRequired = regexp.MustCompile(`MySQL currently requires (boost_\d+_\d+_\d+)`)
	boostError    = regexp.MustCompile(`-DDOWNLOAD_BOOST=1 -DWITH_BOOST=`)
)

// boostPackage is cmake/boost.cmake's name of the release it wants
// (SET(BOOST_PACKAGE_NAME "boost_1_55_0"): MySQL 5.7's milestones print no
// "currently requires" line).
var boostPackage = regexp.MustCompile(`BOOST_PACKAGE_NAME\s+"(boost_\d+_\d+_\d+)"`)

// boostHint says what a tree that wants the Boost release name
// (boost_1_59_0) needs; with name "", the release src/cmake/boost.cmake
// names (src: the checkout; "" for none).
func boostHint(name, src string) string {
	if name == "" && src != "" {
		if b, err := os.ReadFile(filepath.Join(src, "cmake", "boost.cmake")); err == nil {
			if m := boostPackage.FindSubmatch(b); m != nil {
				name = string(m[1])
			}
		}
	}
	if name == "" {
		return "this tree builds only against the Boost release its cmake/boost.cmake names (Debian's libboost-dev is another release, and CMake cannot download it here): " +
			"unpack that release into a directory once and add --cmake-args -DWITH_BOOST=DIR"
	}
	return "this tree builds only against " + name + " exactly (Debian's libboost-dev is another release, and CMake cannot download it here): " +
		"unpack " + name + ".tar.gz (from boost.org or sourceforge) into a directory once and add --cmake-args -DWITH_BOOST=DIR"
}

// noRule is make's missing prerequisite: often a system file an upgrade
// removed (an absolute library path the configure found), so not the
// revision's for sure.
var noRule = regexp.MustCompile(`No rule to make target`)

// spaces are runs of blanks: CMake puts two after a period.
var spaces = regexp.MustCompile(`\s+`)

// DebianPackages maps what a failed build reports missing (a regular expression
// over its error, case-insensitive) to the Debian package that provides it,
// in order: the first match wins for one error. They are Debian 12's names
// (tested against apt-cache where the package lists are there).
var DebianPackages = []struct {
	Missing string // regular expression over the error
	Package string
}{
	{`Executable "(?:[^"]*/)?ld\.lld"`, "lld"},
	{`(cannot execute|cannot find) ['‘](?:[^'’]*/)?(as|ld|ld\.gold|ld\.bfd)['’]|Executable "(?:[^"]*/)?(as|ld|ld\.gold|ld\.bfd)"`, "binutils"},
	{`cannot execute ['‘](?:[^'’]*/)?cc1plus['’]`, "g++"},
	{`cannot execute ['‘](?:[^'’]*/)?(cc1|collect2)['’]`, "gcc"},
	{`libfmt`, "libfmt-dev"},
	{`pcre2`, "libpcre2-dev"},
	{`\bpcre\b|pcre\.h`, "libpcre3-dev"},
	{`\bzlib\b|zlib\.h`, "zlib1g-dev"},
	{`openssl|ssl\.h|\bssl\b`, "libssl-dev"},
	{`gnutls`, "libgnutls28-dev"},
	{`curses|ncurses|\bterm\.h`, "libncurses-dev"},
	{`readline`, "libreadline-dev"},
	{`libaio`, "libaio-dev"},
	{`liburing`, "liburing-dev"},
	{`systemd`, "libsystemd-dev"},
	{`\bpam\b|pam_appl\.h`, "libpam0g-dev"},
	{`boost`, "libboost-dev"},
	{`\blz4\b|lz4\.h`, "liblz4-dev"},
	{`zstd`, "libzstd-dev"},
	{`snappy`, "libsnappy-dev"},
	{`libxml|libxml2`, "libxml2-dev"},
	{`\bcurl\b`, "libcurl4-openssl-dev"},
	{`krb5|gssapi`, "libkrb5-dev"},
	{`\bjni\b|jni\.h`, "default-jdk-headless"},
	{`\bbison\b`, "bison"},
	{`\bflex\b`, "flex"},
	{`pkgconfig|pkg-config`, "pkg-config"},
	{`CMAKE_CXX_COMPILER|c\+\+: (command )?not found|g\+\+`, "g++"},
	{`CMAKE_C_COMPILER|\bcc: (command )?not found`, "gcc"},
	{`CMAKE_MAKE_PROGRAM|\bmake: (command )?not found`, "make"},
}

var packageRes = func() []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, p := range DebianPackages {
		out = append(out, regexp.MustCompile(`(?i)`+p.Missing))
	}
	return out
}()

// packagesFor returns the Debian package that provides what text says is
// missing: the first entry of DebianPackages that matches (none when none
// does).
func packagesFor(text string) []string {
	for i, re := range packageRes {
		if re.MatchString(text) {
			return []string{DebianPackages[i].Package}
		}
	}
	return nil
}

// installedPackages returns those of pkgs that dpkg says are installed
// (none where dpkg-query is missing: not a Debian machine).
func installedPackages(pkgs []string) []string {
	var out []string
	for _, p := range pkgs {
		st, err := exec.Command("dpkg-query", "-W", "-f", "${db:Status-Status}", p).Output()
		if err == nil && strings.TrimSpace(string(st)) == "installed" {
			out = append(out, p)
		}
	}
	return out
}

// diagnosis is what a failed build's log says.
type diagnosis struct {
	// Lines says why: the error that stopped the build first (a CMake error
	// with its message), then up to four more; or the machine's signs; or
	// the last lines of output.
	Lines []string
	Fault fault
	// Packages are the Debian packages that provide what is missing.
	Packages []string
	// Hint says what the machine needs when no Debian package provides it
	// ("" otherwise).
	Hint string
	// Tool is the program the compiler could not run ("as", a path to
	// cc1plus; toolFailed), ToolErr the system's error ("" when missing):
	// the hint is toolHint's, once the packages installed are known.
	Tool, ToolErr string
	// CompilerCrashed: the compiler crashed (an internal compiler error, a
	// segmentation fault of cc1plus): a compiler bug or the machine's
	// memory, often gone when built again.
	CompilerCrashed bool
}

// compilerCrash is gcc's report of its own crash.
const compilerCrash = "internal compiler error"

// compilerCrashHint is what to do about a compiler that crashed twice.
const compilerCrashHint = "the compiler crashed (" + compilerCrash + ") in two builds: a compiler bug or the machine (memory, an unstable CPU), not the revision; " +
	"build again, or with another compiler (--cmake-args \"-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++\")"

// diagnose reads a failed build's log (streaming: lines cut at 300 bytes;
// src is the checkout that was built, "" for none) and says why the failing step (the log's last) failed and whose fault it is,
// from that step's first error: a configure-time notice earlier in the log
// ("Could NOT find Boost") is never the verdict. The quoted source lines
// under a compiler diagnostic are never read as one.
func diagnose(path, src string) diagnosis {
	f, err := os.Open(path)
	if err != nil {
		return diagnosis{}
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var machine, errs, tail []string
	boost := ""        // the Boost release the step says it requires
	var block []string // the CMake error being read, with its message lines
	endBlock := func() {
		if len(block) > 0 && len(errs) < 5 {
			errs = append(errs, cut(strings.Join(block, " "), 400))
		}
		block = nil
	}
	for {
		raw, err := readLine(r, 300)
		raw = strings.TrimRight(raw, "\r\n")
		line := spaces.ReplaceAllString(strings.TrimSpace(raw), " ")
		switch {
		case stepHeader.MatchString(raw):
			machine, errs, tail, block, boost = nil, nil, nil, nil, "" // only the last step failed
		case line == "" || strings.HasPrefix(line, "# ") || sourceQuote.MatchString(line):
			endBlock()
		case len(block) > 0 && raw != line && !strings.HasPrefix(line, "Call Stack"):
			block = append(block, line) // an indented message line of a CMake error
		default:
			endBlock()
			for _, sign := range machineSigns {
				if strings.Contains(line, sign) && len(machine) < 5 {
					machine = append(machine, line)
					break
				}
			}
			if shNotFound.MatchString(line) && len(machine) < 5 && !slices.Contains(machine, line) {
				machine = append(machine, line)
			}
			if errorLine.MatchString(line) {
				if strings.HasPrefix(line, "CMake Error") {
					block = []string{line}
				} else if len(errs) < 5 {
					errs = append(errs, line)
				}
			}
		}
		if m := boostRequired.FindStringSubmatch(line); m != nil {
			boost = m[1]
		}
		if line != "" && !strings.HasPrefix(line, "# ") && !sourceQuote.MatchString(line) {
			if tail = append(tail, line); len(tail) > 5 {
				tail = tail[1:]
			}
		}
		if err != nil {
			break
		}
	}
	endBlock()
	switch {
	case len(machine) > 0:
		d := diagnosis{Lines: machine, Fault: faultMachine, Packages: packagesFor(strings.Join(machine, "\n"))}
		if strings.Contains(strings.Join(machine, "\n"), compilerCrash) {
			d.CompilerCrashed, d.Hint, d.Packages = true, compilerCrashHint, nil
		}
		// The tool's hint when it is what stopped the build (the first
		// sign), not a crash's or a full disk's.
		if m := toolFailed.FindStringSubmatch(machine[0]); m != nil && !d.CompilerCrashed {
			d.Tool, d.ToolErr = m[1]+m[3]+m[4], m[2]
		}
		return d
	case len(errs) == 0:
		return diagnosis{Lines: tail, Fault: faultUnknown}
	}
	first := errs[0]
	if boostError.MatchString(first) {
		return diagnosis{Lines: errs, Fault: faultMachine, Hint: boostHint(boost, src)}
	}
	for _, sign := range missingSigns {
		if strings.Contains(first, sign) {
			return diagnosis{Lines: errs, Fault: faultMachine, Packages: packagesFor(first)}
		}
	}
	if m := missingFile.FindStringSubmatch(first); m != nil {
		return diagnosis{Lines: errs, Fault: faultUnknown, Packages: packagesFor(m[1])}
	}
	if noRule.MatchString(first) {
		return diagnosis{Lines: errs, Fault: faultUnknown}
	}
	return diagnosis{Lines: errs, Fault: faultRevision}
}

// cut shortens s to at most n bytes, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// readLine reads one line of r, keeping at most max bytes of it (the rest of
// a longer line is read and dropped). err is io.EOF (or another read error)
// at the end.
func readLine(r *bufio.Reader, max int) (string, error) {
	var keep []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(keep) < max {
			keep = append(keep, chunk[:min(len(chunk), max-len(keep))]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return string(keep), err
	}
}
