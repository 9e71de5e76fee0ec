package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/testenv"
)

// TestRelinkLayout builds the fixture with CMake, as a bisection does, and
// relinks its server with lld: in the build's order and shuffled. Each copy
// has a binary of its own that runs, the shuffled one lays its functions
// out otherwise, the install it copied is untouched, and an existing
// output directory is refused.
func TestRelinkLayout(t *testing.T) {
	testenv.Require(t, testenv.Server, testenv.BuildTools, testenv.LLD)
	_, file, _, _ := runtime.Caller(0)
	here := filepath.Dir(file)
	src := filepath.Join(t.TempDir(), "server")
	if out, err := exec.Command("bash", filepath.Join(here, "..", "make-fixture.sh"), "-q", "-n", "4", "--culprit-pos", "3", "--broken-pos", "0", src).CombinedOutput(); err != nil {
		t.Fatalf("make-fixture.sh: %v\n%s", err, out)
	}
	repo, err := bisect.OpenRepo(src)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := bisect.Resolve(repo, "good")
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	inst, err := (&build.Builder{Repo: repo, StateDir: state}).Build(context.Background(), rev)
	if err != nil {
		t.Fatal(err)
	}
	bdirs, _ := filepath.Glob(filepath.Join(state, "build-*"))
	if len(bdirs) != 1 {
		t.Fatalf("build directories %v, want one", bdirs)
	}
	orig, err := os.ReadFile(filepath.Join(inst, "bin", "mariadbd"))
	if err != nil {
		t.Fatal(err)
	}
	relink := func(out, seed string) ([]byte, error) {
		return exec.Command("bash", filepath.Join(here, "relink-layout.sh"), bdirs[0], inst, out, seed).CombinedOutput()
	}
	outs := t.TempDir()
	bins := map[string][]byte{}
	for _, seed := range []string{"none", "1"} {
		out := filepath.Join(outs, "lld-"+seed)
		msg, err := relink(out, seed)
		if err != nil {
			t.Fatalf("relink-layout.sh seed %s: %v\n%s", seed, err, msg)
		}
		if !strings.Contains(string(msg), "seed "+seed) {
			t.Errorf("relink-layout.sh seed %s said %q", seed, msg)
		}
		bin := filepath.Join(out, "bin", "mariadbd")
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(b, orig) {
			t.Errorf("seed %s: the relinked server is the build's own binary", seed)
		}
		bins[seed] = b
		// The launcher still runs the system server.
		if v, err := exec.Command(bin, "--version").CombinedOutput(); err != nil || !strings.Contains(string(v), "Ver") {
			t.Errorf("seed %s: %s --version: %v\n%s", seed, bin, err, v)
		}
		if _, err := os.Stat(filepath.Join(out, "bin", "mariadb-install-db")); err != nil {
			t.Errorf("seed %s: the copy lacks the install's other files: %v", seed, err)
		}
	}
	if bytes.Equal(bins["none"], bins["1"]) {
		t.Error("the shuffled link gave the same binary as the build's order")
	}
	if now, _ := os.ReadFile(filepath.Join(inst, "bin", "mariadbd")); !bytes.Equal(now, orig) {
		t.Error("the install that was copied changed")
	}
	if msg, err := relink(filepath.Join(outs, "lld-1"), "2"); err == nil || !strings.Contains(string(msg), "refusing to overwrite") {
		t.Errorf("an existing output directory: %v %s", err, msg)
	}
	// The next revision built in the build directory replaces its objects:
	// good's install can no longer be relinked from it.
	bad, err := bisect.Resolve(repo, "bad")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&build.Builder{Repo: repo, StateDir: state}).Build(context.Background(), bad); err != nil {
		t.Fatal(err)
	}
	if msg, err := relink(filepath.Join(outs, "stale"), "1"); err == nil || !strings.Contains(string(msg), "holds the objects of commit "+bad) {
		t.Errorf("a build directory of another commit: %v %s", err, msg)
	}
}
