// Package serverctl runs a MariaDB, MySQL or Percona Server build as a private,
// disposable server: it finds the server in an install tree, reads its flavor and
// version, writes the effective option file, initialises a datadir by version rule,
// starts mysqld, waits until it accepts connections, measures its CPU time and stops
// it. It knows nothing about git or workloads.
package serverctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	version "github.com/hashicorp/go-version"

	"github.com/perfbisect/perfbisect/internal/excerpt"
)

// Flavor is the server family: it decides initialisation and option names.
type Flavor string

// The flavors perfbisect knows.
const (
	MariaDB Flavor = "MariaDB"
	MySQL   Flavor = "MySQL"
	Percona Flavor = "Percona"
)

// Install is a server installation tree: a build's install prefix, or /usr for a
// distribution's packages.
type Install struct {
	Prefix      string           // install prefix, absolute
	Server      string           // path of mariadbd or mysqld
	InstallDB   string           // mariadb-install-db or mysql_install_db; "" when the server initialises itself (MySQL 5.7.6+)
	Flavor      Flavor           // read from --version
	Version     *version.Version // e.g. 10.11.19
	VersionLine string           // first line of `mysqld --version`, as printed

	helpOnce sync.Once // --verbose --help output, for ownPath
	help     []byte
	helpErr  error
}

// WithServer returns the install with its server binary replaced by server
// (the same build linked in another code layout: flavor, version and the
// tree's other files are the install's).
func (in *Install) WithServer(server string) *Install {
	return &Install{Prefix: in.Prefix, Server: server, InstallDB: in.InstallDB, Flavor: in.Flavor, Version: in.Version, VersionLine: in.VersionLine}
}

// ErrNoServer is returned (wrapped) by FindInstall when the prefix holds no server binary.
var ErrNoServer = errors.New("no mariadbd or mysqld in the install tree")

// ServerPaths are the places in an install tree where a CMake install puts
// the server, in the order they are tried.
var ServerPaths = []string{"bin/mariadbd", "bin/mysqld", "sbin/mariadbd", "sbin/mysqld", "libexec/mysqld"}

// installDBCandidates are the places the datadir initialisation script is
// installed: MariaDB 10.4+ installs scripts/mariadb-install-db, older trees
// scripts/mysql_install_db, Debian puts them in bin/.
var installDBCandidates = []string{
	"bin/mariadb-install-db", "scripts/mariadb-install-db",
	"bin/mysql_install_db", "scripts/mysql_install_db",
}

var versionRE = regexp.MustCompile(`Ver\s+(?:[\d.]+\s+Distrib\s+)?(\d+\.\d+\.\d+)`)

// FindInstall locates the server in prefix, runs it with --version and reads its
// flavor and version. It returns an error wrapping ErrNoServer when there is no
// server binary, and a descriptive error when --version fails or is unreadable.
func FindInstall(ctx context.Context, prefix string) (*Install, error) {
	abs, err := filepath.Abs(prefix)
	if err != nil {
		return nil, fmt.Errorf("install tree %s: %w", prefix, err)
	}
	in := &Install{Prefix: abs}
	for _, c := range ServerPaths {
		p := filepath.Join(abs, c)
		if isExecutable(p) {
			in.Server = p
			break
		}
	}
	if in.Server == "" {
		return nil, fmt.Errorf("install tree %s: %w (looked for %s)", abs, ErrNoServer, strings.Join(ServerPaths, ", "))
	}
	vctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(vctx, in.Server, "--version")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s --version: %w: %s", in.Server, err, lastLines(out.String(), 5))
	}
	if err := in.parseVersion(out.String()); err != nil {
		return nil, fmt.Errorf("%s --version: %w", in.Server, err)
	}
	if !in.InitializesItself() {
		for _, c := range installDBCandidates {
			p := filepath.Join(abs, c)
			if isExecutable(p) {
				in.InstallDB = p
				break
			}
		}
		if in.InstallDB == "" {
			return nil, fmt.Errorf("install tree %s: %s %s needs mysql_install_db or mariadb-install-db, found none of %s",
				abs, in.Flavor, in.Version, strings.Join(installDBCandidates, ", "))
		}
	}
	return in, nil
}

// parseVersion fills Flavor, Version and VersionLine from `mysqld --version` output
// such as "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64"
// or "mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)".
func (in *Install) parseVersion(out string) error {
	for _, line := range strings.Split(out, "\n") {
		m := versionRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := version.NewVersion(m[1])
		if err != nil {
			return fmt.Errorf("version %q: %w", m[1], err)
		}
		in.Version, in.VersionLine = v, strings.TrimSpace(line)
		switch {
		case strings.Contains(line, "MariaDB"):
			in.Flavor = MariaDB
		case strings.Contains(line, "Percona"):
			in.Flavor = Percona
		default:
			in.Flavor = MySQL
		}
		return nil
	}
	return fmt.Errorf("no version in output: %s", lastLines(out, 3))
}

// InitializesItself reports whether the server initialises its own datadir with
// --initialize-insecure (MySQL and Percona 5.7.6 and later) rather than through an
// install-db script (MariaDB, older MySQL).
func (in *Install) InitializesItself() bool {
	return in.Flavor != MariaDB && in.Version != nil && in.Version.GreaterThanOrEqual(version.Must(version.NewVersion("5.7.6")))
}

// ownPath returns where the build keeps its own files for a path option:
// plugin_dir and character_sets_dir as the server reports them with no option
// file and its own basedir (`--verbose --help`), lc_messages_dir (and the old
// language) as the directory holding english/errmsg.sys under the prefix.
func (in *Install) ownPath(ctx context.Context, name string) (string, error) {
	if name == "lc_messages_dir" || name == "language" {
		for _, pattern := range []string{"share/english/errmsg.sys", "share/*/english/errmsg.sys", "share/*/*/english/errmsg.sys"} {
			if ms, _ := filepath.Glob(filepath.Join(in.Prefix, pattern)); len(ms) > 0 {
				return filepath.Dir(filepath.Dir(ms[0])), nil
			}
		}
		return "", fmt.Errorf("no english/errmsg.sys under %s/share", in.Prefix)
	}
	in.helpOnce.Do(func() {
		hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		// --help still probes its datadir (lower-case test, Aria control
		// file): an empty private one, never the compiled-in /var/lib/mysql.
		dd, err := os.MkdirTemp("", "pbhelp")
		if err != nil {
			in.helpErr = err
			return
		}
		defer os.RemoveAll(dd)
		in.help, in.helpErr = exec.CommandContext(hctx, in.Server, "--no-defaults", "--basedir="+in.Prefix, "--datadir="+dd,
			"--verbose", "--help").Output()
	})
	out, err := in.help, in.helpErr
	if err != nil && len(out) == 0 {
		return "", fmt.Errorf("%s --verbose --help: %v", filepath.Base(in.Server), err)
	}
	want := strings.ReplaceAll(name, "_", "-")
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 && f[0] == want && filepath.IsAbs(f[1]) {
			return filepath.Clean(f[1]), nil
		}
	}
	return "", fmt.Errorf("%s --verbose --help does not show its %s", filepath.Base(in.Server), want)
}

// atLeast reports whether the install's version is at least v (e.g. "10.4").
func (in *Install) atLeast(v string) bool {
	return in.Version != nil && in.Version.GreaterThanOrEqual(version.Must(version.NewVersion(v)))
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// lastLines returns the last n non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	return strings.Join(excerpt.Lines(s, nil, 0, n), " | ")
}
