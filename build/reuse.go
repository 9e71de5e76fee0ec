package build

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/google/renameio/v2"
)

// A build directory builds the next revision incrementally only when that is
// known to give what a clean build of the revision gives; otherwise the
// revision is built in a fresh build directory (ccache, when installed, keeps
// that cheap: every translation unit that did not change is a cache hit).
//
// Incremental builds are wrong in ways that still compile. MariaDB's CMake,
// without bison, copies a release's pre-generated sql/sql_yacc.cc into the
// build directory only when no copy is there yet (COPY_BISON_OUTPUT), so
// 10.0.26 built after 10.0.22 in one build directory compiled 10.0.22's
// parser. A CMake cache keeps values that a revision's CMakeLists.txt would
// set otherwise; objects of a removed source stay around; a build cut short
// leaves targets whose timestamps say they are current. The rules below
// reuse a build directory only for what make's own dependency tracking
// covers: edits of files that the compiler reads from the source tree.

// builtFile, in a build directory, records what it last built (builtState).
const builtFile = ".perfbisect-built.json"

// MaxIncrementalFiles is the most changed paths between the revision a build
// directory last built and the next one that are built incrementally; a
// larger diff (a merge, a release import) is built in a fresh build
// directory.
const MaxIncrementalFiles = 200

// builtState is what a build directory last built.
type builtState struct {
	Commit string `json:"commit"`
	// Recipe is the configure command line (or the build and install
	// commands) it was built with.
	Recipe string `json:"recipe"`
	// Files is the checkout it built: path → blob hash and mode (the
	// checkout's manifest).
	Files map[string]string `json:"files"`
	// Finished is false from the start of a build until it succeeded: a
	// failed or interrupted build leaves it false.
	Finished bool `json:"finished"`
}

func readBuilt(bdir string) *builtState {
	b, err := os.ReadFile(filepath.Join(bdir, builtFile))
	if err != nil {
		return nil
	}
	var s builtState
	if json.Unmarshal(b, &s) != nil || s.Files == nil {
		return nil
	}
	return &s
}

func writeBuilt(bdir string, s builtState) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return renameio.WriteFile(filepath.Join(bdir, builtFile), b, 0o644)
}

// parserExt are the sources of generated code (bison, flex): a change of one
// is built fresh, whatever the build directory holds.
var parserExt = map[string]bool{".y": true, ".yy": true, ".l": true, ".ll": true}

// unitExt are the sources of translation units: one added without a
// CMakeLists.txt change may still be compiled (file(GLOB) at configure time).
var unitExt = map[string]bool{".c": true, ".cc": true, ".cpp": true, ".cxx": true, ".c++": true, ".C": true,
	".s": true, ".S": true, ".asm": true}

// headerExt are included files: one added may stand before another of the
// same name on the include path, which the compiler's dependency files of
// the last build do not know.
var headerExt = map[string]bool{".h": true, ".hh": true, ".hpp": true, ".hxx": true, ".h++": true, ".H": true,
	".ic": true, ".i": true, ".inc": true, ".inl": true, ".ipp": true, ".tcc": true, ".def": true}

// isCMakeInput reports whether the checkout's path name (with manifest key
// key) is read by CMake at configure time: CMakeLists.txt, *.cmake,
// *.cmake.in, VERSION, MYSQL_VERSION, or a submodule.
func isCMakeInput(name, key string) bool {
	base := path.Base(name)
	return base == "CMakeLists.txt" || strings.HasSuffix(base, ".cmake") || strings.HasSuffix(base, ".cmake.in") ||
		name == "VERSION" || name == "MYSQL_VERSION" || strings.HasPrefix(key, "submodule ")
}

// reuseVerdict says whether the build directory bdir, which last built prev
// (nil: no record), may build the checkout in src next with recipe
// incrementally: "" when it may, otherwise why not, in words for the build
// log.
func reuseVerdict(bdir, src string, prev *builtState, recipe string, next map[string]string) string {
	switch {
	case prev == nil:
		return "no record of what the build directory last built"
	case !prev.Finished:
		return fmt.Sprintf("its last build (%.10s) did not finish", prev.Commit)
	case prev.Recipe != recipe:
		return "it was configured with other arguments"
	}
	var changed []string
	for name, key := range next {
		if prev.Files[name] != key {
			changed = append(changed, name)
		}
	}
	for name := range prev.Files {
		if _, ok := next[name]; !ok {
			changed = append(changed, name)
		}
	}
	sort.Strings(changed)
	if len(changed) > MaxIncrementalFiles {
		return fmt.Sprintf("%d files differ from %.10s (more than %d)", len(changed), prev.Commit, MaxIncrementalFiles)
	}
	for _, name := range changed {
		key, ok := next[name]
		if !ok {
			key = prev.Files[name]
		}
		switch {
		case isCMakeInput(name, key):
			return fmt.Sprintf("CMake input %s changed", name)
		case !ok:
			return fmt.Sprintf("%s was removed (its objects and anything generated from it would stay)", name)
		case parserExt[path.Ext(name)]:
			return fmt.Sprintf("%s changed (a parser or lexer source: generated code)", name)
		case prev.Files[name] == "" && unitExt[path.Ext(name)]:
			return fmt.Sprintf("%s was added (a source file that a glob may pick up only at configure time)", name)
		case prev.Files[name] == "" && headerExt[path.Ext(name)]:
			return fmt.Sprintf("%s was added (a header that may shadow another of the same name: make's dependencies name the old one)", name)
		}
		// A file of the same path in the build directory is a copy or a
		// product of the source file that the build may not refresh (a
		// configure-time copy such as COPY_BISON_OUTPUT's, a configure_file
		// of x.in) — unless it is the checkout's file itself, reached through
		// a symbolic link (a build directory that links to the source's
		// mysql-test/, say).
		for _, cand := range []string{name, strings.TrimSuffix(name, ".in")} {
			p := filepath.Join(bdir, filepath.FromSlash(cand))
			if _, err := os.Lstat(p); err != nil {
				continue
			}
			if real, err := filepath.EvalSymlinks(p); err == nil && within(real, src) {
				continue
			}
			return fmt.Sprintf("%s changed and the build directory holds %s (a copy or a generated file, which the build may not refresh)", name, cand)
		}
	}
	return ""
}

// freshBuildDir empties bdir (keeping the directory) for a clean build.
func freshBuildDir(bdir string) error {
	ents, err := os.ReadDir(bdir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(bdir, e.Name())); err != nil {
			return fmt.Errorf("empty the build directory %s: %w", bdir, err)
		}
	}
	return nil
}

// emptyDir reports whether dir has no entries (or cannot be read).
func emptyDir(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err != nil || len(ents) == 0
}

// within reports whether path p is dir or below it (both as the filesystem
// resolves them).
func within(p, dir string) bool {
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
