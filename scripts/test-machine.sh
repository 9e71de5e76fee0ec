#!/usr/bin/env bash
# test-machine.sh - the machine tests: those that make other machines on
# this one (runner hosts: an sshd and a Slurm node; compile farms: distccd,
# an icecream scheduler and iceccd) or neighbours of a bisection (a CPU
# quota and a memory hog coming and going at random). They take minutes,
# so the suite CI runs (scripts/test.sh) skips them to stay within its
# time. A test is one when it calls testenv.Machine; this script finds
# them so. Run it as root after touching runner hosts, farms or the
# neighbour rules (about 6 minutes on 2 cores). It installs what they need
# when missing (scripts/setup.sh). Extra arguments go to go test (-v ...).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	export PATH="$PATH:/usr/local/go/bin"
fi
tests=() pkgs=()
while IFS=' ' read -r file name; do
	tests+=("$name")
	pkgs+=("$(dirname "$file")")
done < <(find . -name '*_test.go' -not -path './.git/*' -print0 | xargs -0 awk '
	/^func / { name = "" }
	/^func Test[A-Za-z0-9_]*\(/ { name = $2; sub(/\(.*/, "", name) }
	/^\ttestenv\.Machine\(/ && name != "" { print FILENAME, name }' | sort -u)
[ ${#tests[@]} -gt 0 ] || { echo "test-machine: no test calls testenv.Machine" >&2; exit 1; }
mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
scripts/setup.sh
echo "test-machine: ${tests[*]}"
export PERFBISECT_MACHINE_TESTS=1
go test -p 1 -count=1 -timeout 30m -run "^($(IFS='|'; echo "${tests[*]}"))\$" "$@" "${pkgs[@]}"
