package app

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/testenv"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// TestLayoutsByDefault: without --layouts a server tree (sql/CMakeLists.txt)
// built by CMake gets a code layout per run, part of the session's identity; a
// tree that does not link its server, a --build-cmd recipe or a given
// --layouts keep what they say; without ld.lld, or with runner hosts, the
// server tree gets one layout and the log says why; a stored session begun
// with one layout goes on so. A build by CMake's Ninja generator gets one
// layout (said), and --layouts run with it is refused; so is --layouts 0.
func TestLayoutsByDefault(t *testing.T) {
	testenv.Require(t, testenv.BuildTools)
	// ResolveLayouts asks whether ld.lld is installed; this one is not run.
	lld := t.TempDir()
	if err := os.WriteFile(filepath.Join(lld, "ld.lld"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", lld+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("CMAKE_GENERATOR", "")
	server, _, g := gitRepo(t, 1)
	if err := os.MkdirAll(filepath.Join(server, "sql"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(server, "sql", "CMakeLists.txt"), []byte("ADD_EXECUTABLE(mysqld main.cc)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g("add", "sql")
	g("commit", "-q", "-m", "server")
	other, _, _ := gitRepo(t, 1)

	try := func(repo string, b BuildRequest) (*Setup, string, error) {
		var log strings.Builder
		b.CacheSize = "1GiB"
		if b.Preset == "" {
			b.Preset = "auto"
		}
		req := SetupRequest{Repo: repo, Workload: WorkloadRequest{Name: "oltp_read_only", Threads: 1, Tables: 1, TableSize: 100,
			Time: "1", Warmup: "0", RangeSize: 10, RandType: "uniform", RandSeed: 1},
			Driver: "builtin", SnapshotCacheSize: "1GiB", StartTimeout: "3m", Repeats: 3, MaxRepeats: 18, Threshold: "5",
			Confidence: "0.95", Metric: "tps", Find: "regression", Build: b}
		s := &Setup{Log: &log}
		err := s.Configure(context.Background(), req)
		return s, log.String(), err
	}
	configure := func(repo string, b BuildRequest) (*Setup, string) {
		t.Helper()
		s, log, err := try(repo, b)
		if err != nil {
			t.Fatalf("%s %+v: %v", repo, b, err)
		}
		return s, log
	}
	for _, c := range []struct {
		name string
		repo string
		b    BuildRequest
		want int
	}{
		{"a server tree", server, BuildRequest{}, build.LayoutPerRun},
		{"--layouts given", server, BuildRequest{Layouts: "4"}, 4},
		{"--layouts 1 given", server, BuildRequest{Layouts: "1"}, 1},
		{"--layouts run given", other, BuildRequest{Layouts: "run"}, build.LayoutPerRun},
		{"--build-cmd", server, BuildRequest{Preset: "none", BuildCmd: "true"}, 1},
		{"not a server tree", other, BuildRequest{}, 1},
	} {
		s, log := configure(c.repo, c.b)
		said := strings.Contains(log, "code layouts: each run's server is linked again")
		if s.Build.Layouts != c.want || said != (c.name == "a server tree") {
			t.Errorf("%s: %d layouts, log %q; want %d, said only by default", c.name, s.Build.Layouts, log, c.want)
		}
		id := s.Identity("a", "b", nil)
		want := map[int]string{1: "", 4: "4", build.LayoutPerRun: "run"}[c.want]
		if got := id[store.KeyLayouts]; got != want {
			t.Errorf("%s: identity's layouts %q, want %q", c.name, got, want)
		}
	}

	// CMake's Ninja generator writes no link.txt.
	s, log := configure(server, BuildRequest{CMakeArgs: "-G Ninja"})
	if s.Build.Layouts != 1 || !strings.Contains(log, "code layouts off: the build uses CMake's Ninja generator") {
		t.Errorf("-G Ninja: %d layouts, log %q; want 1, said", s.Build.Layouts, log)
	}
	for _, b := range []BuildRequest{{CMakeArgs: "-GNinja", Layouts: "run"}, {Layouts: "0"}} {
		if _, _, err := try(server, b); OutcomeOf(err) != Usage || !strings.Contains(usage.TextNamed(err, func(n string) string { return "--" + n }), "--layouts") {
			t.Errorf("%+v: %v, want a usage error naming --layouts", b, err)
		}
	}

	// Runner hosts receive a build's own server.
	s, _ = configure(server, BuildRequest{})
	s.Build.LayoutsAuto, s.Build.Layouts = true, 0
	var runners strings.Builder
	s.Build.ResolveLayouts(s.Repo, true, io.Discard, &runners)
	if s.Build.Layouts != 1 || !strings.Contains(runners.String(), "code layouts off: --runner hosts") {
		t.Errorf("with runner hosts: %d layouts, log %q; want 1, said", s.Build.Layouts, runners.String())
	}
	// Without lld: the machine's, said.
	nolld := t.TempDir()
	cmake, _ := exec.LookPath("cmake")
	if err := os.Symlink(cmake, filepath.Join(nolld, "cmake")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", nolld)
	s, log = configure(server, BuildRequest{})
	if s.Build.Layouts != 1 || !strings.Contains(log, "ld.lld, is not installed here (Debian: apt-get install lld)") {
		t.Errorf("without lld: %d layouts, log %q; want 1, said", s.Build.Layouts, log)
	}

	// A stored session begun with the build's own layout.
	for _, c := range []struct {
		begun store.Identity
		want  int
	}{{store.Identity{}, 1}, {store.Identity{store.KeyLayouts: "run"}, build.LayoutPerRun}} {
		s := &Setup{Log: io.Discard, Build: BuildSettings{Layouts: build.LayoutPerRun, LayoutsAuto: true}}
		s.layoutsAsBegun(c.begun)
		if s.Build.Layouts != c.want {
			t.Errorf("begun with %v: %d layouts, want %d", c.begun, s.Build.Layouts, c.want)
		}
	}
	s = &Setup{Log: io.Discard, Build: BuildSettings{Layouts: 8}}
	if s.layoutsAsBegun(store.Identity{}); s.Build.Layouts != 8 {
		t.Errorf("--layouts 8 given, begun with one: %d layouts, want 8 (the identity then tells them apart)", s.Build.Layouts)
	}
}
