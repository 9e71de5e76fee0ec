package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/internal/testenv"
)

// perfbisect build fills the cache that start uses: each revision's prefix on
// stdout, a cache hit the second time, a revision that does not compile is
// "failed" with its compiler error and exit 1, and the progress lines come
// from the build tool's percentages.
func TestBuildCommandFillsTheCache(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	repo, _ := makeFixture(t, "--commits", "6", "--culprit-pos", "3", "--broken-pos", "4")
	state := filepath.Join(t.TempDir(), "state")
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	good, bad := git("rev-parse", "good"), git("rev-parse", "bad")
	r := perfbisect(t, nil, "build", "--repo", repo, "--state-dir", state, "good", "bad")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], good+"\t") || !strings.HasPrefix(lines[1], bad+"\t") {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	prefix := strings.SplitN(lines[0], "\t", 2)[1]
	if _, err := os.Stat(filepath.Join(prefix, "bin", "mariadbd")); err != nil {
		t.Errorf("the printed prefix has no server: %v", err)
	}
	if !strings.Contains(r.stderr, "build: MariaDB 10.11.99; preset mariadb") || !strings.Contains(r.stderr, ": build 100%") {
		t.Errorf("progress lines:\n%s", r.stderr)
	}
	again := perfbisect(t, nil, "build", good, "--repo", repo, "--state-dir", state) // flags after the revision
	if again.code != 0 || strings.TrimSpace(again.stdout) != lines[0] || !strings.Contains(again.stderr, "cached in") {
		t.Errorf("second build of good: exit %d\n%s\n%s", again.code, again.stdout, again.stderr)
	}
	broken := strings.Fields(git("rev-list", "--reverse", "good..bad"))[3] // --broken-pos 4
	r = perfbisect(t, nil, "build", "--repo", repo, "--state-dir", state, broken)
	if r.code != exitFailure || strings.TrimSpace(r.stdout) != broken+"\tfailed" || !strings.Contains(r.stderr, "error:") {
		t.Errorf("broken revision: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = perfbisect(t, nil, "build", "--repo", repo, "--state-dir", state, broken)
	if r.code != exitFailure || !strings.Contains(r.stderr, "failed in an earlier session") {
		t.Errorf("remembered failure: exit %d\n%s", r.code, r.stderr)
	}
	r = perfbisect(t, nil, "build", "--repo", repo, "--state-dir", state, "--retry-failed-builds", broken)
	if r.code != exitFailure || strings.Contains(r.stderr, "failed in an earlier session") || !strings.Contains(r.stderr, "error:") {
		t.Errorf("--retry-failed-builds did not build again: exit %d\n%s", r.code, r.stderr)
	}
	// Bad flags are usage errors naming the flag.
	for flag, want := range map[string][]string{
		"--preset=percona":                   {"--preset", "mariadb, mysql"},
		"--build-cache-size=lots":            {"--build-cache-size"},
		"--build-timeout=-3":                 {"--build-timeout"},
		"--layouts=65":                       {`--layouts "65"`, "or 1 (the build's own) to 64"},
		"--layouts=always":                   {`--layouts "always"`, "want run (a code layout of its own for every run)"},
		"--distcc-hosts=build1/0":            {"--distcc-hosts", `"build1/0": limit "0"`},
		"--distcc-hosts=b1 --icecc":          {"--distcc-hosts and --icecc are two compile farms"},
		"--shared-cache=/nonexistent/builds": {"--shared-cache /nonexistent/builds: not a directory"},
	} {
		args := append([]string{"build", "--repo", repo, "--state-dir", state}, strings.Fields(flag)...)
		r := perfbisect(t, nil, append(args, "good")...)
		for _, w := range want {
			if r.code != exitUsage || !strings.Contains(r.stderr, w) {
				t.Errorf("%s: exit %d, %q", flag, r.code, r.stderr)
			}
		}
	}
}

// A second machine (here a second state directory) with the same shared
// build cache builds nothing the first one built: both revisions are
// fetched, print the same kind of prefix, and the servers are there.
func TestBuildCommandSharesBuilds(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	repo, _ := makeFixture(t, "--commits", "4", "--culprit-pos", "2", "--broken-pos", "0")
	shared := t.TempDir()
	first := perfbisect(t, nil, "build", "--repo", repo, "--state-dir", filepath.Join(t.TempDir(), "a"), "--shared-cache", shared, "good", "bad")
	if first.code != 0 || strings.Count(first.stderr, "stored in the shared cache "+shared) != 2 {
		t.Fatalf("first machine: exit %d\n%s", first.code, first.stderr)
	}
	second := perfbisect(t, nil, "build", "--repo", repo, "--state-dir", filepath.Join(t.TempDir(), "b"), "--shared-cache", shared, "good", "bad")
	if second.code != 0 || strings.Count(second.stderr, "fetched from the shared cache "+shared) != 2 || strings.Contains(second.stderr, "configure") {
		t.Errorf("second machine: exit %d, want both fetched and nothing built\n%s", second.code, second.stderr)
	}
	for _, l := range strings.Split(strings.TrimSpace(second.stdout), "\n") {
		prefix := strings.SplitN(l, "\t", 2)[1]
		if _, err := os.Stat(filepath.Join(prefix, "bin", "mariadbd")); err != nil {
			t.Errorf("a fetched prefix has no server: %v", err)
		}
	}
	// A developer's read-only mount of the team's cache: what is there is
	// fetched, what is built here is not stored (said once).
	ro := t.TempDir()
	if out, err := exec.Command("mount", "--bind", shared, ro).CombinedOutput(); err != nil {
		t.Fatalf("a read-only mount of the shared cache (the test runs as root): %v %s", err, out)
	}
	defer exec.Command("umount", ro).Run()
	if out, err := exec.Command("mount", "-o", "remount,ro,bind", ro).CombinedOutput(); err != nil {
		t.Fatalf("remount read-only: %v %s", err, out)
	}
	third := perfbisect(t, nil, "build", "--repo", repo, "--state-dir", filepath.Join(t.TempDir(), "c"), "--shared-cache", ro, "good", "bad~1")
	if third.code != 0 || !strings.Contains(third.stderr, "fetched from the shared cache "+ro) || !strings.Contains(third.stderr, "it is read-only here") || strings.Contains(third.stderr, "storing it") {
		t.Errorf("read-only shared cache: exit %d, want good fetched and bad~1 built, not stored\n%s", third.code, third.stderr)
	}
}

// A state directory inside the work tree (or around it) is refused before
// anything is written.
func TestStateDirInsideWorkTreeIsRefused(t *testing.T) {
	testenv.Require(t, testenv.BuildTools) // build checks its tools (cmake) before the state directory
	repo, _ := makeFixture(t, "--commits", "4", "--culprit-pos", "2", "--broken-pos", "0")
	for _, dir := range []string{repo, filepath.Join(repo, "sql"), filepath.Dir(repo)} {
		r := perfbisect(t, nil, "build", "--repo", repo, "--state-dir", dir, "good")
		if r.code != exitUsage || !strings.Contains(r.stderr, "overlaps the repository's work tree") {
			t.Errorf("--state-dir %s: exit %d\n%s", dir, r.code, r.stderr)
		}
	}
	if out, _ := exec.Command("git", "-C", repo, "status", "--porcelain", "--ignored").Output(); len(out) > 0 {
		t.Errorf("the work tree changed:\n%s", out)
	}
}
