package build

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	shellwords "github.com/mattn/go-shellwords"

	"github.com/perfbisect/perfbisect/internal/excerpt"
	"github.com/perfbisect/perfbisect/serverctl"
)

// kitDir is where an install entry keeps its server's link inputs
// (Builder.Layouts LayoutPerRun): the objects and archives of the build
// directory that the server's link command reads, at their paths in the
// build directory, their debug sections left out, and kitFile.
const kitDir = ".perfbisect-link"

// kitFile describes the kit: a linkKit in JSON.
const kitFile = "kit.json"

// linkKit is how to link an entry's server from its kit: the link command
// (one line of CMake's link.txt, the build directory's and source tree's
// absolute paths written kitRoot and kitRoot/.src), the directory it runs
// in relative to the kit, the CMake target, the server's path in the
// install, and the linker's version line (a toolchain changed since is said).
type linkKit struct {
	Dir     string `json:"dir"`
	Command string `json:"command"`
	Target  string `json:"target"`
	Server  string `json:"server"`
	LLD     string `json:"lld"`
}

// kitRoot stands for the kit's directory in linkKit.Command: the kit moves
// with its entry (another state directory, the shared cache).
const kitRoot = "@PERFBISECT_KIT@"

// HasLinkKit reports whether the install entry prefix keeps its server's
// link inputs (LinkLayout can link it).
func HasLinkKit(prefix string) bool {
	return hasFile(filepath.Join(prefix, kitDir, kitFile))
}

// saveKit copies the inputs of job j's server link l into the entry's kit
// (kitInputs), through objcopy --strip-debug (the debug sections are never
// loaded: the code and its layout are the same; a file objcopy does not take
// is copied as it is). Then it links one layout from the kit, so that a kit
// that cannot link fails the build here, as the machine's problem, naming
// what the linker missed, not a run later.
func (b *Builder) saveKit(ctx context.Context, j *job, l link) error {
	kit := filepath.Join(j.prefix, kitDir)
	if err := os.RemoveAll(kit); err != nil {
		return err
	}
	roots := []kitPlace{{j.bdir, ""}, {j.src, ".src"}}
	inputs, err := kitInputs(l, roots)
	if err != nil {
		return err
	}
	var size int64
	for _, in := range inputs {
		dst := filepath.Join(kit, in.rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if exec.CommandContext(ctx, "objcopy", "--strip-debug", in.path, dst).Run() != nil {
			_ = os.Remove(dst) // what objcopy left
			if err := serverctl.CopyFile(in.path, dst, 0o644); err != nil {
				return err
			}
		}
		if fi, err := os.Stat(dst); err == nil {
			size += fi.Size()
		}
	}
	dir, err := filepath.Rel(j.bdir, l.dir)
	if err != nil {
		return err
	}
	k := linkKit{Dir: dir, Command: rootsToKit(l.line, roots), Target: l.target, Server: l.server, LLD: lldVersion()}
	raw, err := json.Marshal(k)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(kit, kitFile), raw, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(j.logf, "# link inputs kept in %s (%d files, %d MiB); a layout linked from them:\n", kit, len(inputs), size>>20)
	if err := checkKit(ctx, j.prefix, j.logf); err != nil {
		_ = os.RemoveAll(kit)
		return &BuildError{Commit: j.commit, Step: "relink", Log: j.logPath, Err: err, Machine: true,
			Hint: "the build linked, but its server could not be linked again from the inputs perfbisect kept (the log names what the linker missed); fix what the log says (or measure each build's own binary: perfbisect reset, then start with --layouts 1)"}
	}
	b.logf("build %.10s: link inputs of %s kept (%d MiB), a code layout linked from them for every run", j.commit, l.target, size>>20)
	return nil
}

// layoutsFromKit links b.Layouts code layouts of the install entry prefix
// (seeds 1..K, as relink does) from the link inputs it keeps, so that a
// cached entry of --layouts run serves --layouts K without a build: into a
// temporary directory of the entry, renamed into place when all linked.
func (b *Builder) layoutsFromKit(ctx context.Context, commit, prefix string) error {
	k, err := readKit(prefix)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(prefix, ".perfbisect-layouts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for seed := 1; seed <= b.Layouts; seed++ {
		dir := filepath.Join(tmp, strconv.Itoa(seed), filepath.Dir(k.Server))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if _, err := linkLayout(ctx, prefix, uint64(seed), dir, io.Discard); err != nil {
			return err
		}
		b.logf("build %.10s: code layout %d of %d linked from its kept link inputs", commit, seed, b.Layouts)
	}
	dir := filepath.Join(prefix, layoutsDir)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// readKit reads the kit of the install entry prefix.
func readKit(prefix string) (linkKit, error) {
	var k linkKit
	raw, err := os.ReadFile(filepath.Join(prefix, kitDir, kitFile))
	if err != nil {
		return k, fmt.Errorf("%s keeps no link inputs for a code layout per run (%w)", prefix, err)
	}
	if err := json.Unmarshal(raw, &k); err != nil {
		return k, fmt.Errorf("%s: %w", filepath.Join(prefix, kitDir, kitFile), err)
	}
	return k, nil
}

// checkKit links one layout of the entry prefix from its kit into a
// temporary directory and removes it: whether the kit links here.
func checkKit(ctx context.Context, prefix string, log io.Writer) error {
	tmp, err := os.MkdirTemp(prefix, ".perfbisect-link-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	_, err = linkLayout(ctx, prefix, 1, tmp, log)
	return err
}

// kitPlace is a directory whose files a link may read and where the kit
// keeps them (relative to the kit).
type kitPlace struct{ dir, in string }

// kitInput is one file of a link's inputs and its path in the kit.
type kitInput struct{ path, rel string }

// kitInputs lists the files link l reads that lie in one of roots (the
// build directory, the source tree), each once: every word of its command
// but the compiler and the output, and the paths inside options
// (-Wl,--version-script=x, split at , and =) resolved against the link's
// directory; the words of a response file (@file) and the file itself; and
// for each -lNAME the lib NAME .a or .so in a -L directory among them.
func kitInputs(l link, roots []kitPlace) ([]kitInput, error) {
	words, err := shellwords.Parse(l.line)
	if err != nil || len(words) < 2 {
		return nil, fmt.Errorf("code layouts: the link command in %s: %q is not a command line (%v)", l.dir, l.line, err)
	}
	var out []kitInput
	seen := map[string]bool{}
	add := func(p string) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(l.dir, p)
		}
		p = filepath.Clean(p)
		if seen[p] {
			return
		}
		seen[p] = true
		for _, r := range roots {
			rel, err := filepath.Rel(r.dir, p)
			if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
				continue
			}
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				out = append(out, kitInput{path: p, rel: filepath.Join(r.in, rel)})
			}
			return
		}
	}
	var libDirs, libs []string
	var walk func(words []string, depth int)
	walk = func(words []string, depth int) {
		for i, w := range words {
			switch {
			case i > 0 && words[i-1] == "-o":
				continue
			case strings.HasPrefix(w, "@") && depth < 4:
				p := w[1:]
				if !filepath.IsAbs(p) {
					p = filepath.Join(l.dir, p)
				}
				add(p)
				if raw, err := os.ReadFile(p); err == nil {
					if more, err := shellwords.Parse(strings.ReplaceAll(string(raw), "\n", " ")); err == nil {
						walk(more, depth+1)
					}
				}
			case strings.HasPrefix(w, "-L") && len(w) > 2:
				libDirs = append(libDirs, w[2:])
			case strings.HasPrefix(w, "-l") && len(w) > 2:
				libs = append(libs, w[2:])
			default:
				add(w)
				for _, part := range strings.FieldsFunc(w, func(r rune) bool { return r == ',' || r == '=' }) {
					if part != w {
						add(part)
					}
				}
			}
		}
	}
	walk(words[1:], 0)
	for _, d := range libDirs {
		for _, name := range libs {
			add(filepath.Join(d, "lib"+name+".a"))
			add(filepath.Join(d, "lib"+name+".so"))
		}
	}
	return out, nil
}

// rootsToKit writes each root's path in line (followed by / or ending a
// word) as kitRoot and the root's place in the kit.
func rootsToKit(line string, roots []kitPlace) string {
	for _, r := range roots {
		to := kitRoot
		if r.in != "" {
			to += "/" + r.in
		}
		re := regexp.MustCompile(regexp.QuoteMeta(r.dir) + `(/|$|[\s,=:;'"])`)
		line = re.ReplaceAllString(line, to+"$1")
	}
	return line
}

// lldVersion is ld.lld's version line ("" when it does not run).
func lldVersion() string {
	out, err := exec.Command("ld.lld", "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

// LinkLayout links the server of the install entry prefix in the code layout
// of seed (ld.lld --shuffle-sections) from the link inputs the entry keeps
// (HasLinkKit), into a new directory under dir, and returns the binary; the
// caller removes its directory. The link's output goes to log. Errors:
// ErrNoLLD; an entry without a kit; the link's failure.
func LinkLayout(ctx context.Context, prefix string, seed uint64, dir string, log io.Writer) (string, error) {
	if _, err := exec.LookPath("ld.lld"); err != nil {
		return "", ErrNoLLD
	}
	out, err := os.MkdirTemp(dir, "layout-")
	if err != nil {
		return "", err
	}
	bin, err := linkLayout(ctx, prefix, seed, out, log)
	if err != nil {
		_ = os.RemoveAll(out)
	}
	return bin, err
}

// linkLayout links the entry's server from its kit in layout seed into dir.
func linkLayout(ctx context.Context, prefix string, seed uint64, dir string, log io.Writer) (string, error) {
	kit := filepath.Join(prefix, kitDir)
	k, err := readKit(prefix)
	if err != nil {
		return "", err
	}
	rpath, err := installedRunPath(filepath.Join(prefix, k.Server))
	if err != nil {
		return "", err
	}
	at := filepath.Join(kit, k.Dir)
	if err := os.MkdirAll(at, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, filepath.Base(k.Server))
	cmd, err := relinkCommand(strings.ReplaceAll(k.Command, kitRoot, kit), k.Target, bin, rpath, seed)
	if err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(kit, kitFile), err)
	}
	fmt.Fprintf(log, "# layout %d: (cd %s && %s)\n", seed, at, cmd)
	var out bytes.Buffer
	if err := run(ctx, io.MultiWriter(log, &out), os.Environ(), at, "sh", "-c", cmd); err != nil {
		missed := excerpt.Lines(out.String(), func(l string) bool {
			return strings.Contains(l, "error:") && !strings.Contains(l, "ld returned")
		}, 5, 3)
		if v := lldVersion(); k.LLD != "" && v != k.LLD {
			missed = append(missed, fmt.Sprintf("ld.lld is %q here, the kit was checked with %q", v, k.LLD))
		}
		return "", fmt.Errorf("link a code layout (seed %d) of %s from its kept inputs: %w: %s", seed, prefix, err, strings.Join(missed, " | "))
	}
	// On the disk before the run: its pages are not written back in the window.
	if f, err := os.Open(bin); err == nil {
		_ = f.Sync()
		f.Close()
	}
	return bin, nil
}
