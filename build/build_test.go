package build

import (
	"bytes"
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

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/perfbisect/perfbisect/internal/gitcat"
	"github.com/perfbisect/perfbisect/internal/testenv"
)

// gitIn returns a function that runs git in dir with a fixed identity and
// returns its trimmed output, failing the test on error.
func gitIn(t *testing.T, dir string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
}

// buildLog is the path of commit's build log in stateDir (the only recipe's).
func buildLog(t *testing.T, stateDir, commit string) string {
	t.Helper()
	ms, _ := filepath.Glob(filepath.Join(stateDir, "logs", commit[:12]+"-*-build.log"))
	if len(ms) != 1 {
		t.Fatalf("build logs of %.12s: %v", commit, ms)
	}
	return ms[0]
}

// gitRepo makes a real repository with three commits of a tiny CMake project:
// v1, v2 (one source file changed), broken (does not compile). It returns the
// repository path and the commit hashes.
func gitRepo(t *testing.T) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	run := gitIn(t, dir)
	write := func(name, content string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("init", "-q", "-b", "main")
	write("CMakeLists.txt", "cmake_minimum_required(VERSION 3.10)\nproject(hello C)\nadd_executable(hello main.c util.c)\ninstall(TARGETS hello DESTINATION bin)\n")
	write("main.c", "int util(void);\nint main(void){return util();}\n")
	write("util.c", "int util(void){return 0;}\n")
	write("doc/README", "hello\n")
	run("add", "-A")
	run("commit", "-qm", "v1")
	ids := map[string]string{"v1": run("rev-parse", "HEAD")}
	write("util.c", "int util(void){return 3;}\n")
	run("commit", "-qam", "v2")
	ids["v2"] = run("rev-parse", "HEAD")
	write("util.c", "int util(void){return 3;\n")
	run("commit", "-qam", "broken")
	ids["broken"] = run("rev-parse", "HEAD")
	run("checkout", "-q", ids["v1"])
	return dir, ids
}

func TestBuildRealCMake(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	if _, err := exec.LookPath("cmake"); err != nil {
		t.Fatal("cmake is required (apt-get install cmake)")
	}
	repoDir, ids := gitRepo(t)
	repo, err := git.PlainOpen(repoDir)
	if err != nil {
		t.Fatal(err)
	}
	b := &Builder{Repo: repo, StateDir: t.TempDir()}
	ctx := context.Background()
	exitCode := func(prefix string) int { return exitOf(t, filepath.Join(prefix, "bin", "hello")) }
	p1, err := b.Build(ctx, ids["v1"])
	if err != nil {
		t.Fatal(err)
	}
	p2, err := b.Build(ctx, ids["v2"])
	if err != nil {
		t.Fatal(err)
	}
	if p1 == p2 || exitCode(p1) != 0 || exitCode(p2) != 3 {
		t.Fatalf("installed trees do not match their commits: %s=%d %s=%d", p1, exitCode(p1), p2, exitCode(p2))
	}
	// A cached revision is not rebuilt: its build log is not written again.
	logPath := buildLog(t, b.StateDir, ids["v1"])
	st, _ := os.Stat(logPath)
	if p, err := b.Build(ctx, ids["v1"]); err != nil || p != p1 {
		t.Fatal(p, err)
	}
	st2, _ := os.Stat(logPath)
	if st == nil || st2 == nil || !st.ModTime().Equal(st2.ModTime()) {
		t.Error("cached revision was rebuilt")
	}
	// A broken revision is a BuildError naming the step and the compiler's error.
	_, err = b.Build(ctx, ids["broken"])
	var be *BuildError
	if !errors.As(err, &be) || be.Step != "build" || !strings.Contains(err.Error(), "error:") {
		t.Fatalf("broken revision: %v", err)
	}
	if st, err := os.Stat(be.Log); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("build log %s: mode %v (%v), want 0600", be.Log, st.Mode().Perm(), err)
	}
	// The line that stopped the build comes first, the log and what to do
	// after it.
	if msg := err.Error(); !strings.HasPrefix(msg, fmt.Sprintf("build step of %.10s failed: ", ids["broken"])) ||
		strings.Index(msg, "error:") > strings.Index(msg, "log ") {
		t.Errorf("broken revision's message: %s", msg)
	}
	if dir, _ := b.InstallDir(ids["broken"]); dir == "" {
		t.Error("no install dir for the broken revision")
	} else if _, err := os.Stat(filepath.Join(dir, completeMarker)); err == nil {
		t.Error("failed build marked complete")
	}
	// The failure is remembered: a second builder (a later session) does not
	// build it again, and says how to retry.
	b2 := &Builder{Repo: repo, StateDir: b.StateDir}
	os.Remove(be.Log)
	_, err = b2.Build(ctx, ids["broken"])
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "delete") || !be.Earlier || strings.Count(err.Error(), ".failed.json") != 1 {
		t.Fatalf("remembered failure: %v", err)
	}
	if _, err := os.Stat(be.Log); err == nil {
		t.Error("the remembered failure was built again")
	}
	// The user's work tree and HEAD are untouched.
	head, _ := repo.Head()
	if head.Hash().String() != ids["v1"] {
		t.Errorf("HEAD moved to %s", head.Hash())
	}
	if b, _ := os.ReadFile(filepath.Join(repoDir, "util.c")); string(b) != "int util(void){return 0;}\n" {
		t.Errorf("work tree changed: %q", b)
	}
}

func TestCheckoutRewritesOnlyChangedFiles(t *testing.T) {
	repoDir, ids := gitRepo(t)
	repo, _ := git.PlainOpen(repoDir)
	dir := t.TempDir()
	if n, err := Checkout(repo, ids["v1"], dir); err != nil || n != 4 {
		t.Fatalf("first checkout: %d files, %v", n, err)
	}
	if n, err := Checkout(repo, ids["v2"], dir); err != nil || n != 1 {
		t.Fatalf("second checkout wrote %d files (%v), want only util.c", n, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "util.c")); !strings.Contains(string(b), "return 3") {
		t.Errorf("util.c not updated: %q", b)
	}
	// An interrupted checkout (manifest gone) is redone in full.
	os.Remove(filepath.Join(dir, manifestFile))
	if n, _ := Checkout(repo, ids["v1"], dir); n != 4 {
		t.Errorf("after interruption wrote %d files, want 4", n)
	}
	// A checkout interrupted after writing a file that the next commit does not
	// have: the stray is removed by the next checkout.
	os.WriteFile(filepath.Join(dir, manifestFile), []byte(`{"commit":"(interrupted)","files":{"stray.c":"","util.c":""}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "stray.c"), []byte("int stray;\n"), 0o644)
	if _, err := Checkout(repo, ids["v2"], dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "stray.c")); err == nil {
		t.Error("a file of the interrupted checkout survived")
	}
}

func TestRecipeHash(t *testing.T) {
	a := Recipe{CMakeArgs: []string{"-DA=1", "-DB=2"}}
	b := Recipe{CMakeArgs: []string{"-DA=1 -DB=2"}}
	if a.Hash() == b.Hash() || a.Hash() != (Recipe{CMakeArgs: []string{"-DA=1", "-DB=2"}}).Hash() {
		t.Error("recipe hash must depend on the exact argument list")
	}
}

// TestCheckoutPathChangesType: a file and a symlink become directories in the
// next commit; the checkout must follow, and never write through the old symlink.
func TestCheckoutPathChangesType(t *testing.T) {
	outside := t.TempDir()
	repoDir := t.TempDir()
	run := gitIn(t, repoDir)
	run("init", "-q")
	os.WriteFile(filepath.Join(repoDir, "notes"), []byte("x\n"), 0o644)
	os.Symlink(outside, filepath.Join(repoDir, "lnk"))
	run("add", "-A")
	run("commit", "-qm", "s1")
	s1 := run("rev-parse", "HEAD")
	run("rm", "-q", "notes", "lnk")
	os.MkdirAll(filepath.Join(repoDir, "notes"), 0o755)
	os.MkdirAll(filepath.Join(repoDir, "lnk"), 0o755)
	os.WriteFile(filepath.Join(repoDir, "notes", "a"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(repoDir, "lnk", "file.txt"), []byte("f\n"), 0o644)
	run("add", "-A")
	run("commit", "-qm", "s2")
	s2 := run("rev-parse", "HEAD")
	repo, _ := git.PlainOpen(repoDir)
	dir := t.TempDir()
	if _, err := Checkout(repo, s1, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := Checkout(repo, s2, dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes", "a")); string(b) != "a\n" {
		t.Errorf("notes/a: %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) > 0 {
		t.Errorf("the checkout wrote through the old symlink: %v", ents)
	}
	// And back: directories become a file and a symlink again.
	if _, err := Checkout(repo, s1, dir); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(filepath.Join(dir, "lnk")); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("lnk is not a symlink again: %v", err)
	}
}

// A tracked file that an in-source build modified is written again at the
// next checkout, even when the next revision has the same content.
func TestCheckoutRewritesFilesTheBuildChanged(t *testing.T) {
	repoDir, ids := gitRepo(t)
	repo, _ := git.PlainOpen(repoDir)
	dir := t.TempDir()
	if _, err := Checkout(repo, ids["v1"], dir); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(filepath.Join(dir, "main.c"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("/* stamped by the build */\n")
	f.Close()
	if n, err := Checkout(repo, ids["v2"], dir); err != nil || n != 2 {
		t.Fatalf("wrote %d files (%v), want util.c and the modified main.c", n, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "main.c")); strings.Contains(string(b), "stamped") {
		t.Errorf("main.c keeps the build's change: %q", b)
	}
}

// A checkout is what git gives: the content of every file as git archive
// writes it, and no directory the revision no longer has (a CMake
// IF(EXISTS dir) must not see it); with and without git installed (go-git).
func TestCheckoutIsGitsTree(t *testing.T) {
	p := newProject(t, 2)
	if err := os.MkdirAll(filepath.Join(p.dir, "storage", "gone", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	p.write("storage/gone/sub/f.c", "int f;\n")
	p.write("storage/gone/g.c", "int g;\n")
	p.write("bin.dat", "\x00\x01binary\xff")
	with := p.commit("with")
	os.RemoveAll(filepath.Join(p.dir, "storage"))
	p.write("u1.c", "int u1(void){return 11;}\n")
	without := p.commit("without")
	for _, noGit := range []bool{false, true} {
		if noGit {
			t.Setenv("PATH", t.TempDir())
		}
		dir := t.TempDir()
		for _, c := range []string{with, without} {
			if _, err := Checkout(p.repo, c, dir); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "storage")); err == nil {
			t.Errorf("no git %v: a directory the revision removed is still there", noGit)
		}
		want := map[string]string{"u1.c": "int u1(void){return 11;}\n", "bin.dat": "\x00\x01binary\xff", "data.txt": strings.Repeat("shared data\n", 1000)}
		for name, content := range want {
			if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != content {
				t.Errorf("no git %v: %s = %q, %v", noGit, name, b, err)
			}
		}
	}
}

// A checkout whose write fails part-way through a large blob (a full disk)
// returns the error instead of hanging on git cat-file.
func TestCheckoutWriteFailureDoesNotHang(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	p := newProject(t, 1)
	p.write("big.dat", strings.Repeat("0123456789abcdef", 1<<18)) // 4 MiB
	head := p.commit("big")
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git: the blobs are go-git's")
	}
	c := gitcat.OpenBlobs(p.repo, filepath.Join(p.dir, ".git"))
	tree, _ := p.repo.CommitObject(plumbing.NewHash(head))
	f, err := tree.File("big.dat")
	if err != nil {
		t.Fatal(err)
	}
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	done := make(chan error, 1)
	go func() { err := c.CopyBlob(f.Hash, full); c.Close(); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("writing to a full disk succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("git cat-file hung after a failed write")
	}
}

// The time a build reports is the build's: the wait for another
// perfbisect's lock is not part of it (a compare reported "configured,
// built and installed in 1135.9s" for a 35 s build after a 19-minute wait).
func TestBuildTimeLeavesOutTheLockWait(t *testing.T) {
	p := newProject(t, 1)
	const wait = 2 * time.Second
	var log bytes.Buffer
	b := &Builder{Repo: p.repo, StateDir: t.TempDir(), Recipe: Recipe{NoCcache: true}, Log: &log,
		Lock: func(ctx context.Context, what string) (func(), error) { time.Sleep(wait); return func() {}, nil }}
	began := time.Now()
	p.write("u0.c", "int u0(void){return 1;}\n")
	if _, err := b.Build(context.Background(), p.commit("v1")); err != nil {
		t.Fatal(err)
	}
	total := time.Since(began)
	m := regexp.MustCompile(`configured, built and installed in ([0-9.]+)s`).FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no build time in %q", log.String())
	}
	reported, _ := strconv.ParseFloat(m[1], 64)
	if reported > (total - wait + 50*time.Millisecond).Seconds() {
		t.Errorf("reported %.1fs of a %.1fs call that waited %s for the lock: the wait is counted", reported, total.Seconds(), wait)
	}
}
