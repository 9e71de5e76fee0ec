#!/usr/bin/env bash
# layout-demo.sh - add to a MariaDB 10.0 release import a branch whose
# commits only move code (a helper nothing calls, added to a hot file) around
# one real culprit (a busy loop at the start of dispatch_command): the
# history of docs/measurements.md's "A code layout for every run".
#
# usage: layout-demo.sh TREE BASE [BRANCH]
#   e.g. layout-demo.sh mariadb-10.0 mariadb-10.0.23 demo
#
# TREE is a repository made by import-releases.sh; BASE a release tag in it.
# BRANCH (default demo) must not exist. The work tree is left on BRANCH.
set -euo pipefail
[ $# -ge 2 ] || { sed -n 2,12p "$0" >&2; exit 2; }
tree=$1 base=$2 branch=${3:-demo}
cd "$tree"
if git rev-parse -q --verify "refs/heads/$branch" >/dev/null; then
	echo "layout-demo: branch $branch exists in $tree; refusing to change it" >&2
	exit 2
fi
git checkout -q -b "$branch" "$base"
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@perfbisect.invalid
export GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@perfbisect.invalid
helper() { # $1 file, $2 function name
	cat >>"$1" <<EOC

/* A helper for a later patch; not called yet. */
int $2(const int *v, int n)
{
  int s= 0;
  for (int i= 0; i < n; i++)
    s+= (v[i] * 31) ^ (s >> 3);
  return s;
}
EOC
	git commit -q -am "Add $2 helper (not called yet)"
}
helper sql/sql_select.cc select_unused_checksum
helper sql/item.cc item_unused_checksum
grep -q '^  thd->set_command(command);$' sql/sql_parse.cc ||
	{ echo "layout-demo: sql/sql_parse.cc has no 'thd->set_command(command);' line: not a 10.0 tree?" >&2; exit 1; }
sed -i '0,/^  thd->set_command(command);$/s//  thd->set_command(command);\n  for (volatile ulong spin= 0; spin < 10000; spin++) {}/' sql/sql_parse.cc
git commit -q -am "dispatch_command: wait a little before each command"
helper sql/sql_parse.cc parse_unused_checksum
helper storage/xtradb/btr/btr0cur.cc btr_unused_checksum
git log --oneline "$base..$branch"
