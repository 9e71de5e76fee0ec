package serverctl

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/perfbisect/perfbisect/internal/excerpt"
	"github.com/perfbisect/perfbisect/internal/faultpoint"
	"github.com/perfbisect/perfbisect/internal/reap"
)

// Options says which build to run, with which option file, where.
type Options struct {
	Install    *Install // from FindInstall
	OptionFile string   // the user's my.cnf; "" for none
	RunDir     string   // private directory for the effective option file, logs and tmpdir; created if missing
	Datadir    string   // defaults to RunDir/data
	// Owner is the directory the server's processes are marked with for reaping
	// (internal/reap): the caller's state directory. Default: RunDir.
	Owner string

	// StartTimeout bounds the wait until the server accepts connections
	// (default 3 minutes: crash recovery of a large redo log is slow).
	StartTimeout time.Duration
	// StopTimeout bounds a clean shutdown before the process group is killed
	// (default 3 minutes).
	StopTimeout time.Duration
	// CPUs, when set, are the only CPUs the server's threads run on (its
	// affinity from the start, as taskset -c would set it). Start only.
	CPUs CPUList
	// Settings are option lines ("loose-performance-schema=ON") written
	// last into the [mysqld] group of the effective option file, so they
	// win over the user's: a profiled run's instruments. Start only.
	Settings []string
}

func (o *Options) owner() string {
	if o.Owner != "" {
		return o.Owner
	}
	return o.RunDir
}

func (o *Options) datadir() string {
	if o.Datadir != "" {
		return o.Datadir
	}
	return filepath.Join(o.RunDir, "data")
}

// Paths of the files the tool keeps in a run directory.
const (
	EffectiveOptionFile = "my.cnf"        // the option file the server was given
	ErrorLogFile        = "mysqld.err"    // log-error
	StderrFile          = "mysqld.stderr" // stdout and stderr of the server process
	InitLogFile         = "install-db.log"
)

// ServerError is a server that would not initialise, would not start, or died. It
// carries the lines of its error log and stderr that say why.
type ServerError struct {
	Op         string        // "initialise datadir", "start", "run"
	Server     string        // binary
	OptionFile string        // the user's option file, "" for none
	Exit       string        // how the process ended ("exited 1", "killed by signal 11"), "" if unknown
	After      time.Duration // time from start to the failure
	Lines      []string      // [ERROR] lines (or the last lines) of log-error and stderr
	RunDir     string        // where the full logs are
	Hint       string        // what to do, when the tool knows ("" otherwise)
	// Signal is the signal that ended the process (0: it exited, or how is
	// unknown). SIGKILL comes from outside the server (the kernel's OOM
	// killer, a user, a supervisor), never from a crash of its own.
	Signal syscall.Signal
	// NotReady is set when the server was alive but did not accept
	// connections within Options.StartTimeout (it was killed then): a
	// server that hangs at start, or a machine too slow or stalled for it.
	NotReady bool
}

// KilledFromOutside reports whether the server was ended by SIGKILL, which a
// server never sends itself: the OOM killer or another process did.
func (e *ServerError) KilledFromOutside() bool { return e.Signal == syscall.SIGKILL }

// PortTaken reports whether the server failed because its port was taken
// (it lost a race for a port that was free a moment before).
func (e *ServerError) PortTaken() bool { return portTaken(e.Lines) }

func (e *ServerError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", e.Op, filepath.Base(e.Server))
	if e.OptionFile != "" {
		fmt.Fprintf(&b, " (option file %s)", e.OptionFile)
	}
	if e.Exit != "" {
		fmt.Fprintf(&b, ": %s after %.1fs", e.Exit, e.After.Seconds())
	}
	if len(e.Lines) > 0 {
		fmt.Fprintf(&b, ": %s", strings.Join(e.Lines, " | "))
	}
	if e.RunDir != "" {
		fmt.Fprintf(&b, " (logs in %s)", e.RunDir)
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "; %s", e.Hint)
	}
	return b.String()
}

// Server is a running mysqld started by Start. Stop it with Stop; a server whose
// parent dies gets SIGKILL from the kernel (parent-death signal).
type Server struct {
	opts    Options
	cmd     *exec.Cmd
	sockDir string
	socket  string
	port    int
	started time.Time

	eff *effective

	done    chan struct{} // closed when the process has exited
	mu      sync.Mutex
	state   *os.ProcessState
	stopped bool // Stop was called
}

// Initialize creates a fresh datadir for the install at o.Datadir (which must not
// exist or be empty), by version rule: MariaDB with mariadb-install-db or
// mysql_install_db, MySQL/Percona 5.7.6+ with mysqld --initialize-insecure, older
// MySQL with mysql_install_db. MariaDB 10.4+ gets a root that logs in without a
// password over the socket (--auth-root-authentication-method=normal); 10.5+ also
// --skip-test-db. Failure returns a *ServerError with the initialiser's output.
func Initialize(ctx context.Context, o Options) error {
	in := o.Install
	if err := os.MkdirAll(o.RunDir, 0o700); err != nil {
		return fmt.Errorf("initialise datadir: %w", err)
	}
	dd := o.datadir()
	if ents, err := os.ReadDir(dd); err == nil && len(ents) > 0 {
		return fmt.Errorf("initialise datadir %s: not empty; perfbisect initialises only a datadir it creates (give it a new directory)", dd)
	}
	if err := os.MkdirAll(dd, 0o700); err != nil {
		return fmt.Errorf("initialise datadir: %w", err)
	}
	// MySQL 5.7.6+ --initialize refuses a datadir with any file in it: its
	// mark comes after.
	if !in.InitializesItself() {
		if err := markDatadir(dd); err != nil {
			return fmt.Errorf("initialise datadir: %w", err)
		}
	}
	ov, cleanup, err := newOverrides(o, 0)
	if err != nil {
		return err
	}
	defer cleanup()
	eff, err := writeOptionFile(ctx, o, &ov)
	if err != nil {
		return err
	}
	cnf := eff.path
	// --defaults-file must be the first argument of both programs.
	var args []string
	prog := in.InstallDB
	switch {
	case in.InitializesItself():
		prog = in.Server
		args = []string{"--defaults-file=" + cnf, "--initialize-insecure", "--user=" + ov.User,
			"--basedir=" + in.Prefix, "--datadir=" + dd}
	default:
		args = []string{"--defaults-file=" + cnf, "--user=" + ov.User, "--basedir=" + in.Prefix, "--datadir=" + dd}
		if in.Flavor == MariaDB && in.atLeast("10.4") {
			args = append(args, "--auth-root-authentication-method=normal")
		}
		if in.Flavor == MariaDB && in.atLeast("10.5") {
			args = append(args, "--skip-test-db")
		}
	}
	logPath := filepath.Join(o.RunDir, InitLogFile)
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("initialise datadir: %w", err)
	}
	defer logf.Close()
	start := time.Now()
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Dir = optionDir(o.OptionFile, o.RunDir)
	cmd.Env = serverEnv(o)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// Pdeathsig follows the forking thread: keep it for the child's life.
	runtime.LockOSThread()
	err = cmd.Run()
	runtime.UnlockOSThread()
	if err != nil {
		// The script's own server (mariadbd --bootstrap) was killed with
		// its group, or the script failed under it: Run waited for the
		// script alone. Nothing runs on the datadir once this returns.
		reap.KillGroup(cmd.Process.Pid, 10*time.Second)
	}
	if in.InitializesItself() {
		if merr := markDatadir(dd); merr != nil && err == nil {
			return fmt.Errorf("initialise datadir: %w", merr)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// The server's own complaint is in log-error; the script's output only
		// says that it failed.
		var lines []string
		for _, f := range []string{filepath.Join(o.RunDir, ErrorLogFile), filepath.Join(dd, "*.err")} {
			lines = append(lines, serverErrors(readFile(f))...)
		}
		if len(lines) == 0 {
			out, _ := os.ReadFile(logPath)
			lines = errorLines(string(out))
		}
		return &ServerError{Op: "initialise datadir with", Server: prog, OptionFile: o.OptionFile,
			Exit: exitText(cmd.ProcessState, err), After: time.Since(start), Lines: lines, RunDir: o.RunDir,
			Hint: unknownOptionHint(lines, eff.user)}
	}
	return nil
}

// Start starts the server on its datadir with the effective option file (the
// user's file plus the tool's overrides: private datadir, socket, port, pid-file,
// log-error, tmpdir, loopback only) and waits until it accepts connections. A
// server that exits or does not answer in time is killed and reported as a
// *ServerError with its error-log lines; a port taken between choosing and binding
// is retried with another port.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.StartTimeout == 0 {
		o.StartTimeout = 3 * time.Minute
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = 3 * time.Minute
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := startOnce(ctx, o)
		if err == nil {
			return s, nil
		}
		lastErr = err
		var se *ServerError
		if !errors.As(err, &se) || !se.PortTaken() {
			return nil, err
		}
	}
	return nil, lastErr
}

// afterSpawn is called with the server's pid as soon as it runs: the fault
// suite's server that never gets ready (faultpoint.Hang), a test's.
var afterSpawn = faultpoint.Hang

func startOnce(ctx context.Context, o Options) (*Server, error) {
	port, err := pickPort()
	if p := faultpoint.TakenPort(); p != 0 {
		port = p // the fault suite's port race (a build with the faults tag)
	}
	if err != nil {
		return nil, fmt.Errorf("start: choose a port: %w", err)
	}
	ov, cleanup, err := newOverrides(o, port)
	if err != nil {
		return nil, err
	}
	ov.Settings = o.Settings
	eff, err := writeOptionFile(ctx, o, &ov)
	if err != nil {
		cleanup()
		return nil, err
	}
	cnf := eff.path
	for _, f := range []string{ov.LogError, filepath.Join(o.RunDir, StderrFile), ov.PidFile} {
		_ = os.Remove(f)
	}
	stderr, err := os.OpenFile(filepath.Join(o.RunDir, StderrFile), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("start: %w", err)
	}
	defer stderr.Close()
	cmd := exec.Command(o.Install.Server, "--defaults-file="+cnf)
	cmd.Dir = optionDir(o.OptionFile, o.RunDir)
	cmd.Env = serverEnv(o)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	s := &Server{opts: o, cmd: cmd, sockDir: filepath.Dir(ov.Socket), socket: ov.Socket, port: port,
		done: make(chan struct{}), eff: eff}
	s.started = time.Now()
	started := make(chan error, 1)
	go func() {
		// The parent-death signal is sent when the thread that forked the
		// server exits, not the process: the thread stays locked to this
		// goroutine, and so alive, until the server has exited.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := startPinned(o.CPUs, cmd.Start)
		started <- err
		if err != nil {
			return
		}
		_ = cmd.Wait()
		s.mu.Lock()
		s.state = cmd.ProcessState
		s.mu.Unlock()
		close(s.done)
	}()
	if err := <-started; err != nil {
		cleanup()
		return nil, fmt.Errorf("start %s: %w", o.Install.Server, err)
	}
	afterSpawn(cmd.Process.Pid)
	if err := s.waitReady(ctx); err != nil {
		s.kill()
		cleanup()
		return nil, err
	}
	return s, nil
}

// waitReady polls the socket until a connection runs a trivial query, the
// process exits, the start timeout passes or ctx ends; then it checks the
// tool's account (see checkAccounts).
func (s *Server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(s.opts.StartTimeout)
	db, err := sql.Open("mysql", s.DSN("")+"?timeout=2s")
	if err != nil {
		return err
	}
	defer db.Close()
	for {
		select {
		case <-s.done:
			return s.failure("start", "")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if _, err := os.Stat(s.socket); err == nil {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			var one int
			err := db.QueryRowContext(pctx, "SELECT 1").Scan(&one)
			cancel()
			if err == nil {
				return s.checkAccounts(ctx, db)
			}
			var me *mysql.MySQLError
			if errors.As(err, &me) && (me.Number == 1045 || me.Number == 1698) {
				// Up, but the tool's account is refused: waiting will not help.
				f := s.failure("start", "")
				f.Exit = ""
				f.Lines = append([]string{fmt.Sprintf("root cannot log in over the socket: %v (a datadir perfbisect did not initialise?)", err)}, f.Lines...)
				return f
			}
		}
		if time.Now().After(deadline) {
			f := s.failure("start", fmt.Sprintf("not accepting connections after %s", s.opts.StartTimeout))
			f.NotReady = true
			return f
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serverEnv is the environment of the server and its initialiser: marked for
// reaping, and UMASK/UMASK_DIR (mysqld's creation modes, octal) so its logs and
// files are 0600 and its directories 0700 like the rest of the run directory.
func serverEnv(o Options) []string {
	return append(reap.Mark(nil, o.owner()), "UMASK=0600", "UMASK_DIR=0700")
}

// checkAccounts makes sure the tool's account (root without a password) works
// over 127.0.0.1 too, unless the user's option file turns networking off, and
// drops anonymous accounts (mysql_install_db before MariaDB 10.4 and MySQL 5.7
// creates them; they capture logins of unknown users and confuse clients).
func (s *Server) checkAccounts(ctx context.Context, db *sql.DB) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if !s.networkingOff() && !s.userSet("require_secure_transport") {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Net, cfg.Addr = "root", "tcp", fmt.Sprintf("127.0.0.1:%d", s.port)
		cfg.Timeout = 5 * time.Second
		tcp, err := sql.Open("mysql", cfg.FormatDSN())
		if err == nil {
			var one int
			err = tcp.QueryRowContext(cctx, "SELECT 1").Scan(&one)
			tcp.Close()
		}
		if err != nil {
			f := s.failure("start", "")
			f.Exit = ""
			f.Lines = append([]string{fmt.Sprintf("root cannot log in over 127.0.0.1:%d: %v", s.port, err)}, f.Lines...)
			return f
		}
	}
	if s.eff != nil && s.eff.user != nil {
		if st, ok := s.eff.user.Last("grant_tables"); ok && strings.Contains(strings.ReplaceAll(st.Name, "-", "_"), "skip_") {
			return nil // no privilege checks at all: accounts neither matter nor can be dropped
		}
	}
	rows, err := db.QueryContext(cctx, "SELECT host FROM mysql.user WHERE user = ''")
	if err != nil {
		return fmt.Errorf("start: list anonymous accounts: %w", err)
	}
	var hosts []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err == nil {
			hosts = append(hosts, h)
		}
	}
	rows.Close()
	for _, h := range hosts {
		if _, err := db.ExecContext(cctx, "DROP USER ''@'"+strings.ReplaceAll(h, "'", "''")+"'"); err != nil {
			return fmt.Errorf("start: drop anonymous account ''@'%s': %w", h, err)
		}
	}
	return nil
}

// userSet reports whether the user's option file turns the boolean option key
// on (a bare name, or a value of ON/1/TRUE).
func (s *Server) userSet(key string) bool {
	if s.eff == nil || s.eff.user == nil {
		return false
	}
	st, ok := s.eff.user.Last(key)
	if !ok || strings.Contains(strings.ReplaceAll(st.Name, "-", "_"), "skip_") || strings.Contains(strings.ReplaceAll(st.Name, "-", "_"), "disable_") {
		return false
	}
	switch strings.ToUpper(st.Value) {
	case "", "ON", "1", "TRUE", "YES":
		return true
	}
	return false
}

// networkingOff reports whether the user's option file turns TCP off
// (skip-networking), in which case the server has only its socket.
func (s *Server) networkingOff() bool {
	if s.eff == nil || s.eff.user == nil {
		return false
	}
	st, ok := s.eff.user.Last("networking")
	return ok && (strings.HasPrefix(strings.ReplaceAll(st.Name, "-", "_"), "skip_") ||
		strings.HasPrefix(strings.ReplaceAll(st.Name, "-", "_"), "loose_skip_"))
}

// failure builds a *ServerError for the server's current state.
func (s *Server) failure(op, exit string) *ServerError {
	s.mu.Lock()
	st := s.state
	s.mu.Unlock()
	if exit == "" {
		exit = exitText(st, nil)
	}
	lines := errorLines(readFile(filepath.Join(s.opts.RunDir, ErrorLogFile)))
	lines = append(lines, errorLines(readFile(filepath.Join(s.opts.RunDir, StderrFile)))...)
	for i, l := range lines {
		lines[i] = redactLine(l) // the error travels into reports and the store
	}
	var sig syscall.Signal
	if st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			sig = ws.Signal()
		}
	}
	return &ServerError{Op: op, Server: s.opts.Install.Server, OptionFile: s.opts.OptionFile, Exit: exit,
		After: time.Since(s.started), Lines: lines, RunDir: s.opts.RunDir, Hint: unknownOptionHint(lines, s.eff.user), Signal: sig}
}

// DSN returns a go-sql-driver DSN for root over the server's unix socket, with db
// as the default database ("" for none).
func (s *Server) DSN(db string) string {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "unix"
	cfg.Addr = s.socket
	cfg.DBName = db
	return cfg.FormatDSN()
}

// Overridden lists the settings of the user's option file that the server does
// not get because the tool's overrides replace them (datadir, port, socket, user,
// log paths ...), with where each is set; nil when there are none.
func (s *Server) Overridden() []Override { return s.eff.overridden }

// Socket is the path of the server's unix socket.
func (s *Server) Socket() string { return s.socket }

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Alive reports whether the server process is still running.
func (s *Server) Alive() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Died returns a *ServerError describing how the server ended (exit status or
// signal, error-log lines) if it exited without Stop, and nil while it runs.
func (s *Server) Died() error {
	if s.Alive() {
		return nil
	}
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return nil
	}
	return s.failure("run", "")
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100 on
// every Linux architecture perfbisect runs on.
const clockTicks = 100

// CPUTime returns the user plus system CPU time the server process has used so far
// (all threads), from /proc/PID/stat, at 10 ms resolution.
func (s *Server) CPUTime() (time.Duration, error) {
	return ProcessCPUTime(s.Pid())
}

// ProcessCPUTime returns utime+stime of process pid from /proc/PID/stat.
func ProcessCPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu time of pid %d: %w", pid, err)
	}
	// The command name (field 2) may contain spaces; fields after it are fixed.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu time of pid %d: unreadable /proc stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu time of pid %d: short /proc stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpu time of pid %d: unreadable utime/stime", pid)
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// Stop shuts the server down cleanly and waits for it: the SQL SHUTDOWN
// statement where the version has it (MariaDB 10.0.4+, MySQL 5.7.9+), else or
// when it fails SIGTERM (mysqld's own clean shutdown); SIGTERM again after half
// of StopTimeout, and after StopTimeout SIGKILL to the process group. It
// returns the server's *ServerError if it had already died on its own, and an
// error when it had to be killed.
func (s *Server) Stop(ctx context.Context) error {
	defer os.RemoveAll(s.sockDir)
	if err := s.Died(); err != nil {
		return err
	}
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	if !s.sqlShutdown(ctx) {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
	}
	half := time.NewTimer(s.opts.StopTimeout / 2)
	defer half.Stop()
	t := time.NewTimer(s.opts.StopTimeout)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return nil
		case <-ctx.Done():
			s.kill()
			return ctx.Err()
		case <-half.C:
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
		case <-t.C:
			s.kill()
			return fmt.Errorf("stop %s: no clean shutdown after %s; killed (logs in %s)",
				filepath.Base(s.opts.Install.Server), s.opts.StopTimeout, s.opts.RunDir)
		}
	}
}

// sqlShutdown sends SHUTDOWN over the socket and reports whether the server
// accepted it.
func (s *Server) sqlShutdown(ctx context.Context) bool {
	in := s.opts.Install
	if in.Flavor == MariaDB && !in.atLeast("10.0.4") || in.Flavor != MariaDB && !in.atLeast("5.7.9") {
		return false
	}
	cfg, err := mysql.ParseDSN(s.DSN(""))
	if err != nil {
		return false
	}
	cfg.Timeout = 5 * time.Second
	// The connection dies with the server: closing it fails, and that is not
	// news worth a log line.
	cfg.Logger = &mysql.NopLogger{}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return false
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = db.ExecContext(sctx, "SHUTDOWN")
	return err == nil
}

// kill sends SIGKILL to the server's process group and waits for the exit.
func (s *Server) kill() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	_ = os.RemoveAll(s.sockDir)
}

// Kill ends the server at once (SIGKILL to its process group), for cleanup after
// errors and interrupts. It does nothing once the server has exited.
func (s *Server) Kill() {
	if s.Alive() {
		s.kill()
	}
	_ = os.RemoveAll(s.sockDir)
}

// newOverrides chooses the run's private paths. The socket goes into a fresh short
// directory under the system temp dir, since unix socket paths over about 107
// bytes fail. cleanup removes that directory.
func newOverrides(o Options, port int) (Overrides, func(), error) {
	sockDir, err := os.MkdirTemp("", "pb")
	if err == nil && len(filepath.Join(sockDir, "mysqld.sock")) > maxSocketPath {
		// A long TMPDIR: sun_path holds 108 bytes with its NUL.
		os.Remove(sockDir)
		sockDir, err = os.MkdirTemp("/tmp", "pb")
	}
	if err != nil {
		return Overrides{}, nil, fmt.Errorf("socket directory: %w", err)
	}
	cleanup := func() { os.RemoveAll(sockDir) }
	tmp := filepath.Join(o.RunDir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		cleanup()
		return Overrides{}, nil, err
	}
	// Remember the socket directory so that RemoveSocketDir can delete it after a
	// process that was killed before it could.
	_ = os.WriteFile(filepath.Join(o.RunDir, socketDirFile), []byte(sockDir+"\n"), 0o600)
	runDir, _ := filepath.Abs(o.RunDir)
	dd, _ := filepath.Abs(o.datadir())
	return Overrides{
		Basedir:  o.Install.Prefix,
		Datadir:  dd,
		Socket:   filepath.Join(sockDir, "mysqld.sock"),
		Port:     port,
		PidFile:  filepath.Join(runDir, "mysqld.pid"),
		LogError: filepath.Join(runDir, ErrorLogFile),
		Tmpdir:   filepath.Join(runDir, "tmp"),
		User:     currentUser(),
		RunDir:   runDir,
	}, cleanup, nil
}

// maxSocketPath is the longest unix socket path Linux takes (sun_path is 108
// bytes, NUL included).
const maxSocketPath = 107

// socketDirFile, in a run directory, names the run's socket directory.
const socketDirFile = "socket.dir"

// RemoveSocketDir deletes the socket directory recorded in runDir, if it is still
// there: the cleanup of a run whose process was killed (kill -9) before Stop.
// Only a directory holding nothing but mysqld's socket files is removed.
func RemoveSocketDir(runDir string) {
	b, err := os.ReadFile(filepath.Join(runDir, socketDirFile))
	if err != nil {
		return
	}
	d := strings.TrimSpace(string(b))
	ents, err := os.ReadDir(d)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "mysqld.sock") {
			return
		}
	}
	_ = os.RemoveAll(d)
}

// pickPort chooses the server's port (a variable so that a test can make it
// collide).
var pickPort = freePort

// freePort returns a loopback TCP port that was free a moment ago; a server that
// loses the race for it is restarted on another (Start).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portTaken(lines []string) bool {
	for _, l := range lines {
		if strings.Contains(l, "Address already in use") || strings.Contains(l, "Bind on TCP/IP port") {
			return true
		}
	}
	return false
}

// errorLines returns the lines of a log that say why a server failed: every
// "[ERROR]" line (at most 8), or else the last 5 lines.
func errorLines(log string) []string {
	return excerpt.Lines(log, excerpt.Contains("[ERROR]", "ERROR:"), 8, 5)
}

// serverErrors returns the [ERROR] lines of a server log (at most 8), none when
// there are none.
func serverErrors(log string) []string {
	return excerpt.Lines(log, excerpt.Contains("[ERROR]"), 8, 0)
}

// readFile returns the content of the file (or the first match of a glob), "" on error.
func readFile(pattern string) string {
	ms, _ := filepath.Glob(pattern)
	if len(ms) == 0 {
		return ""
	}
	b, _ := os.ReadFile(ms[0])
	return string(b)
}

func exitText(st *os.ProcessState, err error) string {
	if st == nil {
		if err != nil {
			return err.Error()
		}
		return "exited"
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exited %d", st.ExitCode())
}
