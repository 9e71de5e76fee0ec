package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/internal/testenv"
)

// makeBinaryTarball builds the fixture's release tag with CMake, as a
// vendor would, and packs its install tree in the vendors' layout (one top
// directory named as the tarball) into dir: mariadb-VERSION-linux-x86_64.tar.gz.
func makeBinaryTarball(t *testing.T, repo, tag, dir string) string {
	t.Helper()
	version := strings.TrimPrefix(tag, "mariadb-")
	top := "mariadb-" + version + "-linux-x86_64"
	work := t.TempDir()
	src, bld, dest := filepath.Join(work, "src"), filepath.Join(work, "build"), filepath.Join(work, "dest")
	steps := [][]string{
		{"git", "-C", repo, "worktree", "add", "--detach", "-q", src, tag},
		{"cmake", "-S", src, "-B", bld, "-DCMAKE_INSTALL_PREFIX=/usr/local/mysql"},
		{"cmake", "--build", bld},
		{"cmake", "--install", bld, "--prefix", filepath.Join(dest, top)},
		{"tar", "-czf", filepath.Join(dir, top+".tar.gz"), "-C", dest, top},
		{"git", "-C", repo, "worktree", "remove", "--force", src},
	}
	for _, s := range steps {
		if out, err := exec.Command(s[0], s[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", s, err, out)
		}
	}
	return filepath.Join(dir, top+".tar.gz")
}

// TestBisectBetweenReleasesOnBinaries: a fixture of four releases
// (10.11.1 good ... 10.11.4 bad, one every 4 commits) with the culprit
// between 10.11.2 and 10.11.3, and the vendors' tarballs of all four. The
// bisection measures the releases first on their tarballs (its first
// session builds nothing), narrows to 10.11.2..10.11.3, goes on from
// source between them (never building 10.11.1 or 10.11.4) and names the
// culprit; killed during the second phase, the same command resumes it
// without measuring the first phase again.
func TestBisectBetweenReleasesOnBinaries(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools)
	repo, culprit := makeFixture(t, "--releases", "4", "-n", "12", "--culprit-pos", "7", "--broken-pos", "0")
	bins := t.TempDir()
	release := map[string]string{} // tag -> commit
	tarballs := map[string]string{}
	for _, tag := range []string{"mariadb-10.11.1", "mariadb-10.11.2", "mariadb-10.11.3", "mariadb-10.11.4"} {
		tarballs[tag] = makeBinaryTarball(t, repo, tag, bins)
		release[tag] = gitOut(t, repo, "rev-parse", tag+"^{commit}")
	}

	// A tarball whose server is another release than its name says: the
	// user's file, named, before any run; no server left.
	mislabeled := t.TempDir()
	for from, to := range map[string]string{"mariadb-10.11.2": "mariadb-10.11.1", "mariadb-10.11.4": "mariadb-10.11.4", "mariadb-10.11.3": "mariadb-10.11.3"} {
		b, err := os.ReadFile(tarballs[from])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(mislabeled, to+"-linux-x86_64.tar.gz"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	wrong := t.TempDir()
	r := perfbisect(t, nil, append([]string{"start", "--repo", repo, "--good", "10.11.1", "--bad", "10.11.4", "--binaries", mislabeled,
		"--state-dir", wrong, "--no-explain"}, smallRun...)...)
	if r.code != exitUsage || !strings.Contains(r.stderr, "mariadb-10.11.1-linux-x86_64.tar.gz: its server reports") || !strings.Contains(r.stderr, "10.11.2-MariaDB") {
		t.Errorf("a mislabeled tarball: exit %d, want %d naming it and what its server reports", r.code, exitUsage)
	}
	if s := serversUnder(wrong); len(s) > 0 {
		t.Errorf("servers left running: %v", s)
	}
	// Not this machine's: listed, never used.
	if err := os.WriteFile(filepath.Join(bins, "mariadb-10.11.3-linux-systemd-aarch64.tar.gz"), []byte("not for here"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	jsonOut := filepath.Join(t.TempDir(), "result.json")
	htmlOut := filepath.Join(t.TempDir(), "result.html")
	args := append([]string{"start", "--repo", repo, "--good", "10.11.1", "--bad", "mariadb-10.11.4", "--binaries", bins,
		"--state-dir", state, "--no-explain", "--json", jsonOut, "--html", htmlOut}, smallRun...)

	// First: killed once the second phase has begun.
	cmd := command(t, args...)
	var first bytes.Buffer
	cmd.Stdout, cmd.Stderr = &first, &first
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, cmd, 8*time.Minute, "the second phase's first runs", func() bool {
		sess, runs := storedRuns(t, state)
		return sess != nil && sess.ID >= 2 && len(runs) >= 3
	})
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	time.Sleep(time.Second)
	phase1Runs := phaseRuns(t, state, 1)
	if !strings.Contains(first.String(), "first bad release on the vendors' binaries: mariadb-10.11.3 (good: mariadb-10.11.2)") {
		t.Fatalf("the first phase did not narrow to 10.11.2..10.11.3:\n%s", tail(first.String(), 30))
	}

	r = perfbisect(t, nil, args...)
	if r.code != exitOK || !strings.Contains(r.stdout, "first bad commit: "+culprit) {
		t.Fatalf("resumed bisection: exit %d, want 0 naming %s\n%s", r.code, culprit, r.stderr)
	}
	if !strings.Contains(r.stderr, "resuming session 2") {
		t.Errorf("the second phase was not resumed:\n%s", tail(r.stderr, 30))
	}

	st, err := store.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	one, err := st.Session(1)
	if err != nil || one.State != store.Done || one.Outcome != "found" || one.Identity()[store.KeyRecipe] == "" {
		t.Fatalf("first phase session: %+v %v", one, err)
	}
	evs, _ := st.Events(1)
	runs1 := phaseRuns(t, state, 1)
	onRelease := map[string]bool{}
	for _, c := range release {
		onRelease[c] = true
	}
	for _, e := range evs {
		if e.Run != nil {
			if !onRelease[e.Commit] {
				t.Errorf("the first phase ran %.10s, not a release", e.Commit)
			}
		}
	}
	if runs1 != phase1Runs || runs1 == 0 {
		t.Errorf("first phase: %d runs stored, %d when the second began: measured again on resume?", runs1, phase1Runs)
	}
	if b, _ := st.Builds(1); len(b) != 0 {
		t.Errorf("the first phase built %d revisions: %+v", len(b), b)
	}
	two, _ := st.Session(2)
	if two == nil || two.Good != release["mariadb-10.11.2"] || two.Bad != release["mariadb-10.11.3"] || two.Outcome != "found" {
		t.Fatalf("second phase session: %+v", two)
	}
	builds, _ := st.Builds(2)
	built := map[string]bool{}
	for _, b := range builds {
		built[b.Commit] = true
	}
	for _, tag := range []string{"mariadb-10.11.1", "mariadb-10.11.4"} {
		if built[release[tag]] {
			t.Errorf("%s was built, though only its tarball was needed", tag)
		}
	}
	if !built[culprit] || !built[release["mariadb-10.11.2"]] {
		t.Errorf("the second phase did not build its endpoints and the culprit from source: %v", built)
	}
	if unpacked, _ := filepath.Glob(filepath.Join(state, "binaries", "mariadb-10.11.*-linux-x86_64-*", "mariadb-10.11.*-linux-x86_64", "bin", "mariadbd")); len(unpacked) != 4 {
		t.Errorf("unpacked tarballs: %v, want the four releases'", unpacked)
	}
	// status and the bug report say both phases; the first's report
	// proposes no explain of a release against its "parent".
	if st := perfbisect(t, nil, "status", "--state-dir", state, "--repo", repo); !strings.Contains(st.stdout, "first, the releases on the vendors' binary tarballs (session 1: mariadb-10.11.1 mariadb-10.11.2 mariadb-10.11.3 mariadb-10.11.4;") ||
		!strings.Contains(st.stdout, "first bad release mariadb-10.11.3 (good: mariadb-10.11.2)") {
		t.Errorf("status does not say the first phase:\n%s", st.stdout)
	}
	if rep := perfbisect(t, nil, "report", "1", "--state-dir", state, "--repo", repo); !strings.Contains(rep.stdout, "releases on the vendors' binary tarballs, nothing built") ||
		strings.Contains(rep.stdout, "perfbisect explain") || !strings.Contains(rep.stdout, "the next session bisects the commits between mariadb-10.11.2 and mariadb-10.11.3") {
		t.Errorf("the first phase's report:\n%s", rep.stdout)
	}
	if page, err := os.ReadFile(htmlOut); err != nil || !strings.Contains(string(page), "first, the releases on the vendors&#39; binary tarballs (session 1:") {
		t.Errorf("the HTML page does not say the first phase (%v)", err)
	}
	j := readJSON(t, jsonOut)
	if j.Releases == nil || j.Releases.Good != "mariadb-10.11.2" || j.Releases.Bad != "mariadb-10.11.3" || j.Releases.Session != 1 || len(j.Releases.Releases) != 4 {
		t.Errorf("the JSON's first phase: %+v", j.Releases)
	}
}

// phaseRuns counts the runs stored for session id.
func phaseRuns(t *testing.T, state string, id int64) int {
	t.Helper()
	st, err := store.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, err := st.RunCount(id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
