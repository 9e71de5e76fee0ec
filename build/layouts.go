package build

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/perfbisect/perfbisect/serverctl"
)

// ErrNoLLD is returned when Builder.Layouts asks for code layouts and LLVM's
// linker is not installed: a machine's problem.
var ErrNoLLD = errors.New("code layouts need LLVM's linker, ld.lld, which is not installed (Debian: apt-get install lld)")

// layoutsDir is where an install entry keeps its server linked again in other
// code layouts: layoutsDir/<seed>/<the server's path in the tree>.
const layoutsDir = ".perfbisect-layouts"

// Layouts returns the server binaries of the install entry prefix linked in
// other code layouts (Builder.Layouts), by seed 1, 2, ...; nil when it has
// none.
func Layouts(prefix string) []string {
	ents, err := os.ReadDir(filepath.Join(prefix, layoutsDir))
	if err != nil {
		return nil
	}
	var seeds []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && n > 0 {
			seeds = append(seeds, n)
		}
	}
	sort.Ints(seeds)
	var out []string
	for _, n := range seeds {
		for _, p := range serverctl.ServerPaths {
			bin := filepath.Join(prefix, layoutsDir, strconv.Itoa(n), p)
			if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
				out = append(out, bin)
				break
			}
		}
	}
	return out
}

// LayoutPerRun as Builder.Layouts keeps each build's link inputs in its
// install entry, so that every run is measured in a code layout of its own
// (LinkLayout): --layouts run.
const LayoutPerRun = -1

// hasLayouts reports whether prefix holds what k asks for: at least k
// layouts (always for k below 2: one layout is the build's own), or with
// LayoutPerRun the link inputs.
func hasLayouts(prefix string, k int) bool {
	if k == LayoutPerRun {
		return HasLinkKit(prefix)
	}
	return k < 2 || len(Layouts(prefix)) >= k
}

// layoutsText names what Builder.Layouts k keeps in an entry, for messages.
func layoutsText(k int) string {
	if k == LayoutPerRun {
		return "its server's link inputs (a code layout per run)"
	}
	return fmt.Sprintf("%d code layouts", k)
}

// relink links the server of job j again from the objects of its build
// directory in b.Layouts code layouts, into the install entry: the build's own
// link command (CMake's link.txt of the mariadbd or mysqld target) with LLVM's
// linker and its code sections (.text*) in an order shuffled by seed 1, 2,
// ... (ld.lld --shuffle-sections): the same code, placed otherwise. Nothing
// is compiled. With LayoutPerRun it keeps the link's inputs instead
// (saveKit), for LinkLayout. Errors: ErrNoLLD; a build without such a link
// command (a --build-cmd recipe, a tree that is not a server's) says so.
func (b *Builder) relink(ctx context.Context, j *job) error {
	if b.Layouts < 2 && b.Layouts != LayoutPerRun {
		return nil
	}
	if _, err := exec.LookPath("ld.lld"); err != nil {
		return ErrNoLLD
	}
	l, err := b.serverLink(j)
	if err != nil {
		return err
	}
	if b.Layouts == LayoutPerRun {
		return b.saveKit(ctx, j, l)
	}
	dir := filepath.Join(j.prefix, layoutsDir)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for seed := 1; seed <= b.Layouts; seed++ {
		out := filepath.Join(dir, strconv.Itoa(seed), l.server)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		cmd, err := relinkCommand(l.line, l.target, out, l.rpath, uint64(seed))
		if err != nil {
			return fmt.Errorf("--layouts %d: the link command in %s: %w", b.Layouts, l.dir, err)
		}
		b.logf("build %.10s: code layout %d of %d (%s linked again by lld, sections shuffled)", j.commit, seed, b.Layouts, l.target)
		fmt.Fprintf(j.logf, "# layout %d: (cd %s && %s)\n", seed, l.dir, cmd)
		if err := run(ctx, j.logf, j.env, l.dir, "sh", "-c", cmd); err != nil {
			return relinkError(j, err)
		}
	}
	return nil
}

// relinkError is a relink's failure: the machine's, with the build's log.
func relinkError(j *job, err error) error {
	return &BuildError{Commit: j.commit, Step: "relink", Log: j.logPath, Err: err, Machine: true,
		Hint: "the build linked, but ld.lld could not link the same objects again; fix what the log says (or measure each build's own binary: perfbisect reset, then start with --layouts 1)"}
}

// link is how a build linked its server: the link command's directory, the
// CMake target, the command (one line of its link.txt), the server's path in
// the install and the installed server's run path options.
type link struct {
	dir, target, line, server, rpath string
}

// serverLink finds the link of job j's server: CMake's link.txt of the
// mariadbd or mysqld target in sql/ (or the top directory), and the server
// binary the install holds.
func (b *Builder) serverLink(j *job) (link, error) {
	var l link
	for _, d := range []string{"sql", "."} {
		for _, t := range []string{"mariadbd", "mysqld"} {
			if l.dir == "" && hasFile(filepath.Join(j.bdir, d, "CMakeFiles", t+".dir", "link.txt")) {
				l.dir, l.target = filepath.Join(j.bdir, d), t
			}
		}
	}
	if l.dir == "" {
		return l, fmt.Errorf("%s: the build directory %s has no link command of mariadbd or mysqld (sql/CMakeFiles/mariadbd.dir/link.txt): code layouts need a CMake build of a server tree", b.layoutsFlag(), j.bdir)
	}
	for _, p := range serverctl.ServerPaths {
		if fi, err := os.Lstat(filepath.Join(j.prefix, p)); err == nil && fi.Mode().IsRegular() {
			l.server = p
			break
		}
	}
	if l.server == "" {
		return l, fmt.Errorf("%s: no server binary in the install %s", b.layoutsFlag(), j.prefix)
	}
	raw, err := os.ReadFile(filepath.Join(l.dir, "CMakeFiles", l.target+".dir", "link.txt"))
	if err != nil {
		return l, err
	}
	if l.line, err = linkLine(string(raw), l.target); err != nil {
		return l, fmt.Errorf("%s: the link command in %s: %w", b.layoutsFlag(), l.dir, err)
	}
	// The installed server's run path, not the build tree's: a layout must
	// load the libraries the install does, wherever it lies in the entry.
	l.rpath, err = installedRunPath(filepath.Join(j.prefix, l.server))
	return l, err
}

// layoutsFlag names this builder's code layouts setting, for messages.
func (b *Builder) layoutsFlag() string {
	if b.Layouts == LayoutPerRun {
		return "code layouts (--layouts run, a server tree's default)"
	}
	return fmt.Sprintf("code layouts (--layouts %d)", b.Layouts)
}

// relinkCommand returns the command of CMake's link.txt text that links
// target (link.txt may hold several, one a line; only the link runs again:
// the others would work on the build's own binary), writing out instead of
// the target (-o mysqld, -o ../runtime_output_directory/mysqld), with the
// run path options rpath instead of the build tree's, by LLVM's linker with
// the code sections shuffled by seed and without the debug sections (they
// are not loaded, so the layout is the same; the symbols stay for perf, and
// a build-id, by which perf finds a layout deleted after its run).
func relinkCommand(linkTxt, target, out, rpath string, seed uint64) (string, error) {
	line, err := linkLine(linkTxt, target)
	if err != nil {
		return "", err
	}
	line = rpathRE.ReplaceAllString(line, "")
	return outputRE(target).ReplaceAllLiteralString(line, " -o "+shellQuote(out)+" ") + rpath +
		fmt.Sprintf(" -fuse-ld=lld '-Wl,--shuffle-sections=.text*=%d' -Wl,--strip-debug -Wl,--build-id", seed), nil
}

// linkLine returns the command of CMake's link.txt text that links target
// (link.txt may hold several, one a line).
func linkLine(linkTxt, target string) (string, error) {
	re := outputRE(target)
	line := ""
	for _, l := range strings.Split(strings.TrimSpace(linkTxt), "\n") {
		if re.MatchString(l) {
			line = l
		}
	}
	if line == "" {
		return "", fmt.Errorf("no command writes '-o %s'", target)
	}
	return line, nil
}

// outputRE matches a link command's output option for target (-o mysqld,
// -o ../runtime_output_directory/mysqld).
func outputRE(target string) *regexp.Regexp {
	return regexp.MustCompile(`(\s-o\s+)(\S*/)?` + regexp.QuoteMeta(target) + `(\s|$)`)
}

// rpathRE matches a run path option of a link command (not -rpath-link).
var rpathRE = regexp.MustCompile(`\s-Wl,-rpath,\S+`)

// installedRunPath returns the link options that give a binary the run path
// (DT_RUNPATH, else DT_RPATH) of the installed binary bin, with $ORIGIN made
// the absolute directory bin is in; "" when it has none.
func installedRunPath(bin string) (string, error) {
	f, err := elf.Open(bin)
	if err != nil {
		return "", fmt.Errorf("--layouts: read the installed server %s: %w", bin, err)
	}
	defer f.Close()
	dtags := "--enable-new-dtags"
	paths, _ := f.DynString(elf.DT_RUNPATH)
	if len(paths) == 0 {
		dtags = "--disable-new-dtags"
		paths, _ = f.DynString(elf.DT_RPATH)
	}
	if len(paths) == 0 {
		return "", nil
	}
	origin := filepath.Dir(bin)
	p := strings.NewReplacer("${ORIGIN}", origin, "$ORIGIN", origin).Replace(strings.Join(paths, ":"))
	return " " + shellQuote("-Wl,"+dtags+",-rpath,"+p), nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
