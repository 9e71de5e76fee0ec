// Command measure-build measures issue 5's build targets with package build,
// exactly as a bisection builds: along a real bisect path (the midpoint jumps
// a bisection makes, not adjacent commits) it times the first (clean) build,
// each incremental step, and a revision already in the cache.
//
// The project is generated: a git repository of a CMake C project with -files
// translation units (default 300) and -commits commits (default 32), each
// changing -per-commit files (default 3, chosen with a fixed seed). The path is
// good = commit 0, bad = the last, then the midpoints a bisection visits when
// the first bad commit is -culprit. Every mode starts from an empty state
// directory and, with ccache, an empty cache (CCACHE_DIR in a temporary
// directory): the clean build is cold.
//
//	go run ./scripts/measure-build                 # ~2 minutes on 2 cores
//	go run ./scripts/measure-build -fixture DIR    # also along the same kind of path in a make-fixture.sh repository
//
// It prints, per mode (ccache, no ccache): the clean build's time, each
// step's time and files changed since the previous revision, the mean step
// time, the ratio mean step / clean build (target <= 0.15), the cache-hit time
// (target < 1 s) and the bytes each cache entry holds. Only meaningful on an
// otherwise idle machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"

	"github.com/perfbisect/perfbisect/build"
)

func main() {
	files := flag.Int("files", 300, "translation units of the generated project")
	commits := flag.Int("commits", 32, "commits after the first")
	perCommit := flag.Int("per-commit", 3, "files each commit changes")
	culprit := flag.Int("culprit", 21, "the first bad commit the simulated bisection converges on (1..commits)")
	fixture := flag.String("fixture", "", "also measure a repository made by scripts/make-fixture.sh (its first-parent history)")
	flag.Parse()
	if *culprit < 1 || *culprit > *commits {
		fail("-culprit %d: want 1..%d", *culprit, *commits)
	}
	tmp, err := os.MkdirTemp("", "measure-build-")
	if err != nil {
		fail("%v", err)
	}
	defer os.RemoveAll(tmp)
	repoDir := filepath.Join(tmp, "project")
	hashes, changed := generate(repoDir, *files, *commits, *perCommit)
	fmt.Printf("generated project: %d C files, %d commits changing %d files each (seed 1); bisect path for first bad commit %d\n\n",
		*files, *commits, *perCommit, *culprit)
	path := bisectPath(*commits, *culprit)
	for _, ccache := range []bool{true, false} {
		measure(tmp, repoDir, hashes, path, ccache, func(a, b int) int { return filesBetween(changed, a, b) })
	}
	if *fixture != "" {
		abs, _ := filepath.Abs(*fixture)
		fh := firstParents(abs)
		fc := len(fh) - 1
		fmt.Printf("fixture %s: %d commits on the first-parent line\n\n", abs, fc)
		measure(tmp, abs, fh, bisectPath(fc, (fc*2)/3), true, nil)
	}
}

// bisectPath is the order in which a bisection builds: good (0), bad (n),
// then the midpoints converging on culprit.
func bisectPath(n, culprit int) []int {
	path := []int{0, n}
	good, bad := 0, n
	for bad-good > 1 {
		mid := (good + bad) / 2
		path = append(path, mid)
		if mid >= culprit {
			bad = mid
		} else {
			good = mid
		}
	}
	return path
}

func measure(tmp, repoDir string, hashes []string, path []int, ccache bool, between func(a, b int) int) {
	repo, err := git.PlainOpen(repoDir)
	if err != nil {
		fail("%v", err)
	}
	mode := "ccache (cold at the start)"
	if !ccache {
		mode = "no ccache"
	} else if _, err := exec.LookPath("ccache"); err != nil {
		fmt.Println("ccache not installed: skipping the ccache mode")
		return
	}
	state, _ := os.MkdirTemp(tmp, "state-")
	ccacheDir, _ := os.MkdirTemp(tmp, "ccache-")
	os.Setenv("CCACHE_DIR", ccacheDir)
	b := &build.Builder{Repo: repo, StateDir: state, Recipe: build.Recipe{NoCcache: !ccache}}
	ctx := context.Background()
	fmt.Printf("== %s\n", mode)
	var clean time.Duration
	var steps []time.Duration
	prev := -1
	for i, c := range path {
		start := time.Now()
		if _, err := b.Build(ctx, hashes[c]); err != nil {
			fail("build of commit %d: %v", c, err)
		}
		d := time.Since(start)
		what := "clean build"
		if i == 0 {
			clean = d
		} else {
			steps = append(steps, d)
			what = fmt.Sprintf("step from %d", prev)
			if between != nil {
				what += fmt.Sprintf(" (%d files differ)", between(prev, c))
			}
		}
		fmt.Printf("  commit %2d  %-28s %6.2f s\n", c, what, d.Seconds())
		prev = c
	}
	var sum time.Duration
	for _, s := range steps {
		sum += s
	}
	mean := sum / time.Duration(len(steps))
	// A revision already in the cache, from a new Builder (a later session).
	b2 := &build.Builder{Repo: repo, StateDir: state, Recipe: b.Recipe}
	start := time.Now()
	if _, err := b2.Build(ctx, hashes[path[len(path)-1]]); err != nil {
		fail("cache hit: %v", err)
	}
	hit := time.Since(start)
	entries := build.CacheEntries(state)
	sort.Slice(entries, func(i, j int) bool { return entries[i].Used.Before(entries[j].Used) })
	var sizes []string
	for _, e := range entries {
		sizes = append(sizes, fmt.Sprintf("%.0f", float64(e.Bytes)/1024))
	}
	fmt.Printf("  clean %.2f s, mean incremental step %.2f s over %d steps: ratio %.3f (target <= 0.15)\n", clean.Seconds(), mean.Seconds(), len(steps), mean.Seconds()/clean.Seconds())
	fmt.Printf("  cache hit %.1f ms (target < 1 s)\n", float64(hit.Microseconds())/1000)
	fmt.Printf("  disk per cache entry, KiB (shared files counted once): %s\n\n", strings.Join(sizes, " "))
}

// generate makes the project's repository and returns the commit hashes and,
// per commit, the files it changed.
func generate(dir string, files, commits, perCommit int) ([]string, [][]int) {
	must(os.MkdirAll(dir, 0o755))
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=m", "GIT_AUTHOR_EMAIL=m@example.com", "GIT_COMMITTER_NAME=m", "GIT_COMMITTER_EMAIL=m@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			fail("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	version := make([]int, files)
	write := func(i int) {
		var s strings.Builder
		fmt.Fprintf(&s, "#include \"common.h\"\n/* version %d */\n", version[i])
		for f := 0; f < 12; f++ {
			fmt.Fprintf(&s, "int f%d_%d(int x) {\n\tint acc = %d;\n\tfor (int k = 0; k < x; k++) {\n"+
				"\t\tacc = acc * 31 + k * %d;\n\t\tif (acc %% 7 == %d) acc ^= k << 3;\n\t\telse acc += MIX(acc, k);\n\t}\n\treturn acc;\n}\n",
				i, f, version[i], f+1, f%7)
		}
		must(os.WriteFile(filepath.Join(dir, fmt.Sprintf("src/u%03d.c", i)), []byte(s.String()), 0o644))
	}
	must(os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "src/common.h"), []byte("#define MIX(a, b) (((a) >> 5) ^ ((b) * 2654435761u))\n"), 0o644))
	var list, decls, calls strings.Builder
	for i := 0; i < files; i++ {
		write(i)
		fmt.Fprintf(&list, " src/u%03d.c", i)
		fmt.Fprintf(&decls, "int f%d_0(int);\n", i)
		fmt.Fprintf(&calls, "\tacc += f%d_0(argc);\n", i)
	}
	must(os.WriteFile(filepath.Join(dir, "src/main.c"), []byte(decls.String()+"int main(int argc, char **argv) {\n\tint acc = 0;\n"+calls.String()+"\treturn acc & 1;\n}\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "CMakeLists.txt"), []byte("cmake_minimum_required(VERSION 3.10)\nproject(generated C)\n"+
		"set(CMAKE_C_FLAGS \"${CMAKE_C_FLAGS} -O2 -g\")\nadd_executable(mariadbd src/main.c"+list.String()+")\ninstall(TARGETS mariadbd DESTINATION bin)\n"), 0o644))
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-qm", "commit 0")
	hashes := []string{git("rev-parse", "HEAD")}
	changed := [][]int{nil}
	rng := rand.New(rand.NewSource(1))
	for c := 1; c <= commits; c++ {
		var these []int
		for _, i := range rng.Perm(files)[:perCommit] {
			version[i]++
			write(i)
			these = append(these, i)
		}
		git("commit", "-qam", fmt.Sprintf("commit %d", c))
		hashes = append(hashes, git("rev-parse", "HEAD"))
		changed = append(changed, these)
	}
	return hashes, changed
}

// filesBetween counts the files whose content differs between commits a and b.
func filesBetween(changed [][]int, a, b int) int {
	if a > b {
		a, b = b, a
	}
	set := map[int]bool{}
	for c := a + 1; c <= b; c++ {
		for _, f := range changed[c] {
			set[f] = true
		}
	}
	return len(set)
}

// firstParents lists the first-parent history of HEAD in dir, oldest first.
func firstParents(dir string) []string {
	out, err := exec.Command("git", "-C", dir, "rev-list", "--first-parent", "--reverse", "HEAD").Output()
	if err != nil {
		fail("git rev-list in %s: %v", dir, err)
	}
	return strings.Fields(string(out))
}

func must(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "measure-build: "+format+"\n", args...)
	os.Exit(1)
}
