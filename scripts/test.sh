#!/usr/bin/env bash
# test.sh - the whole test suite: installs prerequisites when missing
# (scripts/setup.sh), vets, then runs every test. Tests that start mysqld must
# not run concurrently on a small machine, hence -p 1; -timeout bounds a hung
# server.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	export PATH="$PATH:/usr/local/go/bin"
fi
scripts/setup.sh
go vet ./...
go test -p 1 -count=1 -timeout 45m ./...
