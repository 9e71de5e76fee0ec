#!/usr/bin/env bash
# demo.sh - the main job on the bundled fixture, from nothing to a named first
# bad commit: installs prerequisites when missing, builds perfbisect, generates
# a fixture server repository (40 commits between tags good and bad; one commit
# (the culprit, position 23) shrinks the InnoDB buffer pool from 256M to 6M;
# commit 20 breaks the build and 21 fixes it: a search that measures 20 shows
# a skip, one that goes round it does not need to) and bisects it with real
# CMake builds and real mariadbd runs. Takes about 5-10 minutes on 2 cores and
# leaves about 800 MB in its work directory (it says where; remove it when
# done). Extra arguments go to `perfbisect start`.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	export PATH="$PATH:/usr/local/go/bin"
fi
scripts/setup.sh

work=$(mktemp -d "${TMPDIR:-/tmp}/perfbisect-demo.XXXXXX")
echo "demo: building perfbisect into $work/bin"
go build -o "$work/bin/perfbisect" ./cmd/perfbisect
echo "demo: generating the fixture repository $work/server"
scripts/make-fixture.sh --quiet --broken-pos 20 --culprit-file "$work/culprit" "$work/server"

started=$SECONDS
set -x
"$work/bin/perfbisect" start --repo "$work/server" --good good --bad bad \
	--workload oltp_read_only --threads 2 --tables 1 --table-size 100000 \
	--range-size 1000 --rand-type uniform --time 2 --warmup 1 \
	--state-dir "$work/state" --json "$work/result.json" "$@" && rc=0 || rc=$?
{ set +x; } 2>/dev/null

echo
if [ "$rc" -eq 130 ]; then
	echo "demo: interrupted; continue with: $work/bin/perfbisect resume --state-dir $work/state"
else
	echo "demo: the bisect took $((SECONDS - started)) s (builds included)"
	echo "demo: the fixture's injected culprit is $(cat "$work/culprit")"
	echo "demo: JSON result in $work/result.json; builds, logs and datadirs in $work/state"
fi
echo "demo: $(du -sh "$work" 2>/dev/null | cut -f1) in $work: rm -rf $work when done"
exit "$rc"
