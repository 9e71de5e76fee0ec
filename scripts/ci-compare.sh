#!/usr/bin/env bash
# ci-compare.sh - the CI job of a server repository: "did this change make the
# server slower?"  Run it in the CI checkout of the change (HEAD):
#
#   scripts/ci-compare.sh [BASE] [-- perfbisect compare flags...]
#
# compares BASE (default: origin/main) with HEAD using perfbisect compare
# (both built and measured interleaved), writes OUT/perfbisect.md (a summary
# for a pull-request comment; also appended to $GITHUB_STEP_SUMMARY under
# GitHub Actions) and OUT/perfbisect.html (the full report with charts, a build
# artifact; both removed first, so that a reused workspace never shows an
# earlier job's), prints the summary and exits with perfbisect compare's code:
#   0 no regression beyond --threshold    5 regression
#   4 inconclusive at --max-repeats       2 usage or configuration
#   1 failure of the tool or the machine (never read as a regression)
# Environment: PERFBISECT, the binary (default: perfbisect in PATH); OUT, the
# report directory (default: perfbisect-report, created).
# HEAD equal to BASE (a push to main itself) exits 0: nothing to compare.
# A shallow CI checkout needs BASE fetched first: git fetch --no-tags origin main
set -uo pipefail

base=origin/main
if [[ $# -gt 0 && $1 != -- ]]; then
	base=$1
	shift
fi
[[ ${1:-} != -- ]] || shift
pb=${PERFBISECT:-perfbisect}
out=${OUT:-perfbisect-report}

if ! command -v "$pb" >/dev/null 2>&1; then
	echo "ci-compare: $pb not found: build it (go build -o perfbisect ./cmd/perfbisect) and set PERFBISECT" >&2
	exit 2
fi
if ! git rev-parse --verify -q "$base^{commit}" >/dev/null; then
	echo "ci-compare: BASE $base is not a commit of this checkout; fetch it first (git fetch --no-tags origin main)" >&2
	exit 2
fi
if [[ $(git rev-parse "$base^{commit}") == $(git rev-parse "HEAD^{commit}") ]]; then
	echo "ci-compare: HEAD is $base: nothing to compare (run this job on changes, e.g. on pull requests)"
	exit 0
fi
mkdir -p -- "$out" || exit 1
# A report left by an earlier job in a reused workspace must not pass for this one.
rm -f -- "$out/perfbisect.md" "$out/perfbisect.html" || exit 1

"$pb" compare "$base" HEAD --format markdown --output "$out/perfbisect.md" --html "$out/perfbisect.html" "$@"
code=$?

if [[ -f $out/perfbisect.md ]]; then
	cat -- "$out/perfbisect.md"
	if [[ -n ${GITHUB_STEP_SUMMARY:-} ]]; then
		cat -- "$out/perfbisect.md" >>"$GITHUB_STEP_SUMMARY"
	fi
fi
case $code in
0) echo "ci-compare: no regression of HEAD against $base" ;;
5) echo "ci-compare: REGRESSION of HEAD against $base (report: $out/perfbisect.html)" ;;
4) echo "ci-compare: inconclusive at the repeat limit (raise --max-repeats, or quiet the machine)" ;;
2) echo "ci-compare: usage or configuration error (see above)" ;;
130) echo "ci-compare: interrupted" ;;
*) echo "ci-compare: perfbisect failed (exit $code): a failure of the tool or the machine, not a verdict" ;;
esac
exit "$code"
