#!/usr/bin/env bash
# import-releases.sh - make a git repository of MariaDB release sources, one
# commit per release, each tagged mariadb-X.Y.Z, from a repository whose
# branch holds release imports ("Imported Upstream version 10.0.22", as the
# upstream branch of Debian's packaging repositories does).
#
# usage: import-releases.sh SOURCE_GIT_DIR BRANCH OUT_DIR VERSION...
#   e.g. import-releases.sh mariadb-10.3.git upstream mariadb-10.0 10.0.22 10.0.23 10.0.26
#
# The releases are committed in the order given, each the child of the one
# before (so that good..bad is a range). Blobs the source repository does not
# have (a partial copy) are left out of the trees, and said. OUT_DIR must not
# exist. The result is self-contained (objects copied, no alternates).
set -euo pipefail
[ $# -ge 4 ] || { sed -n 2,13p "$0" >&2; exit 2; }
src=$1 branch=$2 out=$3
shift 3
[ ! -e "$out" ] || { echo "import-releases: $out exists; refusing to overwrite it" >&2; exit 2; }
src=$(cd "$src" && git rev-parse --absolute-git-dir)
git init -q -b main "$out"
echo "$src/objects" >"$out/.git/objects/info/alternates"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GIT_AUTHOR_NAME=import GIT_AUTHOR_EMAIL=import@perfbisect.invalid
export GIT_COMMITTER_NAME=import GIT_COMMITTER_EMAIL=import@perfbisect.invalid
parent=()
for v in "$@"; do
	c=$(git --git-dir="$src" log --format=%H --grep="Imported Upstream version $v\$" --grep="New upstream version $v\$" "$branch" | head -1)
	[ -n "$c" ] || { echo "import-releases: no import of $v on $branch" >&2; exit 1; }
	git --git-dir="$src" ls-tree -r --full-tree "$c" >"$tmp/ls"
	cut -f1 "$tmp/ls" | awk '{print $3}' | git --git-dir="$src" cat-file --batch-check='%(objectname) %(objecttype)' >"$tmp/chk"
	paste -d'\t' "$tmp/chk" "$tmp/ls" | awk -F'\t' '$1 !~ /missing/ {print $2"\t"$3}' >"$tmp/keep"
	missing=$(grep -c missing "$tmp/chk" || true)
	echo "$v: $(wc -l <"$tmp/ls") files, $missing left out (not in $src)"
	rm -f "$tmp/index"
	GIT_INDEX_FILE=$tmp/index git -C "$out" update-index --index-info <"$tmp/keep"
	tree=$(GIT_INDEX_FILE=$tmp/index git -C "$out" write-tree)
	new=$(git -C "$out" commit-tree "$tree" "${parent[@]}" -m "Imported Upstream version $v")
	git -C "$out" tag "mariadb-$v" "$new"
	parent=(-p "$new")
done
git -C "$out" update-ref refs/heads/main "${parent[1]}"
git -C "$out" repack -a -d -q
rm "$out/.git/objects/info/alternates"
git -C "$out" log --oneline --decorate
