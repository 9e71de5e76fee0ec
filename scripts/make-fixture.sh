#!/usr/bin/env bash
# make-fixture.sh - generate a small git repository that stands in for a
# MariaDB source tree, with a known performance regression in its history.
#
# See --help for usage.  The generated repository is a CMake project whose
# "mariadbd" is a tiny launcher that execv()s the system (Debian) mariadbd
# with a set of compiled-in server options; exactly one commit (the culprit)
# changes those options.
set -euo pipefail

prog=$(basename "$0")

# ---------------------------------------------------------------------------
# Defaults.  The option pair below was chosen by measurement with
# scripts/measure-fixture-effect.sh (sysbench 1.0.20 oltp_read_only, 1 table
# of 100000 rows, --range-size=1000 --rand-type=uniform, 2 threads, 3 s runs,
# fresh server per run, 5 interleaved runs each, 2-core VM): median 833 tps
# (818-868) with the base options vs 196 tps (187-210) with the culprit's,
# -76%.  6M is the smallest buffer pool InnoDB accepts with 16K pages (5M
# aborts the server).  With a 10000-row table the data fits in 6M and there
# is no regression.  --innodb-log-file-size=48M (in both) keeps a datadir at
# 95 MB after init+prepare instead of 143 MB; start-up time is the same.
# ---------------------------------------------------------------------------
DEFAULT_BASE_OPTIONS="--innodb-buffer-pool-size=256M --innodb-log-file-size=48M"
DEFAULT_CULPRIT_OPTIONS="--innodb-buffer-pool-size=6M --innodb-log-file-size=48M"
# A small regression (--small-culprit): the optimizer trace on, a CPU cost
# in every statement. `perfbisect compare good bad --metric cpu-per-txn
# --threshold 1 --repeats 20 --max-repeats 20` on a 4-commit fixture with it
# (oltp_read_only, 100000 rows, uniform, range 1000, 2 threads, 1.5 s
# windows, server on CPU 1 and client on CPU 0) measured tps -12.0%
# [-15.6%, -8.4%] at 5.7% noise per run (2026-12-02, 2-core VM); with
# 100-row ranges, the e2e test's, about -30% (docs/measurements.md).
SMALL_CULPRIT_OPTIONS="--innodb-buffer-pool-size=256M --innodb-log-file-size=48M --optimizer-trace=enabled=on"

commits=40
culprit_pos=""
broken_pos=11
good_tag=good
bad_tag=bad
base_options=$DEFAULT_BASE_OPTIONS
culprit_options=$DEFAULT_CULPRIT_OPTIONS
no_regression=0
merges=0
culprit_on_branch=0
fork_pos=""
merge_pos=""
branch_commits=6
culprit_file=""
second_pos=0
second_options=""
quiet=0
releases=0
dir=""

usage() {
	cat <<EOF
Usage: $prog [options] DIR

Create a new git repository in DIR (which must not exist or be empty) that is
a small CMake project standing in for a MariaDB source tree:

  cmake -S DIR -B build -DCMAKE_INSTALL_PREFIX=P && cmake --build build &&
  cmake --install build        # or: cmake --install build --prefix OTHER

installs P/bin/mariadbd (a launcher that execv()s the system mariadbd, no fork,
found at configure time) and P/bin/mariadb-install-db (a wrapper around the
system mariadb-install-db).  The launcher runs
  <system mariadbd> <its own arguments...> <support dirs> <compiled-in options>
where <support dirs> are --plugin-dir, --lc-messages-dir and
--character-sets-dir of the system server (so a caller's --basedir=P does not
break plugin/error-message lookup) and <compiled-in options> come from
sql/server_options.h, which changes in exactly one commit (the culprit).
bin/mariadb-install-db runs the system tool as
  <system mariadb-install-db> <its own arguments...> --basedir=<system basedir>
with MYSQLD_BOOTSTRAP=<that prefix>/bin/mariadbd (unless already set), so the
datadir is bootstrapped by the commit's own launcher and options.

History (first-parent line): the root commit is tagged GOOD_TAG, then N more
commits, the last one tagged BAD_TAG.  Position k (1..N) is the k-th commit
after GOOD_TAG.  One commit (--broken-pos) has a C syntax error and the next
one fixes it.  All other commits touch unrelated files (docs, comments, a
harmless C file, tests).

Options:
  -n, --commits N           commits after the good one (default: $commits)
  --culprit-pos K           position of the culprit commit (default: 23 for the
                            default N, otherwise about 57% of N; with
                            --culprit-on-branch: position on the side branch,
                            default 3)
  --broken-pos K            position of the commit that breaks the build; K+1
                            fixes it (default: $broken_pos; 0 = no broken commit)
  --good-tag NAME           tag of the first commit (default: $good_tag)
  --bad-tag NAME            tag of the last commit (default: $bad_tag)
  --base-options STR        compiled-in server options before the culprit
                            (space separated; default: "$DEFAULT_BASE_OPTIONS")
  --culprit-options STR     compiled-in server options from the culprit on
                            (default: "$DEFAULT_CULPRIT_OPTIONS")
  --small-culprit           a small regression instead: the culprit turns the
                            optimizer trace on ("$SMALL_CULPRIT_OPTIONS";
                            measured -12% on oltp_read_only with 1000-row
                            ranges, about 2x the run noise of a 2-core VM;
                            about -30% with 100-row ranges)
  --second-culprit-pos K    a second regression on the main line at position
                            K (after --culprit-pos, not with
                            --culprit-on-branch): it changes the options again,
                            to --second-culprit-options (default: 0 = none)
  --second-culprit-options STR
                            compiled-in options from the second culprit on;
                            e.g. --culprit-options "--innodb-buffer-pool-size=32M
                            --innodb-log-file-size=48M" then "...=6M ..." here:
                            two drops, measured -58% and then -42%
  --no-regression           no commit changes the options (culprit file is
                            left empty); the broken/fixed pair is still made
  --merges                  add a side branch that forks from the main line
                            at --fork-pos and is merged back by the merge
                            commit at main position --merge-pos (the
                            branch bb-10.11-fixture-engine is kept)
  --culprit-on-branch       (with --merges) put the culprit on the side branch
  --fork-pos K              main position the side branch forks from
                            (default: about 35% of N, 14 for N=40)
  --merge-pos K             main position of the merge commit
                            (default: about 75% of N, 30 for N=40)
  --branch-commits M        commits on the side branch (default: $branch_commits)
  --releases K              every K-th commit of the main line is a release
                            (GOOD_TAG's commit is 10.11.1, then 10.11.2 ...),
                            tagged mariadb-10.11.V as MariaDB tags them; the
                            commit after a release raises VERSION's patch,
                            and the launcher answers --version with the
                            tree's version (not with --merges; default: 0 =
                            none, VERSION says 10.11.99)
  --culprit-file FILE       where to write the culprit's full sha
                            (default: DIR/.git/perfbisect-culprit)
  -q, --quiet               do not print the summary
  -h, --help                show this help

Outputs (outside the work tree, so they are not part of any commit):
  culprit file              the culprit's full sha and a newline; empty with
                            --no-regression
  DIR/.git/perfbisect-fixture.env
                            shell-style KEY=VALUE lines: GOOD_SHA BAD_SHA
                            CULPRIT_SHA SECOND_CULPRIT_SHA BROKEN_SHA FIXED_SHA FORK_SHA
                            MERGE_SHA (empty when not applicable), GOOD_TAG,
                            BAD_TAG, BASE_OPTIONS, CULPRIT_OPTIONS, SECOND_CULPRIT_OPTIONS,
                            CULPRIT_FILE (quoted with printf %q)

Commit authors and dates are fixed, so the same parameters always give the
same shas.  Git's global and system configuration is ignored while generating
(GIT_CONFIG_GLOBAL=/dev/null); user.name/user.email are set in DIR/.git/config.

Example:
  $prog /tmp/fixture && cat /tmp/fixture/.git/perfbisect-culprit
  $prog --merges --culprit-on-branch --culprit-file /tmp/c.sha /tmp/dag
EOF
}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 2
}

is_uint() {
	[[ $1 =~ ^[0-9]+$ ]]
}

# words STR: STR's words joined by single spaces (how the options are compiled
# in, so "a  b" and "a b" are the same options).
words() {
	local -a w
	read -ra w <<<"$1"
	printf '%s' "${w[*]}"
}

# --- argument parsing ------------------------------------------------------
need_arg() {
	[[ $# -ge 2 ]] || die "option $1 needs an argument"
}

while [[ $# -gt 0 ]]; do
	opt=$1
	val=""
	case $opt in
	--*=*)
		val=${opt#*=}
		opt=${opt%%=*}
		case $opt in
		--help | --quiet | --no-regression | --merges | --culprit-on-branch)
			die "option $opt takes no argument"
			;;
		esac
		set -- "$opt" "$val" "${@:2}"
		;;
	esac
	case $opt in
	-h | --help)
		usage
		exit 0
		;;
	-q | --quiet)
		quiet=1
		shift
		;;
	--no-regression)
		no_regression=1
		shift
		;;
	--merges)
		merges=1
		shift
		;;
	--culprit-on-branch)
		culprit_on_branch=1
		shift
		;;
	--small-culprit)
		culprit_options=$SMALL_CULPRIT_OPTIONS
		shift
		;;
	-n | --commits | --culprit-pos | --broken-pos | --good-tag | --bad-tag | \
		--base-options | --culprit-options | --fork-pos | --merge-pos | \
		--branch-commits | --culprit-file | --second-culprit-pos | --second-culprit-options | --releases)
		need_arg "$@"
		val=$2
		shift 2
		case $opt in
		-n | --commits) commits=$val ;;
		--culprit-pos) culprit_pos=$val ;;
		--broken-pos) broken_pos=$val ;;
		--good-tag) good_tag=$val ;;
		--bad-tag) bad_tag=$val ;;
		--base-options) base_options=$val ;;
		--culprit-options) culprit_options=$val ;;
		--fork-pos) fork_pos=$val ;;
		--merge-pos) merge_pos=$val ;;
		--branch-commits) branch_commits=$val ;;
		--culprit-file) culprit_file=$val ;;
		--second-culprit-pos) second_pos=$val ;;
		--second-culprit-options) second_options=$val ;;
		--releases) releases=$val ;;
		esac
		;;
	--)
		shift
		break
		;;
	-*)
		die "unknown option: $opt (see --help)"
		;;
	*)
		[[ -z $dir ]] || die "only one DIR may be given"
		dir=$opt
		shift
		;;
	esac
done
if [[ $# -gt 0 ]]; then
	[[ -z $dir && $# -eq 1 ]] || die "only one DIR may be given"
	dir=$1
fi
[[ -n $dir ]] || {
	usage >&2
	exit 2
}

# --- validation --------------------------------------------------------------
for v in commits broken_pos branch_commits second_pos releases; do
	is_uint "${!v}" || die "--${v//_/-} must be a non-negative integer"
	printf -v "$v" '%d' "$((10#${!v}))" # 08 is eight, not a bad octal number
done
for v in culprit_pos fork_pos merge_pos; do
	[[ -z ${!v} ]] || ! is_uint "${!v}" || printf -v "$v" '%d' "$((10#${!v}))"
done
base_options=$(words "$base_options")
culprit_options=$(words "$culprit_options")
second_options=$(words "$second_options")
[[ -n $second_options || $second_pos -eq 0 ]] || die "--second-culprit-pos needs --second-culprit-options"
[[ -z $second_options || $second_pos -ne 0 ]] || die "--second-culprit-options needs --second-culprit-pos"
[[ $commits -ge 4 ]] || die "--commits must be at least 4"
if [[ $merges -eq 0 && $culprit_on_branch -eq 1 ]]; then
	die "--culprit-on-branch needs --merges"
fi
if [[ $merges -eq 1 ]]; then
	[[ -n $fork_pos ]] || fork_pos=$((commits * 35 / 100))
	[[ -n $merge_pos ]] || merge_pos=$((commits * 75 / 100))
	is_uint "$fork_pos" || die "--fork-pos must be an integer"
	is_uint "$merge_pos" || die "--merge-pos must be an integer"
	[[ $fork_pos -ge 1 && $fork_pos -lt $merge_pos && $merge_pos -le $commits ]] ||
		die "need 1 <= --fork-pos < --merge-pos <= --commits"
	[[ $branch_commits -ge 1 ]] || die "--branch-commits must be at least 1"
else
	fork_pos=0
	merge_pos=0
fi
if [[ -z $culprit_pos ]]; then
	if [[ $culprit_on_branch -eq 1 ]]; then
		culprit_pos=$((branch_commits >= 3 ? 3 : branch_commits))
	elif [[ $commits -eq 40 ]]; then
		culprit_pos=23
	else
		culprit_pos=$((commits * 57 / 100))
		[[ $culprit_pos -ge 1 ]] || culprit_pos=1
	fi
fi
is_uint "$culprit_pos" || die "--culprit-pos must be an integer"
if [[ $broken_pos -ne 0 ]]; then
	[[ $broken_pos -lt $commits ]] ||
		die "--broken-pos must be < --commits (its fix is at --broken-pos + 1)"
	if [[ $merges -eq 1 ]] && ((broken_pos == merge_pos || broken_pos + 1 == merge_pos)); then
		die "the broken/fixed commits cannot be the merge commit"
	fi
	if [[ $merges -eq 1 && $broken_pos -eq $fork_pos ]]; then
		die "the side branch cannot fork from the broken commit (--fork-pos = --broken-pos)"
	fi
fi
if [[ $no_regression -eq 0 ]]; then
	if [[ $culprit_on_branch -eq 1 ]]; then
		[[ $culprit_pos -ge 1 && $culprit_pos -le $branch_commits ]] ||
			die "--culprit-pos must be within 1..--branch-commits with --culprit-on-branch"
	else
		[[ $culprit_pos -ge 1 && $culprit_pos -le $commits ]] ||
			die "--culprit-pos must be within 1..--commits"
		if [[ $broken_pos -ne 0 ]] && ((culprit_pos == broken_pos || culprit_pos == broken_pos + 1)); then
			die "--culprit-pos must differ from --broken-pos and --broken-pos + 1"
		fi
		[[ $culprit_pos -ne $merge_pos ]] || die "the culprit cannot be the merge commit"
	fi
	[[ $base_options != "$culprit_options" ]] ||
		die "--base-options and --culprit-options are the same"
fi
if [[ $second_pos -ne 0 ]]; then
	[[ $no_regression -eq 0 && $culprit_on_branch -eq 0 ]] ||
		die "--second-culprit-pos needs a culprit on the main line (not --no-regression or --culprit-on-branch)"
	[[ $second_pos -gt $culprit_pos && $second_pos -le $commits ]] ||
		die "--second-culprit-pos must be after --culprit-pos and within --commits"
	if [[ $broken_pos -ne 0 ]] && ((second_pos == broken_pos || second_pos == broken_pos + 1)); then
		die "--second-culprit-pos must differ from --broken-pos and --broken-pos + 1"
	fi
	[[ $second_pos -ne $merge_pos ]] || die "the second culprit cannot be the merge commit"
	[[ $second_options != "$culprit_options" && $second_options != "$base_options" ]] ||
		die "--second-culprit-options must differ from --culprit-options and --base-options"
fi
[[ $good_tag != "$bad_tag" ]] || die "--good-tag and --bad-tag must differ"
[[ $releases -eq 0 || $merges -eq 0 ]] || die "--releases and --merges do not go together"
git check-ref-format "refs/tags/$good_tag" || die "bad tag name: $good_tag"
git check-ref-format "refs/tags/$bad_tag" || die "bad tag name: $bad_tag"

if [[ -e $dir ]]; then
	[[ -d $dir ]] || die "$dir exists and is not a directory"
	if [[ -n $(ls -A -- "$dir") ]]; then
		die "$dir exists and is not empty; refusing to overwrite it"
	fi
fi
dir_existed=0
[[ ! -d $dir ]] || dir_existed=1
mkdir -p -- "$dir"
dir=$(cd -- "$dir" && pwd -P)
done_ok=0
# Do not leave a half-made repository behind.
cleanup_partial() {
	[[ $done_ok -eq 0 ]] || return 0
	if [[ $dir_existed -eq 1 ]]; then
		find "$dir" -mindepth 1 -delete 2>/dev/null || true
	else
		rm -rf -- "$dir"
	fi
}
trap cleanup_partial EXIT
[[ -n $culprit_file ]] || culprit_file=$dir/.git/perfbisect-culprit

# --- deterministic git environment ----------------------------------------
export LC_ALL=C TZ=UTC
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY \
	GIT_ALTERNATE_OBJECT_DIRECTORIES GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT \
	GIT_TEMPLATE_DIR 2>/dev/null || true

g() {
	git -C "$dir" -c core.hooksPath=/dev/null -c commit.gpgsign=false \
		-c tag.gpgsign=false -c core.autocrlf=false -c core.fileMode=true "$@"
}

git init -q --initial-branch=main -- "$dir"
g config user.name "Fixture Generator"
g config user.email "fixture@perfbisect.invalid"

authors=(
	"Marko Example:marko@example.org"
	"Sergei Example:sergei@example.org"
	"Daniel Example:daniel@example.org"
	"Oleksandr Example:oleksandr@example.org"
	"Vladislav Example:vlad@example.org"
)
base_epoch=1672653600 # 2023-01-02 10:00:00 UTC
seq_no=0              # creation order of commits, drives the dates

commit_all() {
	local subject=$1 body=${2:-} a
	a=${authors[seq_no % ${#authors[@]}]}
	local when="@$((base_epoch + seq_no * 5400)) +0000"
	seq_no=$((seq_no + 1))
	g add -A
	local msg=$subject
	[[ -z $body ]] || msg=$(printf '%s\n\n%s' "$subject" "$body")
	GIT_AUTHOR_NAME=${a%%:*} GIT_AUTHOR_EMAIL=${a#*:} GIT_AUTHOR_DATE=$when \
		GIT_COMMITTER_NAME=${a%%:*} GIT_COMMITTER_EMAIL=${a#*:} GIT_COMMITTER_DATE=$when \
		g commit -q --no-verify -m "$msg"
}

head_sha() {
	g rev-parse HEAD
}

# --- file generators -------------------------------------------------------
# Every file is regenerated from a small counter, so contents (and shas) are a
# pure function of the parameters.

c_escape() {
	local s=$1
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	printf '%s' "$s"
}

gen_server_options() { # $1 = options string
	local opts=$1 o
	local -a arr=()
	read -r -a arr <<<"$opts" || true
	{
		printf '/* Server options compiled into mariadbd.\n'
		printf ' * The launcher appends them after the caller'"'"'s arguments, so they\n'
		printf ' * take precedence over the command line and option files. */\n'
		printf '#ifndef SERVER_OPTIONS_H\n#define SERVER_OPTIONS_H\n\n'
		printf '#include <stddef.h>\n\n'
		printf 'static const char *const server_options[] = {\n'
		if [[ ${#arr[@]} -gt 0 ]]; then
			for o in "${arr[@]}"; do
				printf '  "%s",\n' "$(c_escape "$o")"
			done
		fi
		printf '  NULL\n};\n\n#endif /* SERVER_OPTIONS_H */\n'
	} >"$dir/sql/server_options.h"
}

gen_readme() { # $1 = number of notes
	local n=$1 i
	{
		cat <<'EOF'
# MariaDB fixture source tree

This is a small stand-in for a MariaDB source tree, generated by
perfbisect's `scripts/make-fixture.sh`. It builds a `mariadbd` launcher
that executes the system MariaDB server with a few compiled-in options.

## Building

    cmake -S . -B build -DCMAKE_INSTALL_PREFIX=/tmp/prefix
    cmake --build build
    cmake --install build

This installs `bin/mariadbd` and `bin/mariadb-install-db` under the prefix.

## Notes
EOF
		for ((i = 1; i <= n; i++)); do
			printf -- '- Revision note %d: documentation reviewed.\n' "$i"
		done
	} >"$dir/README.md"
}

gen_changelog() { # $1 = number of entries
	local n=$1 i
	{
		printf '# ChangeLog\n\n'
		for ((i = n; i >= 1; i--)); do
			printf -- '- Entry %d: see MDEV-%d.\n' "$i" $((29000 + i * 13))
		done
	} >"$dir/Docs/ChangeLog.md"
}

gen_misc_c() { # $1 = number of notes, $2 = 1 to break the build
	local n=$1 broken=${2:-0} i
	{
		cat <<'EOF'
/* Miscellaneous helpers of the fixture server.  Nothing here changes the
   behaviour of the server; the file exists so that commits can touch C code
   without changing performance. */
#include "sql_misc.h"

static const char *const misc_notes[] = {
  "initial",
EOF
		for ((i = 1; i <= n; i++)); do
			printf '  "note %d",\n' "$i"
		done
		printf '};\n\n'
		if [[ $broken -eq 1 ]]; then
			printf 'static unsigned pending_cleanups = 0\n\n'
		fi
		cat <<'EOF'
unsigned misc_note_count(void)
{
  return (unsigned) (sizeof(misc_notes) / sizeof(misc_notes[0]));
}
EOF
	} >"$dir/sql/sql_misc.c"
}

gen_launcher_c() { # $1 = number of maintenance notes in the comment
	local n=$1 i
	{
		cat <<'EOF'
/* mariadbd launcher of the fixture tree.

   Replaces itself (execv, no fork) with the system MariaDB server found at
   configure time, passing
     argv[0]  the system server's path
     argv[1..] this program's own arguments, in order
     then     the support-directory options (FIXTURE_SUPPORT_OPTIONS)
     then     the compiled-in server options (sql/server_options.h), last,
              so that they win over earlier options.
EOF
		for ((i = 1; i <= n; i++)); do
			printf '   Maintenance note %d: comment reviewed.\n' "$i"
		done
		cat <<'EOF'
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture_config.h"
#include "server_options.h"
#include "sql_misc.h"

static const char *const support_options[] = { FIXTURE_SUPPORT_OPTIONS NULL };

static size_t count(const char *const *v)
{
  size_t n = 0;
  while (v[n])
    n++;
  return n;
}

int main(int argc, char **argv)
{
  size_t nsupport = count(support_options);
  size_t nserver = count(server_options);
  size_t n = 0, i;
  char **args;

  (void) misc_note_count();
  (void) storage_fixture_version();

EOF
		if [[ $releases -gt 0 ]]; then
			# A release fixture's launcher answers --version with the tree's version.
			cat <<'EOF'
  for (i = 1; i < (size_t) argc; i++)
    if (!strcmp(argv[i], "--version") || !strcmp(argv[i], "-V"))
    {
      printf("mariadbd  Ver %s-MariaDB-fixture for Linux on x86_64 (perfbisect fixture launcher of %s)\n",
             FIXTURE_OWN_VERSION, FIXTURE_REAL_MARIADBD);
      return 0;
    }

EOF
		fi
		cat <<'EOF'
  args = calloc((size_t) argc + nsupport + nserver + 1, sizeof(*args));
  if (!args)
  {
    perror("mariadbd launcher");
    return 127;
  }
  args[n++] = (char *) FIXTURE_REAL_MARIADBD;
  for (i = 1; i < (size_t) argc; i++)
    args[n++] = argv[i];
  for (i = 0; i < nsupport; i++)
    args[n++] = (char *) support_options[i];
  for (i = 0; i < nserver; i++)
    args[n++] = (char *) server_options[i];
  args[n] = NULL;

  execv(FIXTURE_REAL_MARIADBD, args);
  fprintf(stderr, "%s: cannot execute %s: %s\n",
          argc > 0 ? argv[0] : "mariadbd", FIXTURE_REAL_MARIADBD,
          strerror(errno));
  return 127;
}
EOF
	} >"$dir/sql/mysqld_launcher.c"
}

gen_test() { # $1 = number of test statements
	local n=$1 i
	{
		printf -- '--echo # Fixture test\n'
		for ((i = 0; i <= n; i++)); do
			printf 'SELECT %d AS fixture_case;\n' "$i"
		done
	} >"$dir/mysql-test/main/fixture.test"
	{
		printf '# Fixture test\n'
		for ((i = 0; i <= n; i++)); do
			printf 'SELECT %d AS fixture_case;\nfixture_case\n%d\n' "$i" "$i"
		done
	} >"$dir/mysql-test/main/fixture.result"
}

gen_storage_c() { # $1 = number of notes
	local n=$1 i
	{
		cat <<'EOF'
/* Example storage engine placeholder of the fixture tree.  Changing this file
   does not change the behaviour of the server. */
#include "sql_misc.h"

EOF
		for ((i = 1; i <= n; i++)); do
			printf '/* Engine note %d: reviewed. */\n' "$i"
		done
		printf '\nunsigned storage_fixture_version(void)\n{\n  return %du;\n}\n' $((100 + n))
	} >"$dir/storage/fixture/ha_fixture.c"
}

gen_storage_readme() { # $1 = number of notes
	local n=$1 i
	{
		printf '# Fixture storage engine\n\nA placeholder that is never loaded.\n\n'
		for ((i = 1; i <= n; i++)); do
			printf -- '- Design note %d.\n' "$i"
		done
	} >"$dir/storage/fixture/README.md"
}

gen_version() { # $1 = patch: a release fixture's VERSION, the launcher's --version
	cat >"$dir/VERSION" <<EOF
MYSQL_VERSION_MAJOR=10
MYSQL_VERSION_MINOR=11
MYSQL_VERSION_PATCH=$1
SERVER_MATURITY=stable
FIXTURE_RELEASE=1
EOF
}

gen_static_files() {
	mkdir -p "$dir/sql" "$dir/Docs" "$dir/mysql-test/main" "$dir/storage/fixture" \
		"$dir/scripts" "$dir/cmake"
	if [[ $releases -gt 0 ]]; then
		gen_version 1
	else
		cat >"$dir/VERSION" <<'EOF'
MYSQL_VERSION_MAJOR=10
MYSQL_VERSION_MINOR=11
MYSQL_VERSION_PATCH=99
SERVER_MATURITY=stable
EOF
	fi
	cat >"$dir/.gitignore" <<'EOF'
/build*/
EOF
	cat >"$dir/sql/sql_misc.h" <<'EOF'
#ifndef SQL_MISC_H
#define SQL_MISC_H
unsigned misc_note_count(void);
unsigned storage_fixture_version(void);
#endif
EOF
	cat >"$dir/cmake/fixture_config.h.in" <<'EOF'
/* Generated by CMake from cmake/fixture_config.h.in. */
#ifndef FIXTURE_CONFIG_H
#define FIXTURE_CONFIG_H
#define FIXTURE_REAL_MARIADBD "@FIXTURE_REAL_MARIADBD_C@"
#define FIXTURE_SUPPORT_OPTIONS @FIXTURE_SUPPORT_OPTIONS_C@
#endif
EOF
	if [[ $releases -gt 0 ]]; then
		sed -i 's|^#endif$|#define FIXTURE_OWN_VERSION "@FIXTURE_OWN_VERSION_C@"\n#endif|' "$dir/cmake/fixture_config.h.in"
	fi
	cat >"$dir/scripts/mariadb-install-db.sh.in" <<'EOF'
#!/bin/sh
# mariadb-install-db of the fixture tree: runs the system mariadb-install-db
# with the caller's arguments first (so --defaults-file=... stays first) and
# --basedir=<system basedir> last (the last --basedir wins), so that the
# system tool finds its SQL scripts, my_print_defaults and plugins.
# The bootstrap server is this tree's own mariadbd launcher (as in a real
# build), unless MYSQLD_BOOTSTRAP is already set.
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${MYSQLD_BOOTSTRAP+set}" ] && [ -x "$here/mariadbd" ]; then
  MYSQLD_BOOTSTRAP=$here/mariadbd
  export MYSQLD_BOOTSTRAP
fi
exec "@FIXTURE_REAL_INSTALL_DB@" "$@" "--basedir=@FIXTURE_SYSTEM_BASEDIR@"
EOF
	cat >"$dir/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(MariaDBFixture C)

# The system server that bin/mariadbd executes.  The listed directories are
# searched first (so an installed fixture launcher on PATH is never picked).
find_program(FIXTURE_REAL_MARIADBD NAMES mariadbd mysqld
  PATHS /usr/sbin /usr/libexec /usr/local/sbin /usr/local/libexec
        /usr/local/mysql/bin
  NO_DEFAULT_PATH)
find_program(FIXTURE_REAL_MARIADBD NAMES mariadbd mysqld)
if(NOT FIXTURE_REAL_MARIADBD)
  message(FATAL_ERROR "no system mariadbd/mysqld found; set -DFIXTURE_REAL_MARIADBD=/path")
endif()

find_program(FIXTURE_REAL_INSTALL_DB NAMES mariadb-install-db mysql_install_db
  PATHS /usr/bin /usr/local/bin /usr/local/mysql/scripts /usr/local/mysql/bin
  NO_DEFAULT_PATH)
find_program(FIXTURE_REAL_INSTALL_DB NAMES mariadb-install-db mysql_install_db)
if(NOT FIXTURE_REAL_INSTALL_DB)
  message(FATAL_ERROR "no system mariadb-install-db found; set -DFIXTURE_REAL_INSTALL_DB=/path")
endif()

# Ask the system server where its own files are.  They are located relative
# to --basedir, so a caller's --basedir=<install prefix> would otherwise hide
# plugins, non-English error messages and character set definitions.
# --help still probes a datadir: an empty one of ours, never /var/lib/mysql.
file(MAKE_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}/help-datadir")
execute_process(COMMAND "${FIXTURE_REAL_MARIADBD}" --no-defaults "--datadir=${CMAKE_CURRENT_BINARY_DIR}/help-datadir" --verbose --help
  OUTPUT_VARIABLE _fixture_help ERROR_QUIET RESULT_VARIABLE _fixture_rc)
function(fixture_help_value name out)
  set(_v "")
  if("${_fixture_help}" MATCHES "\n${name}[ \t]+([^\n]*)")
    string(STRIP "${CMAKE_MATCH_1}" _v)
    if(_v STREQUAL "(No default value)")
      set(_v "")
    endif()
    string(REGEX REPLACE "(.)/+$" "\\1" _v "${_v}")
  endif()
  set(${out} "${_v}" PARENT_SCOPE)
endfunction()

get_filename_component(_fixture_sbin "${FIXTURE_REAL_MARIADBD}" DIRECTORY)
get_filename_component(_fixture_prefix "${_fixture_sbin}" DIRECTORY)
fixture_help_value(basedir _basedir)
if(NOT _basedir)
  set(_basedir "${_fixture_prefix}")
endif()
fixture_help_value(plugin-dir _plugin_dir)
if(NOT _plugin_dir AND IS_DIRECTORY "${_basedir}/lib/mysql/plugin")
  set(_plugin_dir "${_basedir}/lib/mysql/plugin")
endif()
fixture_help_value(character-sets-dir _charsets_dir)
if(NOT _charsets_dir AND IS_DIRECTORY "${_basedir}/share/mysql/charsets")
  set(_charsets_dir "${_basedir}/share/mysql/charsets")
endif()
fixture_help_value(lc-messages-dir _messages_dir)
if(NOT _messages_dir)
  foreach(_d "${_charsets_dir}/.." "${_basedir}/share/mysql" "${_basedir}/share/mariadb")
    get_filename_component(_d "${_d}" ABSOLUTE)
    if(EXISTS "${_d}/english/errmsg.sys")
      set(_messages_dir "${_d}")
      break()
    endif()
  endforeach()
endif()

set(FIXTURE_SYSTEM_BASEDIR "${_basedir}" CACHE PATH "basedir passed last to the system mariadb-install-db")
set(FIXTURE_PLUGIN_DIR "${_plugin_dir}" CACHE PATH "--plugin-dir compiled into the launcher (empty: none)")
set(FIXTURE_LC_MESSAGES_DIR "${_messages_dir}" CACHE PATH "--lc-messages-dir compiled into the launcher (empty: none)")
set(FIXTURE_CHARACTER_SETS_DIR "${_charsets_dir}" CACHE PATH "--character-sets-dir compiled into the launcher (empty: none)")

function(fixture_c_string in out)
  string(REPLACE "\\" "\\\\" _s "${in}")
  string(REPLACE "\"" "\\\"" _s "${_s}")
  set(${out} "${_s}" PARENT_SCOPE)
endfunction()

set(FIXTURE_SUPPORT_OPTIONS_C "")
foreach(_pair "plugin-dir=${FIXTURE_PLUGIN_DIR}"
              "lc-messages-dir=${FIXTURE_LC_MESSAGES_DIR}"
              "character-sets-dir=${FIXTURE_CHARACTER_SETS_DIR}")
  if(NOT _pair MATCHES "=$")
    fixture_c_string("--${_pair}" _q)
    string(APPEND FIXTURE_SUPPORT_OPTIONS_C "\"${_q}\", ")
  endif()
endforeach()
fixture_c_string("${FIXTURE_REAL_MARIADBD}" FIXTURE_REAL_MARIADBD_C)

message(STATUS "Fixture: system server ${FIXTURE_REAL_MARIADBD}")
message(STATUS "Fixture: system mariadb-install-db ${FIXTURE_REAL_INSTALL_DB} (--basedir=${FIXTURE_SYSTEM_BASEDIR})")
message(STATUS "Fixture: support options ${FIXTURE_SUPPORT_OPTIONS_C}")

configure_file(cmake/fixture_config.h.in "${CMAKE_CURRENT_BINARY_DIR}/fixture_config.h" @ONLY)
configure_file(scripts/mariadb-install-db.sh.in
  "${CMAKE_CURRENT_BINARY_DIR}/scripts/mariadb-install-db" @ONLY)

add_executable(mariadbd
  sql/mysqld_launcher.c
  sql/sql_misc.c
  storage/fixture/ha_fixture.c)
target_include_directories(mariadbd PRIVATE
  "${CMAKE_CURRENT_BINARY_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}/sql")

install(TARGETS mariadbd DESTINATION bin)
install(PROGRAMS "${CMAKE_CURRENT_BINARY_DIR}/scripts/mariadb-install-db"
  DESTINATION bin)
EOF
	if [[ $releases -gt 0 ]]; then
		# A release fixture's launcher answers --version with the tree's
		# version (FIXTURE_OWN_VERSION); other fixtures stay byte for byte
		# as they were (stored sessions name their commits).
		cat >"$dir/cmake/fixture_version.cmake" <<'EOF'
# The tree's version, for the launcher's --version (a release fixture).
file(STRINGS "${CMAKE_CURRENT_SOURCE_DIR}/VERSION" _fixture_version_lines)
foreach(_l ${_fixture_version_lines})
  if(_l MATCHES "^([A-Z_]+)=(.*)$")
    set(_fv_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
  endif()
endforeach()
set(FIXTURE_OWN_VERSION_C "${_fv_MYSQL_VERSION_MAJOR}.${_fv_MYSQL_VERSION_MINOR}.${_fv_MYSQL_VERSION_PATCH}")
EOF
		sed -i '/^message(STATUS "Fixture: system server/i include(cmake/fixture_version.cmake)' "$dir/CMakeLists.txt"
	fi
}

# --- commit kinds ----------------------------------------------------------
n_readme=0 n_changelog=0 n_misc=0 n_launcher=0 n_test=0 n_storage=0 n_storage_doc=0

mdev() { # deterministic, realistic-looking issue number for position $1
	printf 'MDEV-%d' $((30000 + $1 * 83 + ($1 * 37) % 29))
}

side_mdev() { # issue number for side-branch position $1
	printf 'MDEV-%d' $((30041 + (fork_pos + $1) * 83 + ($1 * 53) % 31))
}

normal_main_commit() { # $1 = position
	local pos=$1 id kind
	id=$(mdev "$pos")
	kind=$((pos % 5))
	case $kind in
	0)
		n_readme=$((n_readme + 1))
		gen_readme "$n_readme"
		local -a s=("Fix typo in README" "README: clarify build instructions"
			"Update README for packaging notes")
		commit_all "${s[pos % 3]}"
		;;
	1)
		n_misc=$((n_misc + 1))
		gen_misc_c "$n_misc" 0
		local -a s=("$id Refactor misc helpers" "$id Cleanup: simplify sql_misc.c"
			"$id Remove redundant cast in misc_note_count()")
		commit_all "${s[pos % 3]}" "Code cleanup, no functional change."
		;;
	2)
		n_changelog=$((n_changelog + 1))
		gen_changelog "$n_changelog"
		local -a s=("Update ChangeLog" "Docs: add release notes entry for $id"
			"ChangeLog: mention $id")
		commit_all "${s[pos % 3]}"
		;;
	3)
		n_launcher=$((n_launcher + 1))
		gen_launcher_c "$n_launcher"
		local -a s=("Fix comment in mysqld launcher" "Cleanup: comment style in mysqld_launcher.c"
			"$id Document argument order of the launcher")
		commit_all "${s[pos % 3]}"
		;;
	4)
		n_test=$((n_test + 1))
		gen_test "$n_test"
		local -a s=("$id Add test case" "Update mysql-test result after $id"
			"$id Extend fixture.test")
		commit_all "${s[pos % 3]}"
		;;
	esac
}

normal_side_commit() { # $1 = position on the side branch
	local pos=$1 id
	id=$(side_mdev "$pos")
	if ((pos % 2)); then
		n_storage=$((n_storage + 1))
		gen_storage_c "$n_storage"
		local -a s=("$id Refactor fixture engine" "$id Cleanup in ha_fixture.c")
		commit_all "${s[(pos / 2) % 2]}" "No functional change."
	else
		n_storage_doc=$((n_storage_doc + 1))
		gen_storage_readme "$n_storage_doc"
		commit_all "$id Document fixture engine design"
	fi
}

culprit_commit() { # $1 = issue id for the subject
	local id=$1
	gen_server_options "$culprit_options"
	commit_all "$id Tune default server settings for small instances" \
		"Reduce the default memory footprint of the server."
	culprit_sha=$(head_sha)
}

second_culprit_commit() { # $1 = issue id for the subject
	gen_server_options "$second_options"
	commit_all "$1 Shrink the buffer pool further for containers" \
		"Containers get less memory; follow them."
	second_sha=$(head_sha)
}

broken_commit() { # $1 = position
	local id
	id=$(mdev "$1")
	broken_id=$id
	gen_misc_c "$n_misc" 1
	commit_all "$id Track pending cleanups in misc helpers"
	broken_sha=$(head_sha)
}

fix_commit() {
	gen_misc_c "$n_misc" 0
	commit_all "Fix build after $broken_id" "Revert the incomplete declaration that broke compilation."
	fixed_sha=$(head_sha)
}

main_commit() { # $1 = position
	local pos=$1
	if [[ $broken_pos -ne 0 && $pos -eq $broken_pos ]]; then
		broken_commit "$pos"
	elif [[ $broken_pos -ne 0 && $pos -eq $((broken_pos + 1)) ]]; then
		fix_commit
	elif [[ $no_regression -eq 0 && $culprit_on_branch -eq 0 && $pos -eq $culprit_pos ]]; then
		culprit_commit "$(mdev "$pos")"
	elif [[ $second_pos -ne 0 && $pos -eq $second_pos ]]; then
		second_culprit_commit "$(mdev "$pos")"
	else
		normal_main_commit "$pos"
	fi
}

# --- build the history -------------------------------------------------------
culprit_sha="" second_sha="" broken_sha="" fixed_sha="" fork_sha="" merge_sha="" broken_id=""
side_branch=bb-10.11-fixture-engine

gen_static_files
gen_server_options "$base_options"
gen_readme 0
gen_changelog 0
gen_misc_c 0 0
gen_launcher_c 0
gen_test 0
gen_storage_c 0
gen_storage_readme 0
commit_all "Initial import of the fixture source tree"
g tag "$good_tag"
good_sha=$(head_sha)
release_patch=1
if [[ $releases -gt 0 ]]; then
	g tag "mariadb-10.11.$release_patch"
fi

for ((pos = 1; pos <= commits; pos++)); do
	if [[ $merges -eq 1 && $pos -eq $merge_pos ]]; then
		# Build the side branch from the fork point, then merge it.
		g checkout -q -b "$side_branch" "$fork_sha"
		for ((sp = 1; sp <= branch_commits; sp++)); do
			if [[ $no_regression -eq 0 && $culprit_on_branch -eq 1 && $sp -eq $culprit_pos ]]; then
				culprit_commit "$(side_mdev "$sp")"
			else
				normal_side_commit "$sp"
			fi
		done
		g checkout -q main
		a=${authors[seq_no % ${#authors[@]}]}
		when="@$((base_epoch + seq_no * 5400)) +0000"
		seq_no=$((seq_no + 1))
		GIT_AUTHOR_NAME=${a%%:*} GIT_AUTHOR_EMAIL=${a#*:} GIT_AUTHOR_DATE=$when \
			GIT_COMMITTER_NAME=${a%%:*} GIT_COMMITTER_EMAIL=${a#*:} GIT_COMMITTER_DATE=$when \
			g merge -q --no-ff --no-verify --no-edit \
			-m "Merge branch '$side_branch' into main" "$side_branch" >/dev/null
		merge_sha=$(head_sha)
		continue
	fi
	if [[ $releases -gt 0 && $(((pos - 1) % releases)) -eq 0 ]]; then
		release_patch=$((release_patch + 1)) # the commit after a release
		gen_version "$release_patch"
	fi
	main_commit "$pos"
	if [[ $releases -gt 0 && ($((pos % releases)) -eq 0 || $pos -eq $commits) ]]; then
		g tag "mariadb-10.11.$release_patch"
	fi
	if [[ $merges -eq 1 && $pos -eq $fork_pos ]]; then
		fork_sha=$(head_sha)
	fi
done
g tag "$bad_tag"
bad_sha=$(head_sha)

# --- sanity checks of the generated history ---------------------------------
changes=$(g log --format=%H --full-history "$good_tag..$bad_tag" -- sql/server_options.h)
if [[ $no_regression -eq 1 ]]; then
	[[ -z $changes ]] || die "internal error: options changed in a no-regression history"
else
	want=$culprit_sha
	[[ -z $second_sha ]] || want="$second_sha"$'\n'"$culprit_sha"
	[[ $(g log --no-merges --format=%H "$good_tag..$bad_tag" -- sql/server_options.h) == "$want" ]] ||
		die "internal error: the culprit(s) are not the only commits changing the options"
fi
[[ -z $(g status --porcelain) ]] || die "internal error: work tree not clean"

done_ok=1

# --- outputs -----------------------------------------------------------------
mkdir -p -- "$(dirname -- "$culprit_file")"
if [[ -n $culprit_sha ]]; then
	printf '%s\n' "$culprit_sha" >"$culprit_file"
else
	: >"$culprit_file"
fi
{
	printf 'GOOD_TAG=%q\nBAD_TAG=%q\n' "$good_tag" "$bad_tag"
	printf 'GOOD_SHA=%s\nBAD_SHA=%s\nCULPRIT_SHA=%s\nSECOND_CULPRIT_SHA=%s\n' "$good_sha" "$bad_sha" "$culprit_sha" "$second_sha"
	printf 'BROKEN_SHA=%s\nFIXED_SHA=%s\n' "$broken_sha" "$fixed_sha"
	printf 'FORK_SHA=%s\nMERGE_SHA=%s\n' "$fork_sha" "$merge_sha"
	printf 'BASE_OPTIONS=%q\nCULPRIT_OPTIONS=%q\nSECOND_CULPRIT_OPTIONS=%q\n' "$base_options" "$culprit_options" "$second_options"
	printf 'CULPRIT_FILE=%q\n' "$culprit_file"
} >"$dir/.git/perfbisect-fixture.env"

if [[ $quiet -eq 0 ]]; then
	printf 'fixture repository: %s\n' "$dir"
	printf '  good    (%s): %s\n' "$good_tag" "$good_sha"
	printf '  bad     (%s): %s\n' "$bad_tag" "$bad_sha"
	if [[ -n $culprit_sha ]]; then
		printf '  culprit: %s  (%s -> %s)\n' "$culprit_sha" "$base_options" "$culprit_options"
		[[ -z $second_sha ]] || printf '  second culprit: %s  (-> %s)\n' "$second_sha" "$second_options"
	else
		printf '  culprit: none (--no-regression; options: %s)\n' "$base_options"
	fi
	[[ -z $broken_sha ]] || printf '  broken : %s\n  fixed  : %s\n' "$broken_sha" "$fixed_sha"
	[[ -z $merge_sha ]] || printf '  fork   : %s\n  merge  : %s (branch %s)\n' "$fork_sha" "$merge_sha" "$side_branch"
	printf '  commits: %s (good..bad, all parents)\n' "$(g rev-list --count "$good_tag..$bad_tag")"
	printf '  culprit sha written to: %s\n' "$culprit_file"
	printf '  details: %s\n' "$dir/.git/perfbisect-fixture.env"
fi
