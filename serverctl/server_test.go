package serverctl

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// systemInstall finds Debian's mariadb-server, which .ci/run installs.
func systemInstall(t *testing.T) *Install {
	t.Helper()
	in, err := FindInstall(context.Background(), "/usr")
	if err != nil {
		t.Fatalf("Debian mariadb-server not usable (apt-get install mariadb-server): %v", err)
	}
	return in
}

func TestParseVersion(t *testing.T) {
	cases := []struct {
		line    string
		flavor  Flavor
		version string
		selfini bool
	}{
		{"mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)", MariaDB, "10.11.19", false},
		{"/usr/sbin/mysqld  Ver 10.0.22-MariaDB-log for Linux on x86_64 (Source distribution)", MariaDB, "10.0.22", false},
		{"mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)", MySQL, "8.0.36", true},
		{"mysqld  Ver 5.6.51 for Linux on x86_64 (MySQL Community Server (GPL))", MySQL, "5.6.51", false},
		{"mysqld  Ver 5.7.5-m15 for Linux on x86_64 (Source distribution)", MySQL, "5.7.5", false},
		{"mysqld  Ver 5.7.6-m16 for Linux on x86_64 (Source distribution)", MySQL, "5.7.6", true},
		{"mysqld  Ver 8.0.35-27 for Linux on x86_64 (Percona Server (GPL), Release '27', Revision '2f8eeab2')", Percona, "8.0.35", true},
		{"mysqld  Ver 5.1.73 Distrib 5.1.73, for debian-linux-gnu", MySQL, "5.1.73", false},
	}
	for _, c := range cases {
		var in Install
		if err := in.parseVersion("some banner\n" + c.line + "\n"); err != nil {
			t.Errorf("%q: %v", c.line, err)
			continue
		}
		if in.Flavor != c.flavor || in.Version.String() != c.version || in.InitializesItself() != c.selfini {
			t.Errorf("%q: got %s %s self-init=%v, want %s %s %v", c.line, in.Flavor, in.Version, in.InitializesItself(), c.flavor, c.version, c.selfini)
		}
	}
	var in Install
	if err := in.parseVersion("command not found"); err == nil {
		t.Error("no version line: want an error")
	}
}

func TestFindInstallErrors(t *testing.T) {
	_, err := FindInstall(context.Background(), t.TempDir())
	if !errors.Is(err, ErrNoServer) {
		t.Fatalf("empty prefix: got %v, want ErrNoServer", err)
	}
}

func TestCheckOptionFile(t *testing.T) {
	dir := t.TempDir()
	if err := CheckOptionFile(filepath.Join(dir, "nope.cnf")); !errors.Is(err, ErrOptionFile) || !strings.Contains(err.Error(), "nope.cnf") {
		t.Errorf("missing file: %v", err)
	}
	if err := CheckOptionFile(dir); !errors.Is(err, ErrOptionFile) {
		t.Errorf("directory: %v", err)
	}
	f := filepath.Join(dir, "ok.cnf")
	os.WriteFile(f, []byte("[mysqld]\n"), 0o644)
	if err := CheckOptionFile(f); err != nil {
		t.Errorf("readable file: %v", err)
	}
}

// TestServerLifecycle initialises, starts, queries, measures CPU, snapshots and
// stops a real mariadbd, then checks that nothing is left running.
func TestServerLifecycle(t *testing.T) {
	in := systemInstall(t)
	ctx := context.Background()
	dir := t.TempDir()
	cnf := filepath.Join(dir, "user.cnf")
	// The user's file tries to point the server at the system datadir and port:
	// the overrides must win.
	os.WriteFile(cnf, []byte("[mysqld]\ndatadir=/var/lib/mysql\nport=3306\ninnodb_buffer_pool_size=32M\ninnodb_log_file_size=8M\n"), 0o644)
	o := Options{Install: in, OptionFile: cnf, RunDir: filepath.Join(dir, "run")}
	if err := Initialize(ctx, o); err != nil {
		t.Fatal(err)
	}
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var datadir string
	var pool, port int64
	if err := db.QueryRow("SELECT @@datadir, @@innodb_buffer_pool_size, @@port").Scan(&datadir, &pool, &port); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(datadir, o.RunDir) {
		t.Errorf("datadir %s is not in the run directory %s", datadir, o.RunDir)
	}
	if pool != 32<<20 {
		t.Errorf("user's innodb_buffer_pool_size not applied: %d", pool)
	}
	if port == 3306 || int(port) != s.Port() {
		t.Errorf("port %d, want the private port %d", port, s.Port())
	}
	var anon int
	db.QueryRow("SELECT COUNT(*) FROM mysql.user WHERE user=''").Scan(&anon)
	if anon != 0 {
		t.Errorf("%d anonymous accounts", anon)
	}
	c0, err := s.CPUTime()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ {
		db.Exec("DO SHA2(REPEAT('x', 1000), 256)")
	}
	c1, _ := s.CPUTime()
	if c1 <= c0 {
		t.Errorf("server CPU time did not grow under load: %v -> %v", c0, c1)
	}
	db.Close()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Alive() || syscall.Kill(s.Pid(), 0) == nil {
		t.Fatal("server still running after Stop")
	}
	// A stopped datadir copies to a snapshot that starts again.
	snap := filepath.Join(dir, "snap")
	if err := CopyDatadir(filepath.Join(o.RunDir, "data"), snap); err != nil {
		t.Fatal(err)
	}
	o2 := Options{Install: in, OptionFile: cnf, RunDir: filepath.Join(dir, "run2"), Datadir: snap}
	s2, err := Start(ctx, o2)
	if err != nil {
		t.Fatal(err)
	}
	// A crash is reported with how the server ended.
	syscall.Kill(s2.Pid(), syscall.SIGKILL)
	deadline := time.Now().Add(10 * time.Second)
	for s2.Alive() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	derr := s2.Died()
	if derr == nil || !strings.Contains(derr.Error(), "killed by signal") {
		t.Errorf("crash not reported: %v", derr)
	}
}

// TestStartRejectedOption shows the server's own error line for an option it rejects.
func TestStartRejectedOption(t *testing.T) {
	in := systemInstall(t)
	ctx := context.Background()
	dir := t.TempDir()
	good := Options{Install: in, RunDir: filepath.Join(dir, "run")}
	if err := Initialize(ctx, good); err != nil {
		t.Fatal(err)
	}
	cnf := filepath.Join(dir, "bad.cnf")
	os.WriteFile(cnf, []byte("[mysqld]\ninnodb_mtflush_threads=16\n"), 0o644)
	bad := good
	bad.OptionFile = cnf
	s, err := Start(ctx, bad)
	if err == nil {
		s.Kill()
		t.Fatal("server started with an unknown variable")
	}
	var se *ServerError
	if !errors.As(err, &se) {
		t.Fatalf("want *ServerError, got %T %v", err, err)
	}
	if !strings.Contains(err.Error(), "innodb_mtflush_threads") || !strings.Contains(err.Error(), "bad.cnf") {
		t.Errorf("error does not name the option and the file: %v", err)
	}
}
