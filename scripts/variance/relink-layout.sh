#!/usr/bin/env bash
# relink-layout.sh - copy an installed server build with its server binary
# linked again from the same objects in another order: a layout A/A (the
# same code, another placement; link order alone moved results by several
# percent in Mytkowicz et al., "Producing wrong data without doing anything
# obviously wrong!", ASPLOS 2009). For scripts/variance's build level.
#
# usage: relink-layout.sh BUILD_DIR INSTALL_DIR OUT_DIR SEED
#   BUILD_DIR    the CMake build directory the install came from (perfbisect
#                keeps it in its state directory: build-*/)
#   INSTALL_DIR  the install prefix (what perfbisect build prints)
#   OUT_DIR      a new directory: a copy of INSTALL_DIR with the relinked server
#   SEED         ld.lld's --shuffle-sections seed (1, 2, ...: the objects' code
#                sections, .text*, in a shuffled order; -1: reversed); "none": linked by lld in the
#                build's own order, the base the shuffled ones are measured against
#                (lld lays out a binary otherwise than ld.bfd does)
#
# The link is the build's own command ([sql/]CMakeFiles/{mariadbd,mysqld}.dir/link.txt)
# with -fuse-ld=lld and the shuffle added; nothing is compiled. Needs lld
# (Debian: apt-get install lld).
set -euo pipefail
[ $# -eq 4 ] || { sed -n 2,20p "$0" >&2; exit 2; }
for a in "$1" "$2"; do
	[ -d "$a" ] || { echo "relink-layout: $a is not a directory" >&2; exit 2; }
done
build=$(cd "$1" && pwd)
inst=$(cd "$2" && pwd)
out=$3 seed=$4
[ -d "$(dirname "$out")" ] || { echo "relink-layout: the directory $(dirname "$out") that OUT_DIR goes into does not exist" >&2; exit 2; }
[ ! -e "$out" ] || { echo "relink-layout: $out exists; refusing to overwrite it" >&2; exit 2; }
command -v ld.lld >/dev/null || { echo "relink-layout: ld.lld is not installed on this machine (Debian: apt-get install lld)" >&2; exit 1; }
# (lld's seed 0 is a random one, which could not be made again.)
[[ $seed =~ ^(none|-1|[1-9][0-9]*)$ ]] || { echo "relink-layout: SEED must be a number from 1, -1 or none, not '$seed'" >&2; exit 2; }
target= at=
for d in sql .; do
	for t in mariadbd mysqld; do
		if [ -z "$target" ] && [ -f "$build/$d/CMakeFiles/$t.dir/link.txt" ]; then target=$t at=$build/$d; fi
	done
done
[ -n "$target" ] || { echo "relink-layout: $build has no mariadbd or mysqld link command (sql/CMakeFiles/*.dir/link.txt): not a server's CMake build directory" >&2; exit 2; }
bin=
for p in sbin/mariadbd bin/mariadbd sbin/mysqld bin/mysqld libexec/mysqld; do
	if [ -f "$inst/$p" ] && [ ! -L "$inst/$p" ]; then bin=$p; break; fi
done
[ -n "$bin" ] || { echo "relink-layout: $inst has no server binary (sbin/ or bin/ mariadbd or mysqld)" >&2; exit 2; }
# perfbisect's build directory is reused by the next revision it builds: its
# objects must be the install's (the install's directory is named by its commit).
built=$(sed -n 's/.*"commit":"\([0-9a-f]*\)".*/\1/p' "$build/.perfbisect-built.json" 2>/dev/null || true)
base=$(basename "$inst")
if [ -n "$built" ] && [[ $base =~ ^[0-9a-f]{40}$ ]] && [ "$built" != "$base" ]; then
	echo "relink-layout: $build holds the objects of commit $built, not of the install's $base: build it again there first (perfbisect build keeps it cached: remove $inst, or use a fresh --state-dir, then build $base)" >&2
	exit 2
fi
if [ -n "$built" ] && ! grep -q '"finished":true' "$build/.perfbisect-built.json"; then
	echo "relink-layout: the last build in $build did not finish: its objects may be partial" >&2
	exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
link=$(cat "$at/CMakeFiles/$target.dir/link.txt")
grep -q -- " -o $target " <<<"$link" || { echo "relink-layout: the link command does not write '-o $target'" >&2; exit 1; }
extra="-fuse-ld=lld"
[ "$seed" = none ] || extra="$extra '-Wl,--shuffle-sections=.text*=$seed'" # quoted: eval must not glob it
link=${link/ -o $target / -o $tmp/$target }
(cd "$at" && eval "$link $extra")
cp -a "$inst" "$out"
install -m 755 "$tmp/$target" "$out/$bin"
echo "$out/$bin: $target linked by lld, seed $seed; .text $(size -A "$out/$bin" | awk '$1==".text"{print $2}') bytes"
