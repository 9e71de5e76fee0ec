package serverctl

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"golang.org/x/sys/unix"
)

// StatusCounters are the SHOW GLOBAL STATUS counters kept with every run as
// deltas over the measured window: buffer pool misses and waits, fsyncs, row
// reads and lock waits show several public regressions before tps moves.
var StatusCounters = []string{
	"Innodb_buffer_pool_reads",         // logical reads that missed the buffer pool
	"Innodb_buffer_pool_read_requests", // logical reads
	"Innodb_buffer_pool_wait_free",     // waits for a free page
	"Innodb_data_fsyncs",
	"Innodb_log_waits",
	"Innodb_rows_read", // MySQL, Percona
	"Rows_read",        // MariaDB
	"Innodb_row_lock_waits",
	"Questions",
	"Com_commit",
}

// StatusGauges are the SHOW GLOBAL STATUS values kept as they are at the end of
// the window.
var StatusGauges = []string{"Threads_running", "Innodb_history_list_length"}

// Level reports whether a SHOW GLOBAL STATUS variable, or an
// information_schema.INNODB_METRICS counter by its own (lower-case) name, is
// a level rather than a count: a size, a position, an average or a number of
// things open now. Its change over a run is not work done, so it is never
// divided by the run's transactions. Names it does not know are counts.
func Level(name string) bool {
	if levels[name] {
		return true
	}
	for _, p := range levelPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// levelPrefixes begin families of levels in SHOW GLOBAL STATUS (MariaDB,
// MySQL, Percona) and INNODB_METRICS.
var levelPrefixes = []string{"Acl_", "Innodb_data_pending_", "Innodb_lsn_", "Innodb_mem_", "Innodb_onlineddl_pct", "Innodb_onlineddl_rowlog_pct",
	"Key_blocks_", "Aria_pagecache_blocks_", "Memory_used", "Open_", "Qcache_free_", "Ssl_ctx_", "Ssl_verify_", "Threadpool_", "Uptime",
	"Innodb_os_log_pending_", "Innodb_buffer_pool_load_", "Innodb_buffer_pool_dump_", "Innodb_buffer_pool_resize_",
	"buffer_pool_pages_", "buffer_pool_bytes_", "log_lsn_", "trx_undo_slots_"}

var levels = nameSet(
	"Innodb_buffer_pool_pages_data", "Innodb_buffer_pool_pages_dirty", "Innodb_buffer_pool_pages_free", "Innodb_buffer_pool_pages_misc",
	"Innodb_buffer_pool_pages_old", "Innodb_buffer_pool_pages_total", "Innodb_buffer_pool_pages_latched", "Innodb_buffer_pool_bytes_data",
	"Innodb_buffer_pool_bytes_dirty", "Innodb_checkpoint_age", "Innodb_checkpoint_max_age", "Innodb_history_list_length",
	"Innodb_ibuf_free_list", "Innodb_ibuf_segment_size", "Innodb_ibuf_size", "Innodb_page_size",
	"Innodb_row_lock_current_waits", "Innodb_row_lock_time_avg", "Innodb_row_lock_time_max", "Innodb_num_open_files",
	"Innodb_available_undo_logs", "Innodb_encryption_rotation_estimated_iops", "Innodb_current_row_locks", "Innodb_descriptors_memory",
	"Innodb_read_views_memory", "Innodb_oldest_view_low_limit_trx_id", "Innodb_purge_trx_id", "Innodb_purge_undo_no",
	"Innodb_redo_log_capacity_resized", "Innodb_redo_log_logical_size", "Innodb_redo_log_physical_size", "Innodb_redo_log_current_lsn",
	"Innodb_redo_log_checkpoint_lsn", "Innodb_redo_log_flushed_to_disk_lsn",
	"Binlog_snapshot_position", "Max_used_connections", "Prepared_stmt_count", "Qcache_queries_in_cache", "Qcache_total_blocks",
	"Rpl_semi_sync_master_clients", "Rpl_semi_sync_master_net_avg_wait_time", "Rpl_semi_sync_master_tx_avg_wait_time",
	"Rpl_semi_sync_master_wait_sessions", "Rpl_semi_sync_master_status", "Slave_open_temp_tables", "Slaves_connected", "Slaves_running",
	"Ssl_default_timeout", "Ssl_session_cache_size", "Ssl_used_session_cache_entries", "Stack_usage", "Table_open_cache_active_instances",
	"Tc_log_max_pages_used", "Tc_log_page_size", "Threads_cached", "Threads_connected", "Threads_running", "Delayed_insert_threads",
	"Not_flushed_delayed_rows",
	// Galera's levels (its other wsrep_ values count)
	"wsrep_cluster_size", "wsrep_cluster_conf_id", "wsrep_local_index", "wsrep_local_state", "wsrep_ready", "wsrep_connected",
	"wsrep_thread_count", "wsrep_applier_thread_count", "wsrep_rollbacker_thread_count", "wsrep_local_recv_queue",
	"wsrep_local_send_queue", "wsrep_cert_index_size", "wsrep_last_committed", "wsrep_open_transactions", "wsrep_open_connections",
	// INNODB_METRICS
	"buffer_pool_size", "trx_rseg_history_len", "trx_rseg_current_size", "purge_dml_delay_usec", "log_max_modified_age_async",
	"file_num_open_files", "innodb_page_size", "lock_row_lock_current_waits", "lock_row_lock_time_max", "lock_row_lock_time_avg",
)

func nameSet(names ...string) map[string]bool {
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}

// GlobalStatus reads SHOW GLOBAL STATUS over the server's socket and returns
// the integer-valued variables by name. Errors are the connection's or the
// query's.
func (s *Server) GlobalStatus(ctx context.Context) (map[string]int64, error) {
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS")
	if err != nil {
		return nil, fmt.Errorf("SHOW GLOBAL STATUS: %w", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, err
		}
		if v, err := strconv.ParseInt(value, 10, 64); err == nil {
			out[name] = v
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("SHOW GLOBAL STATUS: %w", err)
	}
	if _, ok := out["Innodb_history_list_length"]; !ok {
		// MySQL has no such status variable: the InnoDB metric has it.
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT `COUNT` FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'").Scan(&n); err == nil {
			out["Innodb_history_list_length"] = n
		}
	}
	return out, nil
}

// StatusDelta returns the window's numbers: after-before for StatusCounters
// and after's value for StatusGauges, for the names present in after.
func StatusDelta(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, k := range StatusCounters {
		if a, ok := after[k]; ok {
			out[k] = a - before[k]
		}
	}
	for _, k := range StatusGauges {
		if a, ok := after[k]; ok {
			out[k] = a
		}
	}
	return out
}

// PeakRSS returns the server process's peak resident set size in bytes
// (VmHWM of /proc/PID/status).
func (s *Server) PeakRSS() (int64, error) {
	return ProcessPeakRSS(s.Pid())
}

// ProcessPeakRSS returns process pid's peak resident set size in bytes
// (VmHWM of /proc/PID/status: the process alone, not its children).
func ProcessPeakRSS(pid int) (int64, error) {
	return procStatusBytes(pid, "VmHWM:")
}

func procStatusBytes(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			fs := strings.Fields(rest) // "123456 kB"
			if len(fs) == 2 && fs[1] == "kB" {
				kb, err := strconv.ParseInt(fs[0], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// Host is what a run records about the machine that measured it.
type Host struct {
	Kernel    string `json:"kernel"`    // uname release, e.g. 6.1.0-18-amd64
	CPUModel  string `json:"cpu_model"` // /proc/cpuinfo "model name"
	CPUs      int    `json:"cpus"`
	Governor  string `json:"governor,omitempty"` // cpufreq scaling governor of cpu0, "" without cpufreq
	MemBytes  int64  `json:"mem_bytes"`
	DatadirFS string `json:"datadir_fs"` // filesystem type of the datadir: tmpfs hides fsync costs
}

// HostFacts reads the machine's facts for a run whose datadir is under dir.
// Facts that cannot be read are left empty.
func HostFacts(dir string) Host {
	h := Host{CPUs: runtime.NumCPU(), DatadirFS: FilesystemType(dir)}
	var u syscall.Utsname
	if syscall.Uname(&u) == nil {
		h.Kernel = utsString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"); err == nil {
		h.Governor = strings.TrimSpace(string(b))
	}
	if m, err := procMeminfo("MemTotal:"); err == nil {
		h.MemBytes = m
	}
	return h
}

func procMeminfo(field string) (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field); ok {
			fs := strings.Fields(rest)
			if len(fs) == 2 && fs[1] == "kB" {
				kb, err := strconv.ParseInt(fs[0], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, fmt.Errorf("/proc/meminfo: no %s", field)
}

func utsString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// filesystem magic numbers (statfs(2)) of the types a datadir is found on.
var fsNames = map[int64]string{
	0xEF53:     "ext4", // ext2/3/4 share it
	0x58465342: "xfs",
	0x9123683E: "btrfs",
	0x01021994: "tmpfs",
	0x794C7630: "overlayfs",
	0x2FC12FC1: "zfs",
	0x6969:     "nfs",
	0x65735546: "fuse",
	0xF2F52010: "f2fs",
	0x858458F6: "ramfs",
}

// FilesystemType names the filesystem dir is on (ext4, xfs, tmpfs, ...), or
// "0x<magic>" for one this table does not know, "" when statfs fails.
func FilesystemType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return ""
	}
	if n, ok := fsNames[int64(st.Type)]; ok {
		return n
	}
	return fmt.Sprintf("0x%x", st.Type)
}

// MachineBusy returns the CPU time the machine's CPUs have spent running
// processes since boot (user, nice and system of /proc/stat; not idle,
// iowait, or the kernel's irq and softirq time, which a server's own I/O
// raises) and the time a hypervisor ran something else while they wanted
// to run (steal), at the kernel's 10 ms resolution: the busy difference over
// a window, less the CPU time of the server and of perfbisect, is what other
// processes took from it. The machine's CPUs are the ones this process may
// run on (its affinity: a cpuset, taskset, a job engine's allocation) when
// those are fewer than the online CPUs: a runner host that is a share of a
// machine is disturbed by what runs on its CPUs, not by its neighbours on
// theirs. Errors: /proc/stat cannot be read or parsed.
func MachineBusy() (busy, steal time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	return machineBusy(string(b), ownCPUs())
}

// machineBusy reads MachineBusy from a /proc/stat text: its cpu line, or
// the sum of the lines of the CPUs in own when own is not nil.
func machineBusy(stat string, own map[int]bool) (busy, steal time.Duration, err error) {
	var ticks [9]int64
	found := false
	for _, line := range strings.Split(stat, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if own == nil {
			if f[0] != "cpu" {
				continue
			}
		} else if n, err := strconv.Atoi(strings.TrimPrefix(f[0], "cpu")); err != nil || !own[n] {
			continue
		}
		found = true
		for _, i := range []int{1, 2, 3, 8} { // user nice system (idle iowait irq softirq) steal
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("/proc/stat: %q: %w", line, err)
			}
			ticks[i] += v
		}
		if own == nil {
			break
		}
	}
	if !found {
		return 0, 0, fmt.Errorf("/proc/stat: no cpu line for %v", own)
	}
	const tick = time.Second / 100 // USER_HZ is 100 on Linux
	busy = time.Duration(ticks[1]+ticks[2]+ticks[3]) * tick
	return busy, time.Duration(ticks[8]) * tick, nil
}

// MachineCPUs returns the number of the machine's CPUs MachineBusy counts:
// those this process may run on when they are fewer than the online CPUs
// /proc/stat lists, else those; runtime.NumCPU() when it cannot be read.
func MachineCPUs() int {
	if own := ownCPUs(); own != nil {
		return len(own)
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return runtime.NumCPU()
	}
	n := onlineCPUs(string(b))
	if n == 0 {
		return runtime.NumCPU()
	}
	return n
}

// onlineCPUs counts the cpuN lines of a /proc/stat text.
func onlineCPUs(stat string) int {
	n := 0
	for _, l := range strings.Split(stat, "\n") {
		if len(l) > 3 && strings.HasPrefix(l, "cpu") && l[3] >= '0' && l[3] <= '9' {
			n++
		}
	}
	return n
}

// ownCPUs is the set of CPUs this process may run on when it is smaller
// than the machine's online CPUs, else nil (the whole machine).
func ownCPUs() map[int]bool {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	online := onlineCPUs(string(b))
	if set.Count() >= online {
		return nil
	}
	own := map[int]bool{}
	for i := 0; i < 1024 && len(own) < set.Count(); i++ {
		if set.IsSet(i) {
			own[i] = true
		}
	}
	return own
}

// SelfCPU returns the CPU time (user and system) this process's threads have
// used. Errors: getrusage(2) failed.
func SelfCPU() (time.Duration, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// LoadAverage returns the machine's 1-minute load average (/proc/loadavg).
// Errors: the file cannot be read or parsed.
func LoadAverage() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/loadavg: empty")
	}
	return strconv.ParseFloat(f[0], 64)
}

// GlobalVariables reads SHOW GLOBAL VARIABLES over the server's socket: every
// setting's value as the server shows it, by name. Errors are the
// connection's or the query's.
func (s *Server) GlobalVariables(ctx context.Context) (map[string]string, error) {
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL VARIABLES")
	if err != nil {
		return nil, fmt.Errorf("SHOW GLOBAL VARIABLES: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name string
		var value sql.NullString
		if err := rows.Scan(&name, &value); err != nil {
			return nil, err
		}
		out[name] = value.String
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("SHOW GLOBAL VARIABLES: %w", err)
	}
	return out, nil
}

// InnoDBMetrics turns every counter of information_schema.INNODB_METRICS
// on (innodb_monitor_enable = all; a server without it is left as it is)
// and returns the enabled ones' counts by name. Errors are the connection's
// or the query's; a server without the table returns none.
func (s *Server) InnoDBMetrics(ctx context.Context, enable bool) (map[string]int64, error) {
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if enable {
		_, _ = db.ExecContext(ctx, "SET GLOBAL innodb_monitor_enable = 'all'")
	}
	rows, err := db.QueryContext(ctx, "SELECT NAME, `COUNT` FROM information_schema.INNODB_METRICS WHERE STATUS = 'enabled'")
	if err != nil {
		return map[string]int64{}, nil // no InnoDB, or no such table: nothing to read
	}
	return namedInts(rows, func(string) bool { return true })
}

// namedInts reads rows of a name and an integer into a map, the names
// keep says, and closes rows.
func namedInts(rows *sql.Rows, keep func(name string) bool) (map[string]int64, error) {
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, err
		}
		if keep(name) {
			out[name] = n
		}
	}
	return out, rows.Err()
}

// erUnknownSystemVariable is the server's error for a variable it does not
// have: ER_UNKNOWN_SYSTEM_VARIABLE, 1193.
const erUnknownSystemVariable = 1193

// WaitSettings are the option lines (Options.Settings) that turn
// performance_schema on with only its file I/O and lock wait instruments
// enabled and timed, for WaitSummary; loose, so a server without
// performance_schema starts. Every other instrument is off: timing every
// latch costs more than the changes it would explain; statements and
// their digests are on (DigestSettings) only where the workload cannot
// time its statements itself.
var WaitSettings = []string{"loose-performance-schema=ON", "loose-performance-schema-instrument=%=OFF",
	"loose-performance-schema-instrument=wait/io/file/%=ON", "loose-performance-schema-instrument=wait/lock/%=ON",
	"loose-performance-schema-consumer-statements-digest=OFF"}

// DigestSettings are the option lines added after WaitSettings for a
// workload that cannot time its own statements (one run by sysbench): the
// statement instruments, their digests and the long history of
// statements (where StatementDigests finds a sample of each) on.
var DigestSettings = []string{"loose-performance-schema-instrument=statement/%=ON",
	"loose-performance-schema-consumer-statements-digest=ON", "loose-performance-schema-consumer-events-statements-current=ON",
	"loose-performance-schema-consumer-events-statements-history-long=ON"}

// Digest is one statement digest's totals so far in performance_schema
// (events_statements_summary_by_digest): the schema it ran in, the digest
// and its normalised text (? for the literals), how often it ran and the
// time it took in the server (picoseconds), with one execution's text
// from the long history of statements ("" when none is there).
type Digest struct {
	Schema, Digest, Text string
	Count, Time          int64
	Sample               string
}

// StatementDigests reads performance_schema's statement digests that ran
// (COUNT_STAR > 0); with samples, each gets one execution of the same
// schema and digest from events_statements_history_long where it holds
// one. It is empty when performance_schema is off or missing, or the
// server has no digests (a MySQL 5.5); a table or column an older server
// lacks gives none. Statements the server ran as prepared ones
// (COM_STMT_EXECUTE) have no digest on MariaDB. Errors: the server could
// not be read.
func (s *Server) StatementDigests(ctx context.Context, samples bool) ([]Digest, error) {
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if on, err := performanceSchemaOn(ctx, db); err != nil || !on {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, `SELECT IFNULL(SCHEMA_NAME, ''), DIGEST, DIGEST_TEXT, COUNT_STAR, SUM_TIMER_WAIT
		FROM performance_schema.events_statements_summary_by_digest WHERE COUNT_STAR > 0 AND DIGEST IS NOT NULL`)
	if noSuchTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Digest
	at := map[string]int{}
	for rows.Next() {
		var d Digest
		var text sql.NullString
		if err := rows.Scan(&d.Schema, &d.Digest, &text, &d.Count, &d.Time); err != nil {
			return nil, err
		}
		d.Text = text.String
		at[d.Schema+"\x00"+d.Digest] = len(out)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil || !samples {
		return out, err
	}
	// The history is a ring of the latest statements of every thread: one
	// execution of each digest it holds is the sample.
	hist, err := db.QueryContext(ctx, `SELECT IFNULL(CURRENT_SCHEMA, ''), DIGEST, SQL_TEXT FROM performance_schema.events_statements_history_long
		WHERE DIGEST IS NOT NULL AND SQL_TEXT IS NOT NULL`)
	if noSuchTable(err) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer hist.Close()
	for hist.Next() {
		var schema, digest, text string
		if err := hist.Scan(&schema, &digest, &text); err != nil {
			return nil, err
		}
		if i, ok := at[schema+"\x00"+digest]; ok {
			out[i].Sample = text
		}
	}
	return out, hist.Err()
}

// noSuchTable says err is the server's for a table or a column it does
// not have (ER_NO_SUCH_TABLE 1146, ER_BAD_FIELD_ERROR 1054): an older
// performance_schema.
func noSuchTable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1146 || me.Number == 1054)
}

// performanceSchemaOn says whether the server has performance_schema and
// it is on.
func performanceSchemaOn(ctx context.Context, db *sql.DB) (bool, error) {
	var on string
	err := db.QueryRowContext(ctx, "SELECT @@performance_schema").Scan(&on)
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &me) && me.Number == erUnknownSystemVariable:
		return false, nil // a server without performance_schema
	case err != nil:
		return false, err
	}
	return on == "1" || strings.EqualFold(on, "ON"), nil
}

// WaitSummary reads performance_schema's time waited so far per wait event
// (events_waits_summary_global_by_event_name, SUM_TIMER_WAIT in
// picoseconds) of the events that occurred, leaving out the client's
// side of the conversation (idle, wait/io/socket/), condition waits,
// where the server's own threads sleep between jobs, and table I/O
// (wait/io/table/: the time of storage engine calls, which holds the file
// and lock waits inside them). It is empty when performance_schema is off
// or missing. Errors: the server could not be read.
func (s *Server) WaitSummary(ctx context.Context) (map[string]int64, error) {
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if on, err := performanceSchemaOn(ctx, db); err != nil {
		return nil, err
	} else if !on {
		return map[string]int64{}, nil
	}
	rows, err := db.QueryContext(ctx, "SELECT EVENT_NAME, SUM_TIMER_WAIT FROM performance_schema.events_waits_summary_global_by_event_name WHERE COUNT_STAR > 0")
	if err != nil {
		return nil, err
	}
	return namedInts(rows, func(name string) bool {
		return name != "idle" && !strings.HasPrefix(name, "wait/io/socket/") && !strings.HasPrefix(name, "wait/synch/cond/") && !strings.HasPrefix(name, "wait/io/table/")
	})
}
