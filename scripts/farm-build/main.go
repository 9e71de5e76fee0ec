// Command farm-build builds one commit of a repository (a real server tree)
// with package build, as a bisection builds it, on a compile farm of test
// hosts it starts on this machine (internal/testhosts: distccd on 127.0.0.2,
// 127.0.0.3, ...; or an icecream farm in network namespaces), from a cold
// ccache and an empty state directory, and prints the build's own
// "compiles:" line, the compiles each host's daemon says it completed, and
// the wall time. With -kill-after N it kills the first host once that
// host has completed N compiles (a host that dies mid-build). Run as root
// (the icecream hosts' namespaces); the hosts share this machine's CPUs, so
// the wall time says what the farm costs, not what a real farm saves.
//
//	go run ./scripts/farm-build -repo DIR -commit REV -farm distcc -hosts 2 -slots 2
//	go run ./scripts/farm-build -repo DIR -commit REV -farm icecc -hosts 2 -slots 2 -kill-after 50
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/testhosts"
)

// script is testhosts.T for a command: a failure runs the cleanups and exits.
type script struct {
	mu       sync.Mutex
	cleanups []func()
}

func (s *script) Helper() {}

func (s *script) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}

func (s *script) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "farm-build: "+format+"\n", args...)
	s.done()
	os.Exit(1)
}

// done runs the cleanups, last first.
func (s *script) done() {
	s.mu.Lock()
	cs := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

func main() {
	repo := flag.String("repo", "", "the server's git repository")
	commit := flag.String("commit", "", "the commit to build")
	farm := flag.String("farm", "distcc", "distcc, icecc or none")
	hosts := flag.Int("hosts", 2, "compile hosts")
	slots := flag.Int("slots", 2, "compiles per host at once")
	jobs := flag.Int("jobs", 0, "parallel build jobs (0: the build's default)")
	killAfter := flag.Int("kill-after", 0, "kill the first host once it has completed this many compiles (0: never)")
	flag.Parse()
	if *repo == "" || *commit == "" {
		fmt.Fprintln(os.Stderr, "farm-build: -repo and -commit are needed")
		os.Exit(2)
	}
	s := &script{}
	defer s.done()
	r, err := git.PlainOpen(*repo)
	if err != nil {
		s.Fatalf("%v", err)
	}
	h, err := r.ResolveRevision(plumbing.Revision(*commit))
	if err != nil {
		s.Fatalf("%s: %v", *commit, err)
	}
	state, err := os.MkdirTemp("", "farm-build-state-")
	if err != nil {
		s.Fatalf("%v", err)
	}
	s.Cleanup(func() { os.RemoveAll(state) })
	cc, err := os.MkdirTemp("", "farm-build-ccache-")
	if err != nil {
		s.Fatalf("%v", err)
	}
	s.Cleanup(func() { os.RemoveAll(cc) })
	os.Setenv("CCACHE_DIR", cc) // cold: every compile reaches the farm
	recipe := build.Recipe{Jobs: *jobs}
	var compiled []func() int
	var names []string
	var kill func()
	switch *farm {
	case "distcc":
		dd, err := os.MkdirTemp("", "farm-build-distcc-")
		if err != nil {
			s.Fatalf("%v", err)
		}
		s.Cleanup(func() { os.RemoveAll(dd) })
		os.Setenv("DISTCC_DIR", dd)
		var spec []string
		for i := 0; i < *hosts; i++ {
			d := testhosts.StartDistccd(s, fmt.Sprintf("127.0.0.%d", i+2), *slots)
			spec = append(spec, fmt.Sprintf("%s/%d", d.Host, *slots))
			compiled = append(compiled, d.Compiled)
			names = append(names, d.Host)
			if i == 0 {
				kill = d.Kill
			}
		}
		recipe.DistccHosts = strings.Join(spec, " ")
	case "icecc":
		f := testhosts.StartIcecc(s, testhosts.NewNetwork(s), *hosts, *slots)
		os.Setenv("ICECC_TEST_SOCKET", f.Socket)
		for _, h := range f.Hosts {
			compiled = append(compiled, h.Compiled)
			names = append(names, h.IP)
		}
		kill = f.Hosts[0].Kill
		recipe.Icecc = true
		if recipe.Jobs == 0 {
			recipe.Jobs = 2 + *hosts**slots
		}
	case "none":
	default:
		s.Fatalf("-farm %s: want distcc, icecc or none", *farm)
	}
	b := &build.Builder{Repo: r, StateDir: state, Recipe: recipe, Log: os.Stdout}
	if *killAfter > 0 && kill != nil {
		b.Progress = func(p build.Progress) {
			if p.Step == "build" && p.Percent < 0 {
				go func() {
					for compiled[0]() < *killAfter {
						time.Sleep(100 * time.Millisecond)
					}
					fmt.Printf("farm-build: killing %s after %d compiles\n", names[0], compiled[0]())
					kill()
				}()
			}
		}
	}
	start := time.Now()
	prefix, err := b.Build(context.Background(), h.String())
	wall := time.Since(start)
	if err != nil {
		s.Fatalf("build: %v", err)
	}
	fmt.Printf("farm-build: %s %s on %s (%d hosts x %d): %s in %s\n", *repo, *commit, *farm, *hosts, *slots, prefix, wall.Round(time.Second))
	for i, n := range names {
		fmt.Printf("farm-build: %s's daemon completed %d compiles\n", n, compiled[i]())
	}
}
