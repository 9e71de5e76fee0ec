// Package testenv says what a test needs from the machine: a real server
// (Debian's mariadb-server), the build tools (cmake, make, a C compiler,
// git), sysbench or a browser (chromium). With go test -short such a test is
// skipped, naming what it needs; without -short a missing prerequisite fails
// the test, naming the package to install, and is never skipped: the full
// suite (scripts/test.sh, which installs them) runs everything but the
// machine tests (Machine), which scripts/test-machine.sh runs.
package testenv

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// A Need is one prerequisite of a test.
type Need struct {
	name    string   // as said to the user
	files   []string // any of these executables (a name is looked up in PATH)
	install string   // the Debian packages that provide it
	light   bool     // not skipped by -short (git: every developer has it)
}

// The prerequisites.
var (
	// Server is Debian's MariaDB server: mariadbd and mariadb-install-db.
	Server = Need{"a MariaDB server (mariadbd, mariadb-install-db, my_print_defaults)", []string{"/usr/sbin/mariadbd|mariadbd", "mariadb-install-db", "my_print_defaults"}, "mariadb-server", false}
	// BuildTools are what a CMake build of a server tree (or the fixture) runs.
	BuildTools = Need{"the build tools (cmake, make, cc, git)", []string{"cmake", "make", "cc", "git"}, "cmake make gcc libc6-dev git", false}
	// Distcc is distcc, which the build tests wire into CMake's launchers.
	Distcc = Need{"distcc", []string{"distcc"}, "distcc", false}
	// Distccd is distcc's daemon, which the compile farm's test hosts run.
	Distccd = Need{"distccd", []string{"distccd"}, "distcc", false}
	// Icecc is icecream: the compiler wrapper, its daemon and its
	// scheduler, which the compile farm's test hosts run.
	Icecc = Need{"icecream (icecc, iceccd, icecc-scheduler)", []string{"icecc", "/usr/sbin/iceccd|iceccd", "/usr/sbin/icecc-scheduler|icecc-scheduler"}, "icecc", false}
	// NetNS is what test hosts in network namespaces need: the ip command
	// (the tests run as root).
	NetNS = Need{"the ip command (network namespaces)", []string{"/usr/sbin/ip|/sbin/ip|ip"}, "iproute2", false}
	// Nginx is nginx, whose WebDAV PUT serves a shared build cache over
	// HTTP in the tests.
	Nginx = Need{"nginx", []string{"/usr/sbin/nginx|nginx"}, "nginx-light", false}
	// Git is the git command.
	Git = Need{"git", []string{"git"}, "git", true}
	// Sysbench is sysbench 1.0, the yardstick and the external driver.
	Sysbench = Need{"sysbench", []string{"sysbench"}, "sysbench", false}
	// LLD is LLVM's linker, which scripts/variance/relink-layout.sh links
	// a server's objects again with, in a shuffled order.
	LLD = Need{"lld (ld.lld)", []string{"ld.lld"}, "lld", false}
	// Browser is headless Chromium, which loads the HTML reports.
	Browser = Need{"a browser (chromium)", []string{"chromium|chromium-browser"}, "chromium", false}
)

// Require skips t under -short when it needs a server, the build tools,
// sysbench, distcc or a browser, and fails it when one of needs is missing
// from the machine: a test that starts a server, builds
// or opens a browser calls it first.
func Require(t testing.TB, needs ...Need) {
	t.Helper()
	var heavy []string
	for _, n := range needs {
		if !n.light {
			heavy = append(heavy, n.name)
		}
	}
	if testing.Short() && len(heavy) > 0 {
		t.Skipf("-short: this test needs %s", strings.Join(heavy, ", "))
	}
	for _, n := range needs {
		if missing := n.missing(); missing != "" {
			t.Fatalf("this test needs %s: %s not found (apt-get install %s, or scripts/setup.sh; go test -short skips such tests)", n.name, missing, n.install)
		}
	}
}

// missing returns the first of n's executables found nowhere, or "".
func (n Need) missing() string {
	for _, f := range n.files {
		found := false
		for _, alt := range strings.Split(f, "|") {
			if strings.HasPrefix(alt, "/") {
				if st, err := os.Stat(alt); err == nil && !st.IsDir() {
					found = true
				}
			} else if _, err := exec.LookPath(alt); err == nil {
				found = true
			}
		}
		if !found {
			return strings.Split(f, "|")[0]
		}
	}
	return ""
}

// MachineTestsEnv is the environment variable scripts/test-machine.sh sets
// to run the machine tests (Machine).
const MachineTestsEnv = "PERFBISECT_MACHINE_TESTS"

// Machine skips t unless MachineTestsEnv is 1: a test that makes other
// machines on this one (runner hosts' sshd and Slurm, compile farms'
// distccd and iceccd) or neighbours of a bisection (a CPU quota and a
// memory hog coming and going at random). They take minutes, so they run
// in scripts/test-machine.sh, not in the suite CI runs (scripts/test.sh),
// which stays within its time; run it after touching runner hosts, farms
// or the neighbour rules. Under it a missing prerequisite fails as in
// Require.
func Machine(t testing.TB) {
	t.Helper()
	if os.Getenv(MachineTestsEnv) != "1" {
		t.Skipf("a machine test (test hosts or neighbours on this machine): scripts/test-machine.sh runs it (%s=1)", MachineTestsEnv)
	}
}

// Tmpfs mounts a tmpfs of size (as mount takes it: "64m") on a new temporary
// directory and returns it; it is unmounted when the test ends. Without root
// (or in a container without CAP_SYS_ADMIN) the test is skipped, saying so:
// a read-only or full disk cannot be made otherwise.
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skipf("mount tmpfs: %v (a container without CAP_SYS_ADMIN)", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// ReadOnly remounts the tmpfs dir (from Tmpfs) read-only.
func ReadOnly(t testing.TB, dir, size string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY, "size="+size+",mode=0700"); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
}
