package build

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/perfbisect/perfbisect/internal/excerpt"
	"github.com/perfbisect/perfbisect/internal/reap"
	"github.com/perfbisect/perfbisect/internal/syncfs"
)

// Binaries is a directory of the vendors' binary tarballs (--binaries DIR),
// named as MariaDB, MySQL and Percona publish them:
//
//	mariadb-10.0.22-linux-x86_64.tar.gz
//	mariadb-10.6.12-linux-systemd-x86_64.tar.gz
//	mysql-8.0.36-linux-glibc2.28-x86_64.tar.xz
//	Percona-Server-5.7.44-48-Linux.x86_64.glibc2.17.tar.gz
//
// A release whose tarball is there is measured from it instead of a build.
type Binaries struct {
	Dir string
	// Tarballs are the ones for this machine's architecture, sorted by
	// flavor, then version as spelled.
	Tarballs []Tarball
	// Elsewhere names the tarballs for another architecture (not used).
	Elsewhere []string
	// Unread names the archives in no vendor's form (not used: a renamed
	// download, a source tarball).
	Unread []string
}

// Tarball is one vendor's binary tarball of a release.
type Tarball struct {
	Path    string // absolute
	Flavor  string // MariaDB, MySQL or Percona
	Version string // as the name spells it: 10.0.22; Percona's with its release, 5.7.44-48
	Arch    string // x86_64, aarch64, ...
}

// Name is the tarball's file name.
func (t Tarball) Name() string { return filepath.Base(t.Path) }

// tarballName reads a vendor's tarball name: flavor, version and
// architecture. MariaDB's and MySQL's put "linux" (and a glibc or systemd
// variant) before the architecture, Percona's "Linux." before it.
var tarballName = []struct {
	flavor string
	re     *regexp.Regexp
}{
	{"MariaDB", regexp.MustCompile(`^mariadb-(\d+\.\d+\.\d+)-linux-(?:[A-Za-z0-9_.]+-)*?(x86_64|i686|aarch64|arm64|ppc64le|s390x)(?:-[a-z]+)?\.(?:tar\.gz|tgz|tar\.xz|tar\.zst|tar\.bz2)$`)},
	{"MySQL", regexp.MustCompile(`^mysql-(\d+\.\d+\.\d+)-linux-(?:[A-Za-z0-9_.]+-)*?(x86_64|i686|aarch64|arm64|ppc64le|s390x)(?:-[a-z]+)?\.(?:tar\.gz|tgz|tar\.xz|tar\.zst|tar\.bz2)$`)},
	{"Percona", regexp.MustCompile(`^Percona-Server-(\d+\.\d+\.\d+-\d+(?:\.\d+)?)-Linux\.(x86_64|i686|aarch64|arm64)(?:\.[A-Za-z0-9_.-]+?)?\.(?:tar\.gz|tgz|tar\.xz|tar\.zst|tar\.bz2)$`)},
}

// ParseTarballName reads a vendor's tarball file name; ok is false for a
// name in no vendor's form.
func ParseTarballName(name string) (t Tarball, ok bool) {
	for _, n := range tarballName {
		if m := n.re.FindStringSubmatch(name); m != nil {
			arch := m[2]
			if arch == "arm64" {
				arch = "aarch64"
			}
			return Tarball{Path: name, Flavor: n.flavor, Version: m[1], Arch: arch}, true
		}
	}
	return Tarball{}, false
}

// tarballExts are the archive endings GNU tar unpacks here.
var tarballExts = []string{".tar.gz", ".tgz", ".tar.xz", ".tar.zst", ".tar.bz2"}

// machineArch is this machine's architecture as the vendors' names spell it.
func machineArch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	case "386":
		return "i686"
	}
	return runtime.GOARCH
}

// OpenBinaries lists the vendors' tarballs in dir. Errors: dir cannot be
// read, or holds no tarball for this machine (the message says the names
// it looks for, and the ones for another architecture it found).
func OpenBinaries(dir string) (*Binaries, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, err
	}
	b := &Binaries{Dir: abs}
	arch := machineArch()
	for _, e := range entries {
		t, ok := ParseTarballName(e.Name())
		if e.IsDir() {
			continue
		}
		if !ok {
			for _, ext := range append(tarballExts, ".zip") {
				if strings.HasSuffix(e.Name(), ext) {
					b.Unread = append(b.Unread, e.Name())
					break
				}
			}
			continue
		}
		t.Path = filepath.Join(abs, e.Name())
		if t.Arch != arch {
			b.Elsewhere = append(b.Elsewhere, e.Name())
			continue
		}
		b.Tarballs = append(b.Tarballs, t)
	}
	sort.Slice(b.Tarballs, func(i, j int) bool {
		x, y := b.Tarballs[i], b.Tarballs[j]
		if x.Flavor != y.Flavor {
			return x.Flavor < y.Flavor
		}
		return x.Version < y.Version
	})
	if len(b.Tarballs) == 0 {
		msg := fmt.Sprintf("no binary tarball for %s in %s (names as the vendors publish them: mariadb-10.0.22-linux-x86_64.tar.gz, mysql-8.0.36-linux-glibc2.28-x86_64.tar.xz, Percona-Server-5.7.44-48-Linux.x86_64.glibc2.17.tar.gz)", arch, abs)
		if len(b.Elsewhere) > 0 {
			msg += "; for another machine: " + strings.Join(b.Elsewhere, ", ")
		}
		return nil, errors.New(msg)
	}
	return b, nil
}

// For returns the tarball of flavor's release spelled version (10.0.22; a
// Percona release's 5.7.44-48, or 5.7.44 when only one tarball of it has a
// release suffix), or nil.
func (b *Binaries) For(flavor, version string) *Tarball {
	var found []Tarball
	for _, t := range b.Tarballs {
		if t.Flavor != flavor {
			continue
		}
		if t.Version == version {
			return &t
		}
		if flavor == "Percona" && strings.HasPrefix(t.Version, version+"-") {
			found = append(found, t)
		}
	}
	if len(found) == 1 {
		return &found[0]
	}
	return nil
}

// unpackedSuffix names the marker written last beside an unpacked
// tarball's directory (outside it, where no member of the tarball can be).
const unpackedSuffix = ".unpacked"

// Key names the tarball's content as this machine sees it, and its
// unpacked directory: its name, size and modification time (a tarball
// replaced under the same name has another key, and is unpacked again).
// Errors: the tarball cannot be read.
func (t Tarball) Key() (string, error) {
	fi, err := os.Stat(t.Path)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", t.Name(), fi.Size(), fi.ModTime().UnixNano()))
	base := t.Name()
	for _, ext := range tarballExts {
		base = strings.TrimSuffix(base, ext)
	}
	return base + "-" + hex.EncodeToString(h[:])[:10], nil
}

// Unpacked reports whether the tarball is unpacked under stateDir already
// (Unpack would return at once).
func (t Tarball) Unpacked(stateDir string) bool {
	key, err := t.Key()
	if err != nil {
		return false
	}
	fi, err := os.Lstat(filepath.Join(stateDir, "binaries", key+unpackedSuffix))
	return err == nil && fi.Mode().IsRegular()
}

// ErrBadTarball marks a tarball that does not unpack (corrupt, truncated,
// not a tar archive): the user's file, not a revision's fault.
var ErrBadTarball = errors.New("the tarball does not unpack")

// Unpack unpacks the tarball once under stateDir/binaries/ (GNU tar: it
// reads gzip, xz, zstd and bzip2 and refuses members that climb out of the
// directory) and returns the server's base directory: the tarball's one
// top directory, as the vendors make them, or the directory itself. An
// interrupted unpacking is done again. Errors: ErrBadTarball (wrapped,
// with tar's words), the disk's and ctx's as they are.
func (t Tarball) Unpack(ctx context.Context, stateDir string) (basedir string, took time.Duration, err error) {
	start := time.Now()
	key, err := t.Key()
	if err != nil {
		return "", 0, err
	}
	dir := filepath.Join(stateDir, "binaries", key)
	marker := dir + unpackedSuffix
	if t.Unpacked(stateDir) {
		now := time.Now()
		_ = os.Chtimes(marker, now, now) // a regular file of ours: last use
		return topDir(dir), 0, nil
	}
	_ = os.Remove(marker)
	_ = os.RemoveAll(dir)
	tmp := dir + ".unpacking"
	_ = os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", 0, err
	}
	var out strings.Builder
	cmd := exec.CommandContext(ctx, "tar", "-xf", t.Path, "-C", tmp, "--no-same-owner", "--no-same-permissions", "--delay-directory-restore")
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = reap.Mark(nil, stateDir) // a later perfbisect ends it if this one is killed
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		_ = os.RemoveAll(tmp)
		if ctx.Err() != nil {
			return "", 0, ctx.Err()
		}
		if _, lookErr := exec.LookPath("tar"); lookErr != nil {
			return "", 0, fmt.Errorf("unpacking %s: tar is not installed (the machine's: apt-get install tar xz-utils)", t.Name())
		}
		text := strings.Join(excerpt.Lines(out.String(), nil, 0, 3), "; ")
		if strings.Contains(text, "No space left") || strings.Contains(text, "Read-only file system") {
			return "", 0, fmt.Errorf("unpacking %s into %s: %s", t.Name(), stateDir, text)
		}
		return "", 0, fmt.Errorf("%s: %w: %s", t.Path, ErrBadTarball, text)
	}
	if err := syncfs.Dir(tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return "", 0, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		return "", 0, err
	}
	f, err := os.OpenFile(marker, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err == nil {
		_, err = fmt.Fprintln(f, t.Path)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", 0, err
	}
	return topDir(dir), time.Since(start), nil
}

// topDir is the one directory an unpacked tarball holds, as the vendors
// make them (mariadb-10.0.22-linux-x86_64/), or dir when it holds other
// entries or its one directory is part of an install tree itself (a
// tarball of bin/ alone).
func topDir(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || !entries[0].IsDir() {
		return dir
	}
	switch entries[0].Name() {
	case "bin", "sbin", "libexec", "lib", "lib64", "share", "scripts", "support-files", "include", "man", "docs", "mysql-test":
		return dir
	}
	return filepath.Join(dir, entries[0].Name())
}
