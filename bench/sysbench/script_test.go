package sysbench_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/perfbisect/perfbisect/bench"
	"github.com/perfbisect/perfbisect/bench/sysbench"
	"github.com/perfbisect/perfbisect/internal/testenv"
)

// copyLua copies cmd/perfbisect/testdata/lua (join.lua and the
// join_common.lua it requires) into a new directory.
func copyLua(t *testing.T) string {
	t.Helper()
	_, me, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(me), "..", "..", "cmd", "perfbisect", "testdata", "lua")
	dst := t.TempDir()
	for _, f := range []string{"join.lua", "join_common.lua"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestScriptIdentity: a script's identity holds its content and what it
// requires from beside it: an edit of the required file is another
// workload; the script's own options are in it too, and options
// perfbisect sets itself are refused.
func TestScriptIdentity(t *testing.T) {
	testenv.Require(t, testenv.Sysbench)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := copyLua(t)
	o := bench.DefaultOptions()
	s, err := sysbench.NewScript(ctx, filepath.Join(dir, "join.lua"), []string{"--span=10"}, o, sysbench.Binary{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Files, []string{"join.lua", "join_common.lua"}) || !strings.HasPrefix(s.Version, "sysbench 1.") {
		t.Errorf("files %v, version %q", s.Files, s.Version)
	}
	before := s.Identity()
	if before["workload options"] != "--span=10" || before["workload sysbench"] != s.Version {
		t.Errorf("identity: %v", before)
	}
	f, err := os.OpenFile(filepath.Join(dir, "join_common.lua"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n-- edited\n")
	f.Close()
	edited, err := sysbench.NewScript(ctx, filepath.Join(dir, "join.lua"), []string{"--span=10"}, o, sysbench.Binary{})
	if err != nil {
		t.Fatal(err)
	}
	if edited.Identity()["workload script content"] == before["workload script content"] || edited.DataKey() == s.DataKey() {
		t.Error("an edit of the file the script requires left its identity and data key as they were")
	}
	for _, opt := range []string{"--threads=4", "--time=5", "--mysql-socket=/x", "--events=10"} {
		if _, err := sysbench.NewScript(ctx, filepath.Join(dir, "join.lua"), []string{opt}, o, sysbench.Binary{}); !errors.Is(err, bench.ErrInvalidOption) {
			t.Errorf("%s: %v, want it refused", opt, err)
		}
	}
	if _, err := sysbench.NewScript(ctx, filepath.Join(dir, "join.lua"), []string{"--spam=1"}, o, sysbench.Binary{}); !errors.Is(err, sysbench.ErrScript) || !strings.Contains(err.Error(), "invalid option: --spam=1") {
		t.Errorf("an option the script does not declare: %v", err)
	}
	// A name sysbench finds in its own directory.
	rr, err := sysbench.NewScript(ctx, "select_random_ranges", nil, o, sysbench.Binary{})
	if err != nil || filepath.Base(rr.Path) != "select_random_ranges.lua" || !slices.Contains(rr.Files, "oltp_common.lua") {
		t.Errorf("select_random_ranges: %+v, %v", rr, err)
	}
}

// TestWorkloadKind: the one rule that says which kind a --workload value
// names.
func TestWorkloadKind(t *testing.T) {
	for word, want := range map[string]string{
		"oltp_read_only": bench.KindOLTP, "oltp_legacy": bench.KindOLTP,
		"select_random_ranges": bench.KindScript, "tpcc.lua": bench.KindScript, "/usr/share/sysbench/oltp_read_only.lua": bench.KindScript,
		"join.sql": bench.KindSQL, "./w/mix.workload": bench.KindSQL, "/abs/join.sql": bench.KindSQL,
	} {
		if got := bench.WorkloadKind(word); got != want {
			t.Errorf("WorkloadKind(%q) = %s, want %s", word, got, want)
		}
	}
}

// TestParseCustomArgs: a command line whose workload is a script or a SQL
// workload file: perfbisect's general options and the connection's are
// read, the rest is the workload's own.
func TestParseCustomArgs(t *testing.T) {
	inv, ok, err := sysbench.ParseCustomArgs(strings.Fields("--threads 4 tpcc.lua --scale=2 --use_fk 0 --mysql-socket=/s --time=3 --mysql_storage_engine=innodb run"))
	if err != nil || !ok {
		t.Fatalf("%v %v", ok, err)
	}
	if inv.Custom != "tpcc.lua" || inv.Command != "run" || inv.Options.Threads != 4 || inv.Options.Time != 3*time.Second || inv.Conn.Socket != "/s" ||
		strings.Join(inv.CustomArgs, " ") != "--scale=2 --use_fk=0 --mysql_storage_engine=innodb" {
		t.Errorf("%+v", inv)
	}
	if _, ok, _ := sysbench.ParseCustomArgs([]string{"oltp_read_only", "run"}); ok {
		t.Error("an OLTP workload read as a custom one")
	}
}

// TestScriptFailures: a script that fails in Lua is the script's fault
// (ErrScriptFailed), one whose statement the server refuses is not; a
// script without a prepare command has nothing to prepare; a file loaded
// with dofile is in the identity.
func TestScriptFailures(t *testing.T) {
	testenv.Require(t, testenv.Sysbench)
	conn := testConn(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	o := bench.DefaultOptions()
	o.Time, o.Threads = time.Second, 1
	newScript := func(path string) *sysbench.Script {
		s, err := sysbench.NewScript(ctx, path, nil, o, sysbench.Binary{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	lua := newScript(write("luaerr.lua", "function thread_init() drv = sysbench.sql.driver(); con = drv:connect() end\nfunction event() undefined_helper() end\n"))
	if err := lua.Prepare(ctx, conn); err != nil {
		t.Errorf("a script without a prepare command: %v", err)
	}
	_, err := lua.Run(ctx, conn, bench.Hooks{})
	if !errors.Is(err, sysbench.ErrScriptFailed) {
		t.Errorf("a Lua error: %v, want the script's fault", err)
	}
	sqlErr := newScript(write("sqlerr.lua", "function thread_init() drv = sysbench.sql.driver(); con = drv:connect() end\nfunction event() con:query('SELECT nosuchcolumn FROM nosuchtable') end\n"))
	_, err = sqlErr.Run(ctx, conn, bench.Hooks{})
	var se *sysbench.Error
	if !errors.As(err, &se) || errors.Is(err, sysbench.ErrScriptFailed) {
		t.Errorf("a statement the server refused: %v, want a sysbench failure that is not the script's", err)
	}
	write("helper.lua", "QUERY = 'SELECT 1'\n")
	main := write("main.lua", "dofile('helper.lua')\nfunction event() end\n")
	before := newScript(main)
	if !slices.Contains(before.Files, "helper.lua") {
		t.Errorf("files of a script that dofiles helper.lua: %v", before.Files)
	}
	write("helper.lua", "QUERY = 'SELECT 2'\n")
	after := newScript(main)
	if after.Digest == before.Digest || after.Identity()["workload script file helper.lua"] == before.Identity()["workload script file helper.lua"] {
		t.Error("an edit of a dofile'd file left the identity as it was")
	}
}

// TestScriptMetrics: a script that sends no transaction statement
// (join.lua: one SELECT per event) is judged by qps first; the same script
// with BEGIN and COMMIT around its query by tps first.
func TestScriptMetrics(t *testing.T) {
	testenv.Require(t, testenv.Sysbench)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := copyLua(t)
	o := bench.DefaultOptions()
	s, err := sysbench.NewScript(ctx, filepath.Join(dir, "join.lua"), nil, o, sysbench.Binary{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Metrics(); s.Transactions || got[0] != "qps" {
		t.Errorf("join.lua: transactions %v, metrics %v; want none, qps first", s.Transactions, got)
	}
	src, err := os.ReadFile(filepath.Join(dir, "join.lua"))
	if err != nil {
		t.Fatal(err)
	}
	trx := strings.Replace(string(src), "function event()", "function event()\n   con:query(\"BEGIN\")", 1)
	if trx == string(src) {
		t.Fatal("join.lua has no event function to edit")
	}
	if err := os.WriteFile(filepath.Join(dir, "join_trx.lua"), []byte(trx), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = sysbench.NewScript(ctx, filepath.Join(dir, "join_trx.lua"), nil, o, sysbench.Binary{})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Metrics(); !s.Transactions || got[0] != "tps" {
		t.Errorf("join_trx.lua: transactions %v, metrics %v; want tps first", s.Transactions, got)
	}
}
