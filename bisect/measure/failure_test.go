package measure

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"testing"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bench/sysbench"
	"github.com/perfbisect/perfbisect/bisect"
	"github.com/perfbisect/perfbisect/build"
	"github.com/perfbisect/perfbisect/internal/diskfault"
	"github.com/perfbisect/perfbisect/serverctl"
)

// TestJudgeEveryFailureSeen: whose each kind of failure a run has met is
// (the revision's: skip; transient: retried; the machine's or the user's:
// stop), as run returns it (judge, then the disk's check).
func TestJudgeEveryFailureSeen(t *testing.T) {
	crash := &serverctl.ServerError{Op: "run", Server: "mariadbd", Exit: "killed by signal 11", Signal: syscall.SIGSEGV,
		Lines: []string{"[ERROR] mysqld got signal 11 ;"}}
	oom := &serverctl.ServerError{Op: "run", Server: "mariadbd", Exit: "killed by signal 9", Signal: syscall.SIGKILL}
	refused := &serverctl.ServerError{Op: "start", Server: "mysqld", Exit: "exited 7",
		Lines: []string{"[ERROR] mysqld: unknown variable 'innodb_mtflush_threads=16'"}}
	portRace := &serverctl.ServerError{Op: "start", Server: "mariadbd", Exit: "exited 1",
		Lines: []string{"[ERROR] Can't start server: Bind on TCP/IP port. Got error: 98: Address already in use"}}
	mysqlxPort := &serverctl.ServerError{Op: "run", Server: "mysqld", Exit: "killed by signal 6", Signal: syscall.SIGABRT,
		Lines: []string{"[ERROR] [MY-011300] [Server] Plugin mysqlx reported: 'Setup of socket: '/tmp/x.sock' failed, can't create lock file'", "[ERROR] Plugin mysqlx reported: Bind on TCP/IP port 33060 failed: Address already in use"}}
	diskFull := &serverctl.ServerError{Op: "initialise datadir", Server: "mariadb-install-db", Exit: "exited 1",
		Lines: []string{`[ERROR] InnoDB: Error writing file './ibdata1' (Errcode: 28 "No space left on device")`}}
	compileError := &build.BuildError{Commit: "c", Step: "build", Err: errors.New("exit status 2"), Lines: []string{"sql_parse.cc:10: error: expected ';'"}}
	killedCompiler := &build.BuildError{Commit: "c", Step: "build", Err: errors.New("exit status 2"), Machine: true}
	slowBuild := &build.BuildError{Commit: "c", Step: "build", Err: errors.New("killed"), TimedOut: true}
	statement := &bench.StatementError{Statement: "point_selects", SQL: "SELECT c FROM sbtest1 WHERE id=?", Err: errors.New("Error 1054: Unknown column 'c'")}
	sysbenchFatal := &sysbench.Error{What: "oltp_read_only", Command: "run", Err: errors.New("exit status 1"), Output: "FATAL: mysql_stmt_execute() returned error 1146"}

	const (
		revision = "the revision's"
		retried  = "retried"
		machine  = "the machine's"
		disk     = "the disk's"
		stopped  = "interrupted"
	)
	cases := []struct {
		name   string
		f      failure
		cancel bool
		want   string
		reason string // an untestable revision's reason
	}{
		{"a compile error", failure{step: stepBuild, err: compileError}, false, revision, "build failed"},
		{"a build past its timeout", failure{step: stepBuild, err: slowBuild}, false, revision, "build timed out"},
		{"a compiler killed for memory", failure{step: stepBuild, err: killedCompiler}, false, machine, ""},
		{"cmake missing", failure{step: stepBuild, err: exec.ErrNotFound}, false, machine, ""},
		{"an install tree without a server", failure{step: stepFind, err: errors.New("no mysqld or mariadbd under /x/bin")}, false, revision, "no usable server in the build"},
		{"a crash at initialisation", failure{step: stepInit, err: crash}, false, revision, "datadir initialisation failed"},
		{"the initialiser not found", failure{step: stepInit, err: exec.ErrNotFound}, false, machine, ""},
		{"a full disk at initialisation", failure{step: stepInit, err: diskFull}, false, disk, ""},
		{"an option the server refuses", failure{step: stepStart, err: refused}, false, revision, "server did not start"},
		{"a port race lost at every start", failure{step: stepStart, err: portRace}, false, retried, ""},
		{"a crash at shutdown with the X plugin's port taken", failure{step: stepStop, err: mysqlxPort}, false, revision, "server crashed"},
		{"killed by SIGKILL at start", failure{step: stepStart, err: oom}, false, retried, ""},
		{"a crash while loading tables", failure{step: stepLoad, err: errors.New("connection refused"), died: crash}, false, revision, "server crashed while loading tables"},
		{"killed while loading tables", failure{step: stepLoad, err: errors.New("connection refused"), died: oom}, false, retried, ""},
		{"a load statement refused", failure{step: stepLoad, err: statement}, false, revision, "loading tables failed"},
		{"the user's Lua script failing at load", failure{step: stepLoad, err: sysbench.ErrScriptFailed}, false, machine, ""},
		{"a crash during the run", failure{step: stepWorkload, err: bench.ErrConnectionLost, died: crash}, false, revision, "server crashed during the run"},
		{"a crash the workload did not see", failure{step: stepWorkload, died: crash}, false, revision, "server crashed during the run"},
		{"killed by SIGKILL during the run", failure{step: stepWorkload, err: bench.ErrConnectionLost, died: oom}, false, retried, ""},
		{"a connection lost, the server alive", failure{step: stepWorkload, err: bench.ErrConnectionLost}, false, retried, ""},
		{"a refused connect, the server alive", failure{step: stepWorkload, err: errors.New("dial unix: connection refused")}, false, retried, ""},
		{"a workload statement refused", failure{step: stepWorkload, err: statement}, false, revision, "a workload statement failed"},
		{"sysbench's FATAL line", failure{step: stepWorkload, err: sysbenchFatal}, false, revision, "sysbench failed"},
		{"sysbench not installed", failure{step: stepWorkload, err: sysbench.ErrNoSysbench}, false, machine, ""},
		{"an option sysbench 1.0 lacks", failure{step: stepWorkload, err: sysbench.ErrNotInSysbench}, false, machine, ""},
		{"a crash at shutdown", failure{step: stepStop, err: crash}, false, revision, "server crashed"},
		{"a dirty shutdown after loading", failure{step: stepStopAfterLoad, err: crash}, false, revision, "server did not shut down cleanly after loading"},
		{"killed at shutdown", failure{step: stepStop, err: oom}, false, retried, ""},
		{"a crash as the user interrupts", failure{step: stepWorkload, err: bench.ErrConnectionLost, died: crash}, true, stopped, ""},
		{"a build stopped by the user", failure{step: stepBuild, err: compileError}, true, stopped, ""},
		{"nothing failed", failure{step: stepWorkload}, false, "", ""},
	}
	m := &Measurer{cfg: Config{StateDir: t.TempDir()}}
	for _, c := range cases {
		ctx, cancel := context.WithCancel(context.Background())
		if c.cancel {
			cancel()
		}
		err := m.diskFault(ctx, judge(ctx, "c0ffee", c.f))
		cancel()
		var u *bisect.UntestableError
		var de *diskfault.Error
		got := machine
		switch {
		case err == nil:
			got = ""
		case errors.Is(err, context.Canceled):
			got = stopped
		case errors.As(err, &de):
			got = disk
		case errors.As(err, &u):
			got = revision
		case transient(err):
			got = retried
		}
		if got != c.want {
			t.Errorf("%s: %v is %q, want %q", c.name, err, got, c.want)
			continue
		}
		if u != nil && (u.Reason != c.reason || u.Commit != "c0ffee") {
			t.Errorf("%s: the revision's failure says %q of %s, want %q", c.name, u.Reason, u.Commit, c.reason)
		}
		if got != "" && got != stopped && !errors.Is(err, c.f.err) && !errors.Is(err, c.f.died) && !errors.Is(err, errKilled) && !errors.Is(err, errTransient) {
			t.Errorf("%s: %v does not carry the step's error", c.name, err)
		}
	}
}
