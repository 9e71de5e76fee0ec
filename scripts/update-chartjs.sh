#!/usr/bin/env bash
# update-chartjs.sh VERSION - replace the Chart.js that HTML reports inline
# (bisect/report/assets/chart.umd.min.js, MIT) with the given version from the
# npm registry, unchanged, with its licence. Then run the report tests, which
# load a page in headless Chromium: go test -run HTML ./bisect/report/
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: scripts/update-chartjs.sh VERSION (e.g. 4.6.1)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "chart.js@$version" >/dev/null && tar xzf chart.js-"$version".tgz)
cp "$tmp/package/dist/chart.umd.min.js" bisect/report/assets/chart.umd.min.js
cp "$tmp/package/LICENSE.md" bisect/report/assets/LICENSE.chartjs.md
sed -i "s/^\/\/ Chart.js [0-9.]* (MIT/\/\/ Chart.js $version (MIT/" bisect/report/html.go
echo "Chart.js $version in bisect/report/assets"
