#!/usr/bin/env bash
# make-store-fixture.sh - write the state directory store (perfbisect.db) that
# bisect/store/testdata/v1.db holds: sessions of every kind made by an older
# perfbisect (one whose store has schema version 1), so that the tests can
# check that today's perfbisect migrates, reports, shows and resumes them.
#
#   scripts/make-store-fixture.sh [OLD_COMMIT] OUT_DB
#
# OLD_COMMIT (default 4fccebd, the last perfbisect with schema version 1 and
# the classic search only) is built from this repository's history. On a
# 6-commit fixture (scripts/make-fixture.sh -n 6 --culprit-pos 4 --broken-pos 0)
# it makes, in one state directory, in this order:
#   1. a finished start (found the culprit)
#   2. a compare of good and bad (a regression)
#   3. a scan of good..bad
#   4. a git bisect run bisection (git bisect run perfbisect run), left as git
#      left it (the store's session is still "running")
#   5. an unfinished start (other arguments), killed with SIGKILL once it
#      has stored three decisions (late: a resume in a new state directory
#      builds and prepares every revision it measures again, so the test's
#      resume stays short)
# and copies the store (checkpointed into one file) to OUT_DB. It starts real
# servers: run it on an idle machine. The paths of the fixture are in the
# store; the tests replace them with their own (the fixture's commits are the
# same everywhere: make-fixture.sh fixes authors and dates).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

old=4fccebd
if [ $# -eq 2 ]; then
	old=$1
	shift
fi
if [ $# -ne 1 ]; then
	echo "usage: $0 [OLD_COMMIT] OUT_DB" >&2
	exit 2
fi
out=$(realpath -m "$1")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "make-store-fixture: building perfbisect $old"
mkdir -p "$work/src"
git archive "$old" | tar -x -C "$work/src"
(cd "$work/src" && go build -o "$work/perfbisect" ./cmd/perfbisect)
pb=$work/perfbisect

# Relative paths from the work directory: the store then holds the work
# directory only as each session's directory and in its identity's repo.
bash scripts/make-fixture.sh -q -n 6 --culprit-pos 4 --broken-pos 0 "$work/server"
cd "$work"
server=server
state=state
small=(--threads 2 --tables 1 --time 1 --warmup 0.5 --table-size 100000 --range-size 1000 --rand-type uniform)

echo "make-store-fixture: 1. a finished start"
"$pb" start --repo "$server" --good good --bad bad --state-dir "$state" --quiet "${small[@]}"

echo "make-store-fixture: 2. a compare"
"$pb" compare --repo "$server" --state-dir "$state" --threshold 15 --quiet "${small[@]}" good bad || true

echo "make-store-fixture: 3. a scan"
"$pb" scan --repo "$server" --state-dir "$state" --runs 3 --quiet "${small[@]}" good..bad || true

echo "make-store-fixture: 4. a git bisect run bisection"
(
	cd "$server"
	git bisect start bad good >/dev/null
	git bisect run "$pb" run --state-dir "$work/$state" --quiet "${small[@]}" >/dev/null || true
	git bisect reset >/dev/null
)

echo "make-store-fixture: 5. an unfinished start (killed)"
"$pb" start --repo "$server" --good good --bad bad --state-dir "$state" --threshold 7 "${small[@]}" >"$work/killed.log" 2>&1 &
pid=$!
for _ in $(seq 1200); do
	# Killed once three decisions are stored (the endpoints and two
	# midpoints): what is left to resume is short.
	n=$(sqlite3 "$state/perfbisect.db" "SELECT count(*) FROM steps st JOIN sessions s ON s.id = st.session WHERE s.state = 'running' AND s.kind = 'start'" 2>/dev/null || echo 0)
	[ "$n" -ge 3 ] && break
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "make-store-fixture: the start ended before its third decision: run again" >&2
		exit 1
	fi
	sleep 0.5
done
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
sleep 1

sqlite3 "$state/perfbisect.db" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
mkdir -p "$(dirname "$out")"
sqlite3 "$state/perfbisect.db" ".backup '$out'"
echo "make-store-fixture: wrote $out (schema version $(sqlite3 "$out" 'PRAGMA user_version')); the fixture was in $work (removed):"
sqlite3 "$out" "SELECT id, kind, state, outcome FROM sessions"
echo "root=$work"
