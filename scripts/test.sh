#!/usr/bin/env bash
# test.sh - the whole test suite: installs prerequisites when missing
# (scripts/setup.sh), vets, then runs every test. Tests that start mysqld must
# not run concurrently on a small machine, hence -p 1; -timeout bounds a hung
# server. Files tests keep (screenshots of the HTML reports) go to
# test-artifacts/_artifacts/ (emptied first), or under $PERFBISECT_ARTIFACTS.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	export PATH="$PATH:/usr/local/go/bin"
fi
scripts/setup.sh
go vet ./...
# The fault suite's build (scripts/faults): its points compile and fire.
go vet -tags faults ./...
go test -tags faults -count=1 ./internal/faultpoint
artifacts=${PERFBISECT_ARTIFACTS:-}
if [ -z "$artifacts" ]; then
	artifacts=$PWD/test-artifacts
	rm -rf -- "$artifacts/_artifacts"
fi
mkdir -p -- "$artifacts"
go test -p 1 -count=1 -timeout 45m -artifacts -outputdir "$artifacts" ./...
