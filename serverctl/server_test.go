package serverctl

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/internal/testenv"
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
	testenv.Require(t, testenv.Server)
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
	s, db := startWithDB(ctx, t, o)
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
	// The report says which of the user's settings lost, and where they are.
	var ovs []string
	for _, ov := range s.Overridden() {
		ovs = append(ovs, ov.String())
	}
	if len(ovs) != 2 || !strings.HasPrefix(ovs[0], cnf+":2 datadir=/var/lib/mysql -> "+o.RunDir) ||
		!strings.HasPrefix(ovs[1], cnf+":3 port=3306 -> ") {
		t.Errorf("overridden settings: %q", ovs)
	}
	// It listens on the loopback address only (and its private socket): no
	// port of the machine's network, a plugin's included.
	if addrs, err := listeningAddrs(s.Pid()); err != nil || len(addrs) == 0 {
		t.Errorf("listening addresses of the server: %v %v", addrs, err)
	} else {
		for _, a := range addrs {
			if !loopback(a) {
				t.Errorf("the server listens on %s (hex, /proc/net/tcp), not the loopback address", a)
			}
		}
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
	// Status deltas over a window of known work.
	st0, err := s.GlobalStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db.Exec("CREATE DATABASE m")
	db.Exec("CREATE TABLE m.t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	for i := 0; i < 50; i++ {
		tx, _ := db.Begin()
		tx.Exec("INSERT INTO m.t VALUES (?, ?)", i, i)
		tx.Commit()
	}
	var sum int64
	db.QueryRow("SELECT SUM(v) FROM m.t").Scan(&sum)
	st1, err := s.GlobalStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := StatusDelta(st0, st1)
	if d["Com_commit"] < 50 || d["Questions"] < 50 || d["Innodb_rows_read"]+d["Rows_read"] < 50 || d["Innodb_buffer_pool_read_requests"] <= 0 {
		t.Errorf("status deltas do not show the window's work: %v", d)
	}
	if _, ok := d["Innodb_history_list_length"]; !ok || d["Threads_running"] < 1 {
		t.Errorf("gauges missing: %v", d)
	}
	if _, ok := d["Uptime"]; ok {
		t.Errorf("a variable outside the kept lists was kept: %v", d)
	}
	// What fell over the window is a level, not a count.
	for k, a := range st1 {
		if b, ok := st0[k]; ok && a < b && !Level(k) {
			t.Errorf("%s fell from %d to %d, and Level does not know it", k, b, a)
		}
	}
	if rss, err := s.PeakRSS(); err != nil || rss < 10<<20 {
		t.Errorf("peak RSS %d (%v), want a server's tens of MB", rss, err)
	}
	// Private files: run directory and datadir 0700, option files 0600; a
	// restored snapshot loads no buffer pool dump.
	for path, want := range map[string]os.FileMode{o.RunDir: 0o700, filepath.Join(o.RunDir, "data"): 0o700,
		filepath.Join(o.RunDir, EffectiveOptionFile): 0o600, filepath.Join(o.RunDir, EffectiveArgsFile): 0o600,
		filepath.Join(o.RunDir, StderrFile): 0o600, filepath.Join(o.RunDir, ErrorLogFile): 0o600} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, st.Mode().Perm(), err, want)
		}
	}
	var loadAtStartup int
	if err := db.QueryRow("SELECT @@innodb_buffer_pool_load_at_startup").Scan(&loadAtStartup); err != nil || loadAtStartup != 0 {
		t.Errorf("innodb_buffer_pool_load_at_startup = %d (%v), want OFF", loadAtStartup, err)
	}
	// An anonymous account (as old mysql_install_db made) is gone after the
	// next start.
	if _, err := db.Exec("CREATE USER ''@'localhost'"); err != nil {
		t.Fatal(err)
	}
	h := HostFacts(o.RunDir)
	if h.Kernel == "" || h.CPUs < 1 || h.MemBytes < 1<<28 || h.DatadirFS == "" || h.DatadirFS != FilesystemType(dir) {
		t.Errorf("host facts: %+v", h)
	}
	db.Close()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Alive() || syscall.Kill(s.Pid(), 0) == nil {
		t.Fatal("server still running after Stop")
	}
	// The clean shutdown was the SQL statement, not a signal.
	if log := readFile(filepath.Join(o.RunDir, ErrorLogFile)); !strings.Contains(log, "initiated by: root") {
		t.Errorf("no SQL SHUTDOWN in the error log:\n%s", lastLines(log, 5))
	}
	// perfbisect deletes only datadirs it created.
	foreign := filepath.Join(dir, "foreign")
	os.MkdirAll(filepath.Join(foreign, "mysql"), 0o755)
	if err := RemoveDatadir(foreign); !errors.Is(err, ErrNotOurDatadir) {
		t.Errorf("RemoveDatadir of a foreign datadir: %v", err)
	}
	if err := CopyDatadir(foreign, filepath.Join(dir, "copy")); !errors.Is(err, ErrNotOurDatadir) {
		t.Errorf("CopyDatadir of a foreign datadir: %v", err)
	}
	if _, err := os.Stat(filepath.Join(foreign, "mysql")); err != nil {
		t.Errorf("foreign datadir touched: %v", err)
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
	defer s2.Kill()
	db2, _ := sql.Open("mysql", s2.DSN(""))
	db2.QueryRow("SELECT COUNT(*) FROM mysql.user WHERE user=''").Scan(&anon)
	db2.Close()
	if anon != 0 {
		t.Errorf("%d anonymous accounts after a restart", anon)
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

// TestStartChecksTCPAccount starts a datadir initialised the MariaDB 10.4+
// default way (root logs in only through unix_socket authentication): the
// socket works for root, 127.0.0.1 does not, and Start must say so.
func TestStartChecksTCPAccount(t *testing.T) {
	testenv.Require(t, testenv.Server)
	if os.Getuid() != 0 {
		t.Skip("unix_socket authentication lets only the OS account root in as root")
	}
	in := systemInstall(t)
	ctx := context.Background()
	dir := t.TempDir()
	dd := filepath.Join(dir, "data")
	out, err := exec.Command(in.InstallDB, "--no-defaults", "--datadir="+dd, "--user="+currentUser(), "--skip-test-db").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	o := Options{Install: in, RunDir: filepath.Join(dir, "run"), Datadir: dd}
	s, err := Start(ctx, o)
	if err == nil {
		s.Kill()
		t.Fatal("started although root cannot log in over 127.0.0.1")
	}
	if !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("error does not say the TCP login failed: %v", err)
	}
	// With networking off in the user's file the socket is enough.
	cnf := filepath.Join(dir, "nonet.cnf")
	os.WriteFile(cnf, []byte("[mysqld]\nskip-networking\n"), 0o644)
	o.OptionFile = cnf
	s, err = Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Error(err)
	}
	// Without privilege checks every login works, and accounts are not
	// touched (DROP USER would fail).
	os.WriteFile(cnf, []byte("[mysqld]\nskip-grant-tables\n"), 0o644)
	s, err = Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Error(err)
	}
}

// TestStartRejectedOption shows the server's own error line for an option it rejects.
func TestStartRejectedOption(t *testing.T) {
	testenv.Require(t, testenv.Server)
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
	// The advice names the line and offers loose-, which the tool never adds.
	if !strings.Contains(se.Hint, cnf+":2") || !strings.Contains(se.Hint, "loose-innodb_mtflush_threads") {
		t.Errorf("hint: %q", se.Hint)
	}
}

// TestOptionFileCannotEscapeRunDir gives the server a system-style option file:
// user=mysql, binary log, Aria and undo directories elsewhere, and a relative
// !include. The server must run, keep every file in its run directory and still
// get the included settings.
func TestOptionFileCannotEscapeRunDir(t *testing.T) {
	testenv.Require(t, testenv.Server)
	in := systemInstall(t)
	ctx := context.Background()
	dir := t.TempDir()
	elsewhere := filepath.Join(dir, "var-lib-mysql")
	os.MkdirAll(elsewhere, 0o755)
	os.MkdirAll(filepath.Join(dir, "conf.d"), 0o755)
	os.WriteFile(filepath.Join(dir, "conf.d", "extra.cnf"), []byte("[mysqld]\nmax_connections=77\nloose-wsrep_sst_auth=root:s3cretPW\n"), 0o644)
	cnf := filepath.Join(dir, "my.cnf")
	os.WriteFile(cnf, []byte("[mysqld]\nuser = mysql\nlog_bin = "+elsewhere+"/mysql-bin\nlog-bin-index="+elsewhere+"/mysql-bin.index\n"+
		"aria-log-dir-path="+elsewhere+"\ninnodb_undo_directory="+elsewhere+"\ninnodb_buffer_pool_size=16M\n!include conf.d/extra.cnf\n"+
		"plugin_load_add=server_audit\nserver_audit_logging=ON\nserver_audit_file_path="+elsewhere+"/server_audit.log\n"+
		// Another version's files: the build under test must keep its own.
		"plugin-dir="+elsewhere+"/plugin\ncharacter-sets-dir="+elsewhere+"/charsets\nlc-messages-dir="+elsewhere+"/share\n"+
		// Relative to the datadir but climbing out, the MyISAM log, a fixed
		// second port.
		"relay-log=../../var-lib-mysql/relay\nlog-isam="+elsewhere+"/myisam.log\nextra-port=3399\n"), 0o644)
	o := Options{Install: in, OptionFile: cnf, RunDir: filepath.Join(dir, "run")}
	if err := Initialize(ctx, o); err != nil {
		t.Fatal(err)
	}
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Kill()
	db, _ := sql.Open("mysql", s.DSN(""))
	defer db.Close()
	var binlog, aria, undo string
	var maxConn int
	if err := db.QueryRow("SELECT @@log_bin_basename, @@aria_log_dir_path, @@innodb_undo_directory, @@max_connections").Scan(&binlog, &aria, &undo, &maxConn); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]string{"log_bin_basename": binlog, "aria_log_dir_path": aria, "innodb_undo_directory": undo} {
		if !strings.HasPrefix(p, o.RunDir) {
			t.Errorf("%s = %s: outside the run directory %s", name, p, o.RunDir)
		}
	}
	if maxConn != 77 {
		t.Errorf("relative !include not read: max_connections = %d", maxConn)
	}
	var pluginDir, charsets, messages string
	if err := db.QueryRow("SELECT @@plugin_dir, @@character_sets_dir, @@lc_messages_dir").Scan(&pluginDir, &charsets, &messages); err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]string{"plugin_dir": pluginDir, "character_sets_dir": charsets, "lc_messages_dir": messages} {
		if !strings.HasPrefix(p, in.Prefix+"/") {
			t.Errorf("%s = %s: not the build's own (under %s)", name, p, in.Prefix)
		}
	}
	db.Close()
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) > 0 {
		t.Errorf("the server wrote outside its run directory: %v", ents)
	}
	args, _ := os.ReadFile(filepath.Join(o.RunDir, EffectiveArgsFile))
	if !strings.Contains(string(args), "--max_connections=77") {
		t.Errorf("effective options not recorded: %s", args)
	}
	// The account is given once, first (mysqld keeps the first user= it
	// reads); the user's user=mysql, unused, is not listed as if it were.
	if n := strings.Count(string(args), "--user="); n != 1 || !strings.HasPrefix(string(args), "--user="+currentUser()+"\n") {
		t.Errorf("--user= given %d times, or not %s first: %s", n, currentUser(), args)
	}
	// A secret reaches the server (it read the setting) but not the
	// recorded list, which the store and the reports get.
	if strings.Contains(string(args), "s3cretPW") || !strings.Contains(string(args), "wsrep_sst_auth=<redacted>") {
		t.Errorf("the recorded options show the secret or lost the setting: %s", args)
	}
	// A log-basename with a path cannot be made private: a clear error.
	os.WriteFile(cnf, []byte("[mysqld]\nlog-basename=/var/log/mysql/x\n"), 0o644)
	o2 := Options{Install: in, OptionFile: cnf, RunDir: filepath.Join(dir, "run2")}
	if err := Initialize(ctx, o2); !errors.Is(err, ErrOptionFile) || !strings.Contains(err.Error(), "log-basename") {
		t.Errorf("log-basename with a path: %v", err)
	}
}

func TestParsePrintDefaults(t *testing.T) {
	out := "/usr/sbin/mariadbd would have been started with the following arguments:\n--user=root --log-bin=/var/log/mysql/mysql-bin --datadir=/tmp/x y --skip-name-resolve \n"
	got := parsePrintDefaults(out)
	want := []string{"--user=root", "--log-bin=/var/log/mysql/mysql-bin", "--datadir=/tmp/x y", "--skip-name-resolve"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q", got)
	}
	if k := (Setting{Name: "loose-log-Bin"}).Key(); k != "log_Bin" {
		t.Errorf("Key: %s", k)
	}
	if k := (Setting{Name: "skip-log-bin"}).Key(); k != "log_bin" {
		t.Errorf("Key: %s", k)
	}
}

func TestRemoveSocketDir(t *testing.T) {
	run := t.TempDir()
	sock := t.TempDir()
	os.WriteFile(filepath.Join(sock, "mysqld.sock"), nil, 0o644)
	os.WriteFile(filepath.Join(sock, "mysqld.sock.lock"), nil, 0o644)
	os.WriteFile(filepath.Join(run, socketDirFile), []byte(sock+"\n"), 0o644)
	RemoveSocketDir(run)
	if _, err := os.Stat(sock); err == nil {
		t.Error("stale socket directory kept")
	}
	// A directory holding anything else is not ours to delete.
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), nil, 0o644)
	os.WriteFile(filepath.Join(run, socketDirFile), []byte(other+"\n"), 0o644)
	RemoveSocketDir(run)
	if _, err := os.Stat(filepath.Join(other, "notes.txt")); err != nil {
		t.Error("a directory with other files was removed")
	}
}

func TestLevel(t *testing.T) {
	for name, want := range map[string]bool{
		"Innodb_buffer_pool_pages_free": true, "Innodb_buffer_pool_pages_data": true, "Open_tables": true, "Threads_connected": true,
		"Innodb_lsn_current": true, "buffer_pool_pages_free": true, "trx_rseg_history_len": true, "Memory_used_initial": true,
		"Innodb_buffer_pool_pages_lru_freed": false, "Innodb_buffer_pool_reads": false, "Opened_tables": false, "Threads_created": false,
		"Innodb_pages_read": false, "buffer_pages_read": false, "Questions": false, "Some_new_counter": false,
	} {
		if got := Level(name); got != want {
			t.Errorf("Level(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestWaitSummary: performance_schema's wait summary on a real server:
// empty where performance_schema is off (the user's file says so), and
// with WaitSettings as Options.Settings (which win over the user's file)
// the time waited per event of what the server did, without the client's
// side (idle, sockets), the threads' sleeps (condition waits) or table I/O
// (storage engine calls, which hold the other waits).
func TestWaitSummary(t *testing.T) {
	testenv.Require(t, testenv.Server)
	in := systemInstall(t)
	ctx := context.Background()
	dir := t.TempDir()
	cnf := filepath.Join(dir, "my.cnf")
	if err := os.WriteFile(cnf, []byte("[mysqld]\nperformance_schema=OFF\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{Install: in, OptionFile: cnf, RunDir: filepath.Join(dir, "run"), Datadir: filepath.Join(dir, "data")}
	if err := Initialize(ctx, o); err != nil {
		t.Fatal(err)
	}
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.WaitSummary(ctx)
	if err != nil || len(w) != 0 {
		t.Errorf("performance_schema off: %d wait events (%v), want none", len(w), err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	o.Settings = append(slices.Clone(WaitSettings), DigestSettings...)
	s, db := startWithDB(ctx, t, o)
	for _, q := range []string{"CREATE DATABASE w", "CREATE TABLE w.t (a INT PRIMARY KEY) ENGINE=InnoDB", "INSERT INTO w.t VALUES (1), (2), (3)", "SELECT * FROM w.t",
		"SELECT a FROM w.t WHERE a = 1", "SELECT a FROM w.t WHERE a = 2", "SELECT a FROM w.t WHERE a = 3"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The three point selects are one digest, with one of them as its sample.
	ds, err := s.StatementDigests(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ds, func(d Digest) bool { return strings.Contains(d.Text, "WHERE `a` = ?") })
	if i < 0 || ds[i].Count != 3 || ds[i].Time <= 0 || ds[i].Schema != "" || !strings.HasPrefix(ds[i].Sample, "SELECT a FROM w.t WHERE a = ") {
		t.Errorf("digests %+v: want the point select's, run 3 times, with one of them as its sample", ds)
	}
	if w, err = s.WaitSummary(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d wait events: %v", len(w), w)
	if w["wait/io/file/innodb/innodb_data_file"] <= 0 {
		t.Errorf("no time waited on InnoDB's data files after creating and filling a table")
	}
	for name := range w {
		if name == "idle" || strings.HasPrefix(name, "wait/io/socket/") || strings.HasPrefix(name, "wait/synch/cond/") || strings.HasPrefix(name, "wait/io/table/") {
			t.Errorf("%s: the client's side, a sleep or a storage engine call (which holds other waits) is not listed", name)
		}
	}
	db.Close() // its idle connection, before the server goes
	if err := s.Stop(ctx); err != nil {
		t.Error(err)
	}
}

// startWithDB starts a server for o and opens a pool on it; the test's
// cleanup closes the pool and kills the server if it still runs.
func startWithDB(ctx context.Context, t *testing.T, o Options) (*Server, *sql.DB) {
	t.Helper()
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Kill)
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return s, db
}
