#!/usr/bin/env bash
# measure-fixture-effect.sh - measure how much the fixture's culprit options
# slow the server down under sysbench, and a few costs of a bisection step
# (sysbench prepare time, server start-until-connectable time, datadir size).
#
# See --help.  Everything runs in a fresh temporary directory with a private
# server on a Unix socket (--skip-networking); every server started here is
# stopped before the script exits.  /var/lib/mysql is never touched.
set -euo pipefail

prog=$(basename "$0")
here=$(cd "$(dirname "$0")" && pwd)

# Defaults of the fixture generator are the source of truth for the options.
fixture_default() { # $1 = variable name in make-fixture.sh
	sed -n "s/^$1=\"\\(.*\\)\"\$/\\1/p" "$here/make-fixture.sh"
}

server=$(PATH="$PATH:/usr/sbin" command -v mariadbd || echo /usr/sbin/mariadbd)
install_db=$(command -v mariadb-install-db || echo /usr/bin/mariadb-install-db)
a_server="" b_server=""
a_options=$(fixture_default DEFAULT_BASE_OPTIONS)
b_options=$(fixture_default DEFAULT_CULPRIT_OPTIONS)
workload=oltp_read_only
table_size=100000
range_size=1000
threads=2
run_time=3
warmup=0
runs=5
log_size=48M
write_check=1
write_workload=oltp_update_non_index
write_a_options="--skip-log-bin --innodb-flush-log-at-trx-commit=2"
write_b_options="--log-bin --sync-binlog=1 --innodb-flush-log-at-trx-commit=1"
costs=1
keep=0
workdir=""

usage() {
	cat <<EOF
Usage: $prog [options]

Prints sysbench throughput of variant A (good) and B (culprit) side by side
(runs interleaved A,B,A,B,..., each run on a freshly started server), their
medians/ranges and the drop, plus setup costs.

Variant options (a variant is a server binary plus extra server options):
  --a-options STR      options of A (default: make-fixture.sh's base options:
                       "$a_options")
  --b-options STR      options of B (default: make-fixture.sh's culprit options:
                       "$b_options")
  --a-server PATH      server binary of A (default: $server); e.g. the
                       good fixture build's PREFIX/bin/mariadbd (then pass
                       --a-options "" since its options are compiled in)
  --b-server PATH      server binary of B (default: $server)
Benchmark:
  --workload NAME      sysbench test (default: $workload)
  --table-size N       rows in the one table (default: $table_size)
  --range-size N       --range-size of the range queries (default: $range_size)
  --threads N          (default: $threads)
  --time SECS          length of one run (default: $run_time)
  --warmup SECS        unmeasured sysbench run before each measured run
                       (default: $warmup; sysbench 1.0.20 has no --warmup-time)
  --runs N             runs per variant (default: $runs)
  --log-file-size SZ   --innodb-log-file-size used for init and the costs
                       (default: $log_size)
  --no-write-check     skip the write-workload alternative
  --write-a-options STR  (default: "$write_a_options")
  --write-b-options STR  (default: "$write_b_options")
  --no-costs           skip prepare/start-time/datadir-size measurements
  --workdir DIR        use DIR (must not exist) instead of a mktemp directory
  --keep               keep the work directory
  -h, --help
EOF
}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 2
}

while [[ $# -gt 0 ]]; do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--no-write-check)
		write_check=0
		shift
		;;
	--no-costs)
		costs=0
		shift
		;;
	--keep)
		keep=1
		shift
		;;
	--a-options | --b-options | --a-server | --b-server | --workload | --table-size | \
		--range-size | --threads | --time | --warmup | --runs | --log-file-size | \
		--write-a-options | --write-b-options | --workdir)
		[[ $# -ge 2 ]] || die "option $1 needs an argument"
		case $1 in
		--a-options) a_options=$2 ;;
		--b-options) b_options=$2 ;;
		--a-server) a_server=$2 ;;
		--b-server) b_server=$2 ;;
		--workload) workload=$2 ;;
		--table-size) table_size=$2 ;;
		--range-size) range_size=$2 ;;
		--threads) threads=$2 ;;
		--time) run_time=$2 ;;
		--warmup) warmup=$2 ;;
		--runs) runs=$2 ;;
		--log-file-size) log_size=$2 ;;
		--write-a-options) write_a_options=$2 ;;
		--write-b-options) write_b_options=$2 ;;
		--workdir) workdir=$2 ;;
		esac
		shift 2
		;;
	*) die "unknown argument: $1 (see --help)" ;;
	esac
done
[[ -n $a_server ]] || a_server=$server
[[ -n $b_server ]] || b_server=$server
for b in "$a_server" "$b_server" "$install_db"; do
	[[ -x $b ]] || die "not executable: $b"
done
command -v sysbench >/dev/null || die "sysbench not found"
command -v mariadb >/dev/null || die "mariadb client not found"

if [[ -n $workdir ]]; then
	[[ ! -e $workdir ]] || die "$workdir exists"
	mkdir -p -- "$workdir"
else
	# Short path: the socket path must fit in sun_path (107 bytes).
	workdir=$(mktemp -d /tmp/pbm.XXXXXX)
fi
workdir=$(cd -- "$workdir" && pwd -P)
sock=$workdir/s.sock
[[ ${#sock} -lt 100 ]] || die "socket path too long (${#sock} bytes): $sock"
printf '[mariadbd]\n' >"$workdir/my.cnf"

server_pid=""
cleanup() {
	if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [[ $keep -eq 0 ]]; then
		rm -rf -- "$workdir"
	else
		printf 'kept %s\n' "$workdir" >&2
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ms() {
	local t
	t=$(date +%s%N)
	printf '%d' $((t / 1000000))
}

mysql_root() {
	mariadb --no-defaults -S "$sock" -uroot "$@"
}

# The functions below report durations in the global variable "ms" (they
# must not run in a $(...) subshell: start_server records the server's pid).
ms=0

# init_datadir DIR [extra server options...]
init_datadir() {
	local d=$1 t0 t1
	shift
	t0=$(now_ms)
	"$install_db" "--defaults-file=$workdir/my.cnf" --user=root \
		--auth-root-authentication-method=normal --skip-test-db \
		"--datadir=$d" "$@" >"$workdir/init.log" 2>&1 ||
		{
			cat "$workdir/init.log" >&2
			die "mariadb-install-db failed"
		}
	t1=$(now_ms)
	ms=$((t1 - t0))
}

# start_server BINARY DATADIR [options...]: starts the server in the
# background and waits until it accepts connections.
start_server() {
	local bin=$1 d=$2 t0 t1 i
	shift 2
	rm -f -- "$sock"
	t0=$(now_ms)
	"$bin" "--defaults-file=$workdir/my.cnf" --user=root "--datadir=$d" \
		"--socket=$sock" --skip-networking "--log-error=$workdir/error.log" \
		"--pid-file=$workdir/server.pid" "$@" >>"$workdir/server.stderr" 2>&1 &
	server_pid=$!
	for ((i = 0; i < 6000; i++)); do
		if mysql_root -e 'SELECT 1' >/dev/null 2>&1; then
			t1=$(now_ms)
			ms=$((t1 - t0))
			return 0
		fi
		if ! kill -0 "$server_pid" 2>/dev/null; then
			tail -n 20 "$workdir/error.log" >&2 || true
			die "server exited during startup ($bin $*)"
		fi
		sleep 0.01
	done
	die "server did not become connectable within 60 s"
}

stop_server() {
	[[ -n $server_pid ]] || return 0
	kill -TERM "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}

sb_common() {
	printf '%s\n' "--db-driver=mysql" "--mysql-socket=$sock" --mysql-user=root \
		--mysql-db=sbtest --tables=1 "--table-size=$table_size"
}

sb_prepare() {
	local t0 t1
	local -a common
	mapfile -t common < <(sb_common)
	mysql_root -e 'CREATE DATABASE IF NOT EXISTS sbtest'
	t0=$(now_ms)
	sysbench "$workload" "${common[@]}" --threads=1 prepare >"$workdir/prepare.log" 2>&1 ||
		{
			cat "$workdir/prepare.log" >&2
			die "sysbench prepare failed"
		}
	t1=$(now_ms)
	ms=$((t1 - t0))
}

# sb_run WORKLOAD: prints transactions per second
sb_run() {
	local wl=$1 out
	local -a common
	mapfile -t common < <(sb_common)
	local -a opts=("${common[@]}" "--threads=$threads" --rand-type=uniform
		"--range-size=$range_size" --report-interval=0)
	# sysbench 1.0.20 has no --warmup-time: warm up with a separate run.
	if [[ $warmup != 0 ]]; then
		sysbench "$wl" "${opts[@]}" "--time=$warmup" run >/dev/null 2>&1 ||
			die "sysbench warmup run failed"
	fi
	out=$(sysbench "$wl" "${opts[@]}" "--time=$run_time" run 2>&1) || {
		printf '%s\n' "$out" >&2
		die "sysbench run failed"
	}
	printf '%s\n' "$out" | sed -n 's/.*transactions: .*(\([0-9.]*\) per sec.).*/\1/p'
}

# stats: reads numbers on stdin, prints "median=M min=A max=B"
stats() {
	sort -g | awk '{v[NR]=$1} END {
		if (NR == 0) { print "median=NA"; exit }
		m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2
		printf "median=%.1f min=%.1f max=%.1f n=%d\n", m, v[1], v[NR], NR }'
}

median_of() { stats | sed 's/^median=\([^ ]*\).*/\1/'; }

du_mb() { du -sm -- "$1" | cut -f1; }

# compare WORKLOAD "A options" "B options": interleaved runs on datadir $data
compare() {
	local wl=$1 aopt=$2 bopt=$3 i tps
	local -a ao bo
	read -r -a ao <<<"$aopt" || true
	read -r -a bo <<<"$bopt" || true
	: >"$workdir/a.tps"
	: >"$workdir/b.tps"
	printf '\n== %s: table-size=%s range-size=%s threads=%s time=%ss warmup=%ss runs=%s\n' \
		"$wl" "$table_size" "$range_size" "$threads" "$run_time" "$warmup" "$runs"
	printf 'A: %s %s\nB: %s %s\n' "$a_server" "$aopt" "$b_server" "$bopt"
	printf 'sysbench %s --db-driver=mysql --mysql-socket=S --mysql-user=root --mysql-db=sbtest --tables=1 --table-size=%s --threads=%s --rand-type=uniform --range-size=%s --report-interval=0 --time=%s run\n' \
		"$wl" "$table_size" "$threads" "$range_size" "$run_time"
	# The datadir's redo log size comes first, so a variant can override it.
	ao=("--innodb-log-file-size=$log_size" "${ao[@]}")
	bo=("--innodb-log-file-size=$log_size" "${bo[@]}")
	for ((i = 1; i <= runs; i++)); do
		start_server "$a_server" "$data" "${ao[@]}"
		tps=$(sb_run "$wl")
		stop_server
		printf '%s\n' "$tps" >>"$workdir/a.tps"
		printf 'run %d A %s tps' "$i" "$tps"
		start_server "$b_server" "$data" "${bo[@]}"
		tps=$(sb_run "$wl")
		stop_server
		printf '%s\n' "$tps" >>"$workdir/b.tps"
		printf '  B %s tps\n' "$tps"
	done
	local am bm
	am=$(median_of <"$workdir/a.tps")
	bm=$(median_of <"$workdir/b.tps")
	printf 'A tps: %s\n' "$(stats <"$workdir/a.tps")"
	printf 'B tps: %s\n' "$(stats <"$workdir/b.tps")"
	awk -v a="$am" -v b="$bm" 'BEGIN { if (a > 0) printf "change of median B vs A: %+.1f%%\n", (b - a) * 100 / a }'
}

printf 'server: %s\n' "$("$a_server" --version)"
printf 'sysbench: %s\n' "$(sysbench --version)"
printf 'workdir: %s\n' "$workdir"

data=$workdir/data
printf '\n== setup\n'
init_datadir "$data" "--innodb-log-file-size=$log_size"
printf 'mariadb-install-db (--innodb-log-file-size=%s): %d ms, datadir %s MB\n' \
	"$log_size" "$ms" "$(du_mb "$data")"
start_server "$server" "$data" "--innodb-log-file-size=$log_size" --innodb-buffer-pool-size=256M
printf 'first start: %d ms\n' "$ms"
sb_prepare
printf 'sysbench prepare (%s rows, 1 table): %d ms\n' "$table_size" "$ms"
stop_server
printf 'datadir after init+prepare: %s MB\n' "$(du_mb "$data")"

compare "$workload" "$a_options" "$b_options"

if [[ $write_check -eq 1 ]]; then
	compare "$write_workload" "$write_a_options" "$write_b_options"
	# Binary logs of the write runs are not part of the setup costs.
	rm -f -- "$data"/*-bin.* "$data"/*-bin.index
fi

if [[ $costs -eq 1 ]]; then
	printf '\n== start-until-connectable (3 starts each, datadir initialised with the same log size)\n'
	for ls in default "$log_size"; do
		d=$workdir/data-$ls
		opts=()
		[[ $ls == default ]] || opts=("--innodb-log-file-size=$ls")
		init_datadir "$d" "${opts[@]}"
		init_ms=$ms
		: >"$workdir/start.ms"
		for i in 1 2 3; do
			start_server "$server" "$d" "${opts[@]}"
			printf '%d\n' "$ms" >>"$workdir/start.ms"
			if [[ $i -eq 1 ]]; then
				sb_prepare
				prep_ms=$ms
			fi
			stop_server
		done
		printf 'innodb-log-file-size=%s: init %d ms, start ms: %s (%s), prepare %d ms, datadir after init+prepare %s MB\n' \
			"$ls" "$init_ms" "$(tr '\n' ' ' <"$workdir/start.ms")" \
			"$(stats <"$workdir/start.ms")" "$prep_ms" "$(du_mb "$d")"
	done
fi
