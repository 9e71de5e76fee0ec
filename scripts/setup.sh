#!/usr/bin/env bash
# setup.sh - install what perfbisect, its demo and its tests need, when missing:
# Debian's mariadb-server (a real server for the fixture and the tests), cmake,
# ccache, gcc, git, sysbench (the yardstick), distcc and icecc (the compile farm tests run their daemons
# on test hosts; iproute2 makes those hosts' network namespaces; nginx-light stores a shared build cache
# over HTTP), chromium (the HTML report's
# tests load it headless), perf (linux-perf: explain profiles the server with it), lld
# (scripts/variance/relink-layout.sh links a server again in another order), and the runner
# hosts' test daemons: openssh-server (sshd) and Slurm (slurmctld, slurmd, slurm-client, munge).
# Go (1.26+) must be installed.
# Safe to run again: it installs only what is missing. Prints what it did.
set -euo pipefail

need=()
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
command -v mariadb-install-db >/dev/null 2>&1 || need+=(mariadb-server)
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v ccache >/dev/null 2>&1 || need+=(ccache)
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v make >/dev/null 2>&1 || need+=(make)
command -v git >/dev/null 2>&1 || need+=(git)
command -v sysbench >/dev/null 2>&1 || need+=(sysbench)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v distcc >/dev/null 2>&1 || need+=(distcc)
command -v icecc >/dev/null 2>&1 || need+=(icecc)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || need+=(iproute2)
command -v perf >/dev/null 2>&1 || need+=(linux-perf)
command -v ld.lld >/dev/null 2>&1 || need+=(lld)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v srun >/dev/null 2>&1 || need+=(slurm-client)
command -v slurmctld >/dev/null 2>&1 || [ -x /usr/sbin/slurmctld ] || need+=(slurmctld)
command -v slurmd >/dev/null 2>&1 || [ -x /usr/sbin/slurmd ] || need+=(slurmd)
command -v munged >/dev/null 2>&1 || [ -x /usr/sbin/munged ] || need+=(munge)

if [ ${#need[@]} -gt 0 ]; then
	mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
	echo "setup: installing ${need[*]}"
	sudo=()
	[ "$(id -u)" -eq 0 ] || sudo=(sudo)
	export DEBIAN_FRONTEND=noninteractive
	"${sudo[@]}" apt-get update -qq
	"${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
	if printf '%s\n' "${need[@]}" | grep -qx icecc && command -v systemctl >/dev/null 2>&1; then
		# The package starts an iceccd that looks for a scheduler on every
		# network the machine is on; the tests start their own daemons on
		# private test hosts. Ours, so stopped (start it to join a farm).
		"${sudo[@]}" systemctl disable --now iceccd icecc-scheduler >/dev/null 2>&1 || true
		echo "setup: stopped and disabled the iceccd service icecc's package started (systemctl enable --now iceccd to join a farm)"
	fi
	if printf '%s\n' "${need[@]}" | grep -qx nginx-light && command -v systemctl >/dev/null 2>&1; then
		# The tests start their own nginx (a shared build cache over HTTP) on
		# a loopback address; the package's server on port 80 is not ours.
		"${sudo[@]}" systemctl disable --now nginx >/dev/null 2>&1 || true
		echo "setup: stopped and disabled the nginx service nginx-light's package started"
	fi
	if printf '%s\n' "${need[@]}" | grep -qxE 'openssh-server|slurmctld|slurmd|munge' && command -v systemctl >/dev/null 2>&1; then
		# The runner-host tests start their own sshd, munged, slurmctld and
		# slurmd on loopback addresses; the packages' services are not ours.
		for svc in ssh munge slurmctld slurmd; do
			if printf '%s\n' "${need[@]}" | grep -qx "$(case $svc in ssh) echo openssh-server ;; *) echo $svc ;; esac)"; then
				"${sudo[@]}" systemctl disable --now "$svc" >/dev/null 2>&1 || true
			fi
		done
		echo "setup: stopped and disabled the ssh, munge and Slurm services their packages started (the tests run their own)"
	fi
else
	echo "setup: mariadb-server, cmake, ccache, gcc, git, sysbench, chromium, distcc, icecc, iproute2, nginx, perf, lld, sshd and Slurm are installed"
fi

if ! command -v go >/dev/null 2>&1; then
	echo "setup: go not found in PATH; install Go 1.26 or later (https://go.dev/doc/install) and add it to PATH" >&2
	exit 2
fi
