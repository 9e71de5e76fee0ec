#!/usr/bin/env bash
# import-tarballs.sh - make a git repository of server release sources from
# their tarballs (a release's source tarball, or a Debian source package's
# .orig.tar.gz from apt-get source --download-only), one commit per tarball,
# in the order given, each the child of the one before, tagged with the
# version its VERSION file (MariaDB) or MYSQL_VERSION (MySQL) says:
# mariadb-X.Y.Z or mysql-X.Y.Z. scripts/real-trees builds such a repository.
#
# usage: import-tarballs.sh OUT_DIR TARBALL...
#   e.g. import-tarballs.sh ~/src/mariadb-debian mariadb-10.5_10.5.23.orig.tar.gz mariadb_10.11.18.orig.tar.gz
#
# OUT_DIR must not exist.
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,12p "$0" >&2; exit 2; }
out=$1
shift
[ ! -e "$out" ] || { echo "import-tarballs: $out exists; refusing to overwrite it" >&2; exit 2; }
for tb in "$@"; do
	[ -f "$tb" ] || { echo "import-tarballs: $tb: no such file" >&2; exit 2; }
done
git init -q -b main "$out"
export GIT_AUTHOR_NAME=import GIT_AUTHOR_EMAIL=import@perfbisect.invalid
export GIT_COMMITTER_NAME=import GIT_COMMITTER_EMAIL=import@perfbisect.invalid
for tb in "$@"; do
	# The work tree holds exactly this release.
	find "$out" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
	tar -xf "$tb" -C "$out" --strip-components=1
	flavor=mariadb
	if [ -f "$out/VERSION" ]; then
		vf=$out/VERSION
	elif [ -f "$out/MYSQL_VERSION" ]; then
		vf=$out/MYSQL_VERSION
		flavor=mysql
	else
		echo "import-tarballs: $tb has no VERSION or MYSQL_VERSION file at its top" >&2
		exit 1
	fi
	major=$(sed -n 's/^MYSQL_VERSION_MAJOR=\([0-9]*\).*/\1/p' "$vf")
	minor=$(sed -n 's/^MYSQL_VERSION_MINOR=\([0-9]*\).*/\1/p' "$vf")
	patch=$(sed -n 's/^MYSQL_VERSION_PATCH=\([0-9]*\).*/\1/p' "$vf")
	v=$major.$minor.$patch
	[ "$v" != .. ] || { echo "import-tarballs: no version in $vf" >&2; exit 1; }
	git -C "$out" add -A -f
	git -C "$out" commit -q -m "Release $v (from $(basename "$tb"))"
	git -C "$out" tag "$flavor-$v"
	echo "$flavor-$v: $(git -C "$out" ls-files | wc -l) files"
done
git -C "$out" gc -q
git -C "$out" log --oneline --decorate
