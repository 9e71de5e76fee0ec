package build

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseTarballName(t *testing.T) {
	cases := []struct {
		name                  string
		ok                    bool
		flavor, version, arch string
	}{
		{"mariadb-10.0.22-linux-x86_64.tar.gz", true, "MariaDB", "10.0.22", "x86_64"},
		{"mariadb-10.6.12-linux-systemd-x86_64.tar.gz", true, "MariaDB", "10.6.12", "x86_64"},
		{"mariadb-10.2.44-linux-glibc_214-x86_64.tar.gz", true, "MariaDB", "10.2.44", "x86_64"},
		{"mariadb-11.4.2-linux-systemd-aarch64.tar.gz", true, "MariaDB", "11.4.2", "aarch64"},
		{"mysql-8.0.36-linux-glibc2.28-x86_64.tar.xz", true, "MySQL", "8.0.36", "x86_64"},
		{"mysql-8.0.36-linux-glibc2.28-x86_64-minimal.tar.xz", true, "MySQL", "8.0.36", "x86_64"},
		{"mysql-5.7.44-linux-glibc2.12-x86_64.tar.gz", true, "MySQL", "5.7.44", "x86_64"},
		{"mysql-8.4.0-linux-glibc2.28-aarch64.tar.xz", true, "MySQL", "8.4.0", "aarch64"},
		{"Percona-Server-5.7.44-48-Linux.x86_64.glibc2.17.tar.gz", true, "Percona", "5.7.44-48", "x86_64"},
		{"Percona-Server-8.0.36-28-Linux.x86_64.glibc2.28-minimal.tar.gz", true, "Percona", "8.0.36-28", "x86_64"},
		{"mariadb-10.0.22.tar.gz", false, "", "", ""},           // the source tarball
		{"mysql-boost-8.0.36.tar.gz", false, "", "", ""},        // source with Boost
		{"mariadb-10.0.22-linux-x86_64.zip", false, "", "", ""}, // not a tarball
		{"mariadb-10.0.22-winx64.zip", false, "", "", ""},       // another system
		{"mariadb-10.0-linux-x86_64.tar.gz", false, "", "", ""}, // no patch number
		{"notes-mariadb-10.0.22-linux-x86_64.tar.gz", false, "", "", ""},
	}
	for _, c := range cases {
		tb, ok := ParseTarballName(c.name)
		if ok != c.ok || ok && (tb.Flavor != c.flavor || tb.Version != c.version || tb.Arch != c.arch) {
			t.Errorf("ParseTarballName(%q) = %+v, %v; want %s %s %s, %v", c.name, tb, ok, c.flavor, c.version, c.arch, c.ok)
		}
	}
}

// tarball packs files (path -> content; a path ending in / is a directory)
// into dir/name with GNU tar, as the vendors do.
func tarball(t *testing.T, dir, name string, files map[string]string) string {
	t.Helper()
	src := t.TempDir()
	for p, content := range files {
		full := filepath.Join(src, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, name)
	if out, err := exec.Command("tar", "-caf", path, "-C", src, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	return path
}

func TestOpenBinaries(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"mariadb-10.0.22-linux-x86_64.tar.gz", "mariadb-10.0.23-linux-systemd-x86_64.tar.gz",
		"mariadb-10.0.23-linux-aarch64.tar.gz", "Percona-Server-5.7.44-48-Linux.x86_64.glibc2.17.tar.gz", "README.txt", "mariadb-10.0.25-x86_64.tgz"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "mariadb-10.0.24-linux-x86_64.tar.gz"), 0o755); err != nil { // a directory: not a tarball
		t.Fatal(err)
	}
	b, err := OpenBinaries(dir)
	if machineArch() != "x86_64" {
		t.Skipf("the names above are x86_64's; this machine is %s", machineArch())
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Tarballs) != 3 || len(b.Elsewhere) != 1 || b.Elsewhere[0] != "mariadb-10.0.23-linux-aarch64.tar.gz" ||
		len(b.Unread) != 1 || b.Unread[0] != "mariadb-10.0.25-x86_64.tgz" {
		t.Fatalf("tarballs %+v, elsewhere %v, unread %v", b.Tarballs, b.Elsewhere, b.Unread)
	}
	if tb := b.For("MariaDB", "10.0.23"); tb == nil || tb.Name() != "mariadb-10.0.23-linux-systemd-x86_64.tar.gz" {
		t.Errorf("For(MariaDB, 10.0.23) = %+v", tb)
	}
	if tb := b.For("MySQL", "10.0.23"); tb != nil {
		t.Errorf("For(MySQL, 10.0.23) = %+v: another flavor's", tb)
	}
	if tb := b.For("MariaDB", "10.0.24"); tb != nil {
		t.Errorf("For(MariaDB, 10.0.24) = %+v: a directory", tb)
	}
	for _, v := range []string{"5.7.44-48", "5.7.44"} {
		if tb := b.For("Percona", v); tb == nil || tb.Version != "5.7.44-48" {
			t.Errorf("For(Percona, %s) = %+v", v, tb)
		}
	}

	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "mariadb-10.0.23-linux-aarch64.tar.gz"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBinaries(empty); err == nil || !strings.Contains(err.Error(), "no binary tarball for x86_64") || !strings.Contains(err.Error(), "aarch64") {
		t.Errorf("a directory of another machine's tarballs: %v", err)
	}
	if _, err := OpenBinaries(filepath.Join(empty, "missing")); err == nil {
		t.Error("a missing directory: no error")
	}
}

func TestUnpackTarball(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	path := tarball(t, dir, "mariadb-10.0.22-linux-x86_64.tar.gz", map[string]string{
		"mariadb-10.0.22-linux-x86_64/bin/mysqld":               "#!/bin/sh\n",
		"mariadb-10.0.22-linux-x86_64/scripts/mysql_install_db": "#!/bin/sh\n",
		"mariadb-10.0.22-linux-x86_64/share/english/errmsg.sys": "x",
	})
	tb, ok := ParseTarballName(filepath.Base(path))
	if !ok {
		t.Fatal("name not read")
	}
	tb.Path = path
	if tb.Unpacked(state) {
		t.Fatal("unpacked before Unpack")
	}
	base, took, err := tb.Unpack(context.Background(), state)
	if err != nil || took <= 0 || filepath.Base(base) != "mariadb-10.0.22-linux-x86_64" {
		t.Fatalf("Unpack = %s, %v, %v", base, took, err)
	}
	if _, err := os.Stat(filepath.Join(base, "bin", "mysqld")); err != nil || !tb.Unpacked(state) {
		t.Fatalf("unpacked tree: %v", err)
	}
	again, took, err := tb.Unpack(context.Background(), state)
	if err != nil || took != 0 || again != base {
		t.Errorf("second Unpack = %s, %v, %v: want the same directory at once", again, took, err)
	}

	// A truncated download: the user's file, said as such; nothing left.
	whole, _ := os.ReadFile(path)
	cut := filepath.Join(dir, "mariadb-10.0.23-linux-x86_64.tar.gz")
	if err := os.WriteFile(cut, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	bad := Tarball{Path: cut, Flavor: "MariaDB", Version: "10.0.23", Arch: "x86_64"}
	if _, _, err := bad.Unpack(context.Background(), state); !errors.Is(err, ErrBadTarball) || !strings.Contains(err.Error(), cut) {
		t.Errorf("a truncated tarball: %v, want ErrBadTarball naming it", err)
	}
	if left, _ := filepath.Glob(filepath.Join(state, "binaries", "mariadb-10.0.23*")); len(left) != 0 || bad.Unpacked(state) {
		t.Errorf("a failed unpacking left %v", left)
	}
	// Members that climb out of the directory are refused by tar.
	evil := filepath.Join(dir, "mariadb-10.0.24-linux-x86_64.tar.gz")
	if out, err := exec.Command("tar", "-czf", evil, "-C", dir, "--absolute-names", "--transform", "s,^,../../escape/,", filepath.Base(path)).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	ev := Tarball{Path: evil, Flavor: "MariaDB", Version: "10.0.24", Arch: "x86_64"}
	_, _, _ = ev.Unpack(context.Background(), state)
	if _, err := os.Stat(filepath.Join(state, "escape")); err == nil {
		t.Error("a member named ../../escape was written outside the unpacking directory")
	}
}

// TestUnpackWritesNothingThroughTheTarball: the marker lives beside the
// unpacked directory, so a member that is a symlink to a user's file (as
// the marker's old name, inside) is never written through; a tarball of
// an install tree without a top directory is its own base directory.
func TestUnpackWritesNothingThroughTheTarball(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	victim := filepath.Join(t.TempDir(), "precious.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "bin", "mysqld"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".perfbisect-unpacked", "mariadb-10.0.22-linux-x86_64.unpacked"} {
		if err := os.Symlink(victim, filepath.Join(src, name)); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "mariadb-10.0.22-linux-x86_64.tar.gz")
	if out, err := exec.Command("tar", "-czf", path, "-C", src, ".").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, out)
	}
	tb := Tarball{Path: path, Flavor: "MariaDB", Version: "10.0.22", Arch: "x86_64"}
	for range 2 { // unpacked, then reused
		base, _, err := tb.Unpack(context.Background(), state)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(base, "bin", "mysqld")); err != nil {
			t.Errorf("base directory %s has no bin/mysqld: a tarball without a top directory is its own", base)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("a file a member links to was written: %q", b)
	}
}
