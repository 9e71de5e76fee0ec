package app

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	git "github.com/go-git/go-git/v5"

	"github.com/perfbisect/perfbisect/bisect/store"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/usage"
)

// ResolveLayouts decides the code layouts per build when --layouts was not
// given (LayoutsAuto): a layout of its own for every run
// (build.LayoutPerRun) when repo is a server tree that links its server
// from its own objects (sql/CMakeLists.txt at HEAD, as MariaDB's, MySQL's
// and Percona's trees have), built by CMake (no --build-cmd), with ld.lld
// installed and no runner hosts, said on log; else 1, the build's own
// layout. When a server tree goes without, note says why (lld missing is
// the machine's).
// Settings given explicitly are left as they are.
func (b *BuildSettings) ResolveLayouts(repo *git.Repository, runners bool, log, note io.Writer) {
	if !b.LayoutsAuto {
		return
	}
	b.Layouts = 1
	if repo == nil || b.Recipe.BuildCmd != "" || !linksItsServer(repo) {
		return
	}
	why := ""
	switch _, err := exec.LookPath("ld.lld"); {
	case generator(b.Recipe) != "":
		why = fmt.Sprintf("the build uses CMake's %s generator, and a layout is linked with the link command the Makefile generator writes", generator(b.Recipe))
	case err != nil:
		why = "LLVM's linker, ld.lld, is not installed here (Debian: apt-get install lld)"
	case runners:
		why = fmt.Sprintf("%s hosts receive a build's own server", usage.Flag("runner"))
	}
	if why != "" {
		fmt.Fprintf(note, "perfbisect: note: code layouts off: %s. A build's code layout alone moves a server by a few percent, which a search with a small %s can take for a regression (docs/statistics.md)\n", why, usage.Flag("threshold"))
		return
	}
	b.Layouts = build.LayoutPerRun
	fmt.Fprintf(log, "code layouts: each run's server is linked again from its build's objects with the code sections shuffled (ld.lld), so that where the linker placed the code is run noise, not a change (%s 1 measures each build's own binary)\n", usage.Flag("layouts"))
}

// layoutsText is the code layouts per build as --layouts takes them: "run"
// or K.
func (b BuildSettings) layoutsText() string {
	if b.Layouts == build.LayoutPerRun {
		return "run"
	}
	return strconv.Itoa(b.Layouts)
}

// generator is the CMake generator recipe r builds with when it is not the
// Makefile one ("Unix Makefiles", CMake's default on Linux): -G in its
// CMake arguments, else the CMAKE_GENERATOR environment variable; "" for
// the Makefile generator.
func generator(r build.Recipe) string {
	g := os.Getenv("CMAKE_GENERATOR")
	for i, a := range r.CMakeArgs {
		switch {
		case a == "-G" && i+1 < len(r.CMakeArgs):
			g = r.CMakeArgs[i+1]
		case strings.HasPrefix(a, "-G") && len(a) > 2:
			g = a[2:]
		}
	}
	if g == "" || g == "Unix Makefiles" {
		return ""
	}
	return g
}

// linksItsServer reports whether the tree at repo's HEAD builds its server
// from its own objects by CMake: it has sql/CMakeLists.txt.
func linksItsServer(repo *git.Repository) bool {
	head, err := repo.Head()
	if err != nil {
		return false
	}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		return false
	}
	tree, err := c.Tree()
	if err != nil {
		return false
	}
	_, err = tree.File("sql/CMakeLists.txt")
	return err == nil
}

// layoutsAsBegun keeps the build's own layout for a stored session begun
// before code layouts were the default (its identity has none) when
// --layouts is not given now, and says so.
func (s *Setup) layoutsAsBegun(begun store.Identity) {
	if !s.Build.LayoutsAuto || s.Build.Layouts == 1 || begun[store.KeyLayouts] != "" {
		return
	}
	s.Build.Layouts = 1
	fmt.Fprintf(s.Log, "the stored session began with each build's own code layout: it goes on so (%s run or K measures builds in other layouts in a new session)\n", usage.Flag("layouts"))
}
