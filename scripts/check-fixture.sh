#!/usr/bin/env bash
# check-fixture.sh - end-to-end check of scripts/make-fixture.sh.
#
# Generates fixtures in a temporary directory, builds the good, bad, broken and
# fixed trees with CMake, initialises a datadir with the installed
# bin/mariadb-install-db, starts the installed bin/mariadbd of the good and bad
# builds and checks that the launcher exec()s the system server (same pid, no
# child) with the compiled-in options.  Needs the system mariadbd,
# mariadb-install-db and the mariadb client, cmake and a C compiler.
#
# Prints one line per check and ends with "N passed, N failed"; exits 1 if a
# check failed.  Every server it starts is stopped; /var/lib/mysql is never
# touched.
set -euo pipefail

prog=$(basename "$0")
here=$(cd "$(dirname "$0")" && pwd)
keep=0

usage() {
	cat <<EOF
Usage: $prog [--keep]

End-to-end check of make-fixture.sh (see the header of this script).
  --keep    keep the temporary directory
EOF
}

case ${1:-} in
-h | --help)
	usage
	exit 0
	;;
--keep) keep=1 ;;
"") ;;
*)
	usage >&2
	exit 2
	;;
esac

passed=0
failed=0
ok() {
	passed=$((passed + 1))
	printf 'ok   %s\n' "$*"
}
fail() {
	failed=$((failed + 1))
	printf 'FAIL %s\n' "$*"
}
fails() { # succeeds if COMMAND... fails
	! "$@"
}
check() { # check DESCRIPTION COMMAND...
	local d=$1
	shift
	if "$@"; then ok "$d"; else fail "$d"; fi
}

work=$(mktemp -d /tmp/pbf.XXXXXX)
server_pid=""
cleanup() {
	if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [[ $keep -eq 0 ]]; then rm -rf -- "$work"; else printf 'kept %s\n' "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache); fi

# build REPO REV NAME: export REV, configure, build, install into $work/p-NAME
build() {
	local repo=$1 rev=$2 name=$3
	mkdir -p "$work/src-$name"
	git -C "$repo" archive "$rev" | tar -x -C "$work/src-$name"
	cmake -S "$work/src-$name" -B "$work/build-$name" "${launcher[@]}" \
		"-DCMAKE_INSTALL_PREFIX=$work/prefix-$name" >"$work/build-$name.log" 2>&1 &&
		cmake --build "$work/build-$name" >>"$work/build-$name.log" 2>&1 &&
		cmake --install "$work/build-$name" --prefix "$work/p-$name" >>"$work/build-$name.log" 2>&1
}

free_port() {
	local p hex
	for ((p = 20000 + $$ % 20000; ; p++)); do
		printf -v hex ':%04X ' "$p"
		if ! grep -q "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
			printf '%d' "$p"
			return
		fi
	done
}

# --- generator -------------------------------------------------------------
repo=$work/repo
if "$here/make-fixture.sh" -q "$repo"; then ok "make-fixture.sh default"; else
	fail "make-fixture.sh default"
	printf '%d passed, %d failed\n' "$passed" "$failed"
	exit 1
fi
# shellcheck disable=SC1091
. "$repo/.git/perfbisect-fixture.env"
culprit=$(cat "$repo/.git/perfbisect-culprit")
check "culprit file holds a full sha" [ "${#culprit}" -eq 40 ]
check "culprit is the only commit changing sql/server_options.h" \
	[ "$(git -C "$repo" log --format=%H good..bad -- sql/server_options.h)" = "$culprit" ]
check "40 commits after good" [ "$(git -C "$repo" rev-list --count good..bad)" -eq 40 ]
check "culprit at position 23" \
	[ "$(git -C "$repo" rev-list --count "good..$culprit")" -eq 23 ]
check "broken at position 11, fixed at 12" \
	[ "$(git -C "$repo" rev-list --count "good..$BROKEN_SHA")" -eq 11 -a \
	"$(git -C "$repo" rev-parse "$FIXED_SHA^")" = "$BROKEN_SHA" ]
"$here/make-fixture.sh" -q "$work/repo2"
check "same parameters give the same shas" \
	[ "$(grep _SHA= "$repo/.git/perfbisect-fixture.env")" = "$(grep _SHA= "$work/repo2/.git/perfbisect-fixture.env")" ]
check "refuses a non-empty directory" \
	fails "$here/make-fixture.sh" -q "$repo" 2>/dev/null
"$here/make-fixture.sh" -q --no-regression --culprit-file "$work/none.culprit" "$work/repo3"
check "--no-regression: no commit changes the options, empty culprit file" \
	[ -z "$(git -C "$work/repo3" log --format=%H good..bad -- sql/server_options.h)" -a ! -s "$work/none.culprit" ]
"$here/make-fixture.sh" -q --merges --culprit-on-branch "$work/repo4"
if (
	# shellcheck disable=SC1091
	. "$work/repo4/.git/perfbisect-fixture.env"
	c=$CULPRIT_SHA
	[ "$(git -C "$work/repo4" rev-list --merges --count good..bad)" -eq 1 ] &&
		[ "$(git -C "$work/repo4" log --format=%H good..bad -- sql/server_options.h)" = "$c" ] &&
		! git -C "$work/repo4" merge-base --is-ancestor "$c" "$MERGE_SHA^1" &&
		git -C "$work/repo4" merge-base --is-ancestor "$c" bad
) then
	ok "--merges --culprit-on-branch: culprit only reachable through the merge"
else
	fail "--merges --culprit-on-branch: culprit only reachable through the merge"
fi

# --- builds ------------------------------------------------------------------
check "good builds and installs" build "$repo" good good
check "bad builds and installs" build "$repo" bad bad
check "broken commit fails to build" fails build "$repo" "$BROKEN_SHA" broken
check "fixed commit builds" build "$repo" "$FIXED_SHA" fixed
check "merge fixture's bad builds" build "$work/repo4" bad mergebad
check "installed bin/mariadbd and bin/mariadb-install-db" \
	test -x "$work/p-bad/bin/mariadbd" -a -x "$work/p-bad/bin/mariadb-install-db"
version_ok() {
	"$work/p-bad/bin/mariadbd" --version | grep -q " Ver "
}
check "mariadbd --version prints the system server's version line" version_ok

# --- servers -----------------------------------------------------------------
real=$(sed -n 's/^#define FIXTURE_REAL_MARIADBD "\(.*\)"$/\1/p' "$work/build-bad/fixture_config.h")
printf '[mariadbd]\n' >"$work/my.cnf"
for name in good bad; do
	P=$work/p-$name
	D=$work/data-$name
	S=$work/$name.sock
	want=268435456
	[[ $name == good ]] || want=6291456
	if "$P/bin/mariadb-install-db" "--defaults-file=$work/my.cnf" --user=root \
		--auth-root-authentication-method=normal --skip-test-db "--datadir=$D" \
		"--basedir=$P" >"$work/init-$name.log" 2>&1; then
		ok "$name: mariadb-install-db --defaults-file=F ... --basedir=PREFIX"
	else
		fail "$name: mariadb-install-db (see $work/init-$name.log)"
		continue
	fi
	port=$(free_port)
	"$P/bin/mariadbd" "--defaults-file=$work/my.cnf" --user=root "--datadir=$D" \
		"--socket=$S" "--port=$port" --bind-address=127.0.0.1 "--basedir=$P" \
		"--log-error=$work/error-$name.log" "--pid-file=$work/$name.pid" \
		>"$work/stderr-$name.log" 2>&1 &
	server_pid=$!
	up=0
	for ((i = 0; i < 600; i++)); do
		if mariadb --no-defaults -S "$S" -uroot -e 'SELECT 1' >/dev/null 2>&1; then
			up=1
			break
		fi
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.05
	done
	if [[ $up -eq 0 ]]; then
		fail "$name: server did not start (see $work/error-$name.log)"
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
		server_pid=""
		continue
	fi
	ok "$name: server connectable"
	check "$name: server pid is the launcher's pid (exec, no fork)" \
		[ "$(cat "$work/$name.pid")" = "$server_pid" -a "$(readlink "/proc/$server_pid/exe")" = "$real" ]
	check "$name: launcher left no child process" \
		fails pgrep -P "$server_pid"
	check "$name: argv[0] is the system server" \
		[ "$(tr '\0' '\n' <"/proc/$server_pid/cmdline" | head -n 1)" = "$real" ]
	got=$(mariadb --no-defaults -S "$S" -uroot -N -e 'SELECT @@innodb_buffer_pool_size')
	check "$name: innodb_buffer_pool_size is the compiled-in $want (got $got)" [ "$got" = "$want" ]
	got=$(mariadb --no-defaults -S "$S" -uroot -N -e 'SELECT @@basedir')
	check "$name: caller's --basedir kept ($got)" [ "${got%/}" = "$P" ]
	check "$name: a system plugin loads despite --basedir=PREFIX" \
		mariadb --no-defaults -S "$S" -uroot -e "INSTALL SONAME 'ha_blackhole'"
	check "$name: TCP port $port answers" \
		mariadb --no-defaults -h 127.0.0.1 -P "$port" -uroot -N -e 'DO 1'
	kill -TERM "$server_pid"
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
done

printf '%d passed, %d failed\n' "$passed" "$failed"
[[ $failed -eq 0 ]]
