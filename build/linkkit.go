package build

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	shellwords "github.com/mattn/go-shellwords"
)

// kitDir is where an install entry keeps its server's link inputs
// (Builder.Layouts LayoutPerRun): the objects and archives of the build
// directory that the server's link command reads, at their paths in the
// build directory, their debug sections left out, and kitFile.
const kitDir = ".perfbisect-link"

// kitFile describes the kit: a linkKit in JSON.
const kitFile = "kit.json"

// linkKit is how to link an entry's server from its kit: the link command
// (one line of CMake's link.txt, the build directory's absolute path made
// the kit's), the directory it runs in relative to the kit, the CMake target
// and the server's path in the install.
type linkKit struct {
	Dir     string `json:"dir"`
	Command string `json:"command"`
	Target  string `json:"target"`
	Server  string `json:"server"`
}

// HasLinkKit reports whether the install entry prefix keeps its server's
// link inputs (LinkLayout can link it).
func HasLinkKit(prefix string) bool {
	return hasFile(filepath.Join(prefix, kitDir, kitFile))
}

// saveKit copies the inputs of job j's server link l into the entry's kit:
// every word of the command that names a regular file inside the build
// directory (but the output), and every path into the build directory inside
// an option (-Wl,--version-script=...), through objcopy --strip-debug (the
// debug sections are never loaded: the code and its layout are the same;
// a file objcopy does not take is copied as it is). Then it links one layout
// from the kit, so a kit that cannot link fails the build here, as the
// machine's problem, not a run later.
func (b *Builder) saveKit(ctx context.Context, j *job, l link) error {
	kit := filepath.Join(j.prefix, kitDir)
	if err := os.RemoveAll(kit); err != nil {
		return err
	}
	words, err := shellwords.Parse(l.line)
	if err != nil || len(words) < 2 {
		return fmt.Errorf("--layouts run: the link command in %s: %q is not a command line (%v)", l.dir, l.line, err)
	}
	inputs := map[string]bool{}
	for i, w := range words[1:] {
		if words[i] == "-o" { // words[i] precedes words[1:][i]
			continue
		}
		p := w
		if !filepath.IsAbs(p) {
			p = filepath.Join(l.dir, p)
		}
		inputs[p] = true
	}
	for _, p := range regexp.MustCompile(regexp.QuoteMeta(j.bdir)+`/[^\s,=:;'"]+`).FindAllString(l.line, -1) {
		inputs[p] = true
	}
	var size int64
	for p := range inputs {
		rel, err := filepath.Rel(j.bdir, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		dst := filepath.Join(kit, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if exec.Command("objcopy", "--strip-debug", p, dst).Run() != nil {
			if err := copyFile(p, dst); err != nil {
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
	k := linkKit{Dir: dir, Command: strings.ReplaceAll(l.line, j.bdir, kit), Target: l.target, Server: l.server}
	raw, err := json.Marshal(k)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(kit, kitFile), raw, 0o644); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(j.prefix, ".perfbisect-link-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(j.logf, "# link inputs kept in %s (%d MiB); a layout linked from them:\n", kit, size>>20)
	if _, err := linkLayout(ctx, j.prefix, 1, tmp, j.logf); err != nil {
		_ = os.RemoveAll(kit)
		return relinkError(j, err)
	}
	b.logf("build %.10s: link inputs of %s kept (%d MiB), a code layout linked from them for every run", j.commit, l.target, size>>20)
	return nil
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
	raw, err := os.ReadFile(filepath.Join(kit, kitFile))
	if err != nil {
		return "", fmt.Errorf("%s keeps no link inputs (%w): build it again with --layouts run", prefix, err)
	}
	var k linkKit
	if err := json.Unmarshal(raw, &k); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(kit, kitFile), err)
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
	cmd, err := relinkCommand(k.Command, k.Target, bin, rpath, seed)
	if err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(kit, kitFile), err)
	}
	fmt.Fprintf(log, "# layout %d: (cd %s && %s)\n", seed, at, cmd)
	if err := run(ctx, log, os.Environ(), at, "sh", "-c", cmd); err != nil {
		return "", fmt.Errorf("link a code layout of %s: %w", prefix, err)
	}
	return bin, nil
}

// copyFile copies the regular file src to dst (created, mode 0644 but for
// the executable bits of src).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644|fi.Mode()&0o111)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
