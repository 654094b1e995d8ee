#!/usr/bin/env bash
# End-to-end run under Slurm: installs slurm-wlm and munge (Debian, as
# root), writes a single-node slurm.conf, starts its own munged (own socket), slurmctld and
# slurmd, runs examples/allreduce with `srun -n 4 --mpi=pmi2` and
# `srun -n 4 --mpi=pmix` (in both PMIx encodings; said and left out when
# Slurm has no pmix plugin), checks that `srun -n 4` without either is
# refused, and stops the daemons. Exit status: the first failing srun's.
# Usage: scripts/slurm-e2e.sh [ranks]
# With SLURM_E2E_ALSO set to a command, it also runs
# `srun -n ranks --mpi=MPI $SLURM_E2E_ALSO` (its environment passed on)
# for each MPI plugin SLURM_E2E_ALSO_MPI lists (default "pmi2"), and
# prints "slurm-e2e: also (MPI): exit status N at NS" whatever N is;
# SLURM_E2E_ALSO_ONLY=1 runs that alone, without the example.
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-4}
if [ "$(id -u)" != 0 ]; then
	echo "slurm-e2e: run as root (it starts the Slurm and munge daemons)" >&2
	exit 2
fi
# One run at a time on a machine: two would share Slurm's ports.
lock=/run/lock/commtune-slurm-e2e.lock
mkdir -p /run/lock
exec 9>"$lock"
if ! flock -w 600 9; then
	echo "slurm-e2e: another run still holds $lock after 10 minutes" >&2
	exit 2
fi
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi
work=$(mktemp -d /tmp/commtune-slurm.XXXXXX)
host=$(hostname -s)
cpus=$(( ranks > $(nproc) ? ranks : $(nproc) ))
# A munged of this run's own, on its own socket: a munged of the system
# or of another run is neither used nor stopped, and none is left behind.
munge=$work/munge
chmod 755 "$work"
mkdir -p "$work/spool/ctld" "$work/spool/d" "$munge"
conf=$work/slurm.conf
cat >"$conf" <<CONF
ClusterName=commtune
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$munge/munge.socket
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdParameters=config_overrides
StateSaveLocation=$work/spool/ctld
SlurmdSpoolDir=$work/spool/d
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$conf
# running: the process lives and is not a zombie (where PID 1 does not
# reap, a stopped daemon stays one; taking it for a live one once made a
# run use a munged that was gone).
running() { ps -o stat= -p "$1" 2>/dev/null | grep -qv Z; }
stop() {
	for p in slurmd slurmctld; do
		[ -f "$work/$p.pid" ] && kill "$(cat "$work/$p.pid")" 2>/dev/null || true
	done
	[ -f "$munge/munged.pid" ] && kill "$(cat "$munge/munged.pid")" 2>/dev/null || true
	# Wait for them to go: a run right after this one starts its own.
	for _ in $(seq 1 50); do
		busy=
		for f in "$work/slurmd.pid" "$work/slurmctld.pid" "$munge/munged.pid"; do
			[ -f "$f" ] && running "$(cat "$f")" && busy=1
		done
		[ -z "$busy" ] && break
		sleep 0.1
	done
	rm -rf "$work"
}
trap stop EXIT
# daemon starts a daemon with a clean environment: what the jobs are
# given (SLURM_E2E_ALSO's variables) is theirs alone, so a caller that
# looks for its jobs' processes by environment finds only the tasks.
# The daemons do not hold the lock: it is released when this run ends.
daemon() { env -i PATH="$PATH" SLURM_CONF="$conf" "$@" 9>&-; }
[ -f /etc/munge/munge.key ] || mungekey --create >/dev/null 2>&1 || /usr/sbin/create-munge-key -f >/dev/null
chown -R munge: /etc/munge "$munge" 2>/dev/null || true
daemon runuser -u munge -- munged --socket="$munge/munge.socket" --pid-file="$munge/munged.pid" \
	--log-file="$munge/munged.log" --seed-file="$munge/munged.seed"
for _ in $(seq 1 50); do
	[ -S "$munge/munge.socket" ] && break
	sleep 0.1
done
if [ ! -S "$munge/munge.socket" ]; then
	echo "slurm-e2e: munged did not start:" >&2
	cat "$munge/munged.log" >&2 2>/dev/null || true
	exit 1
fi
daemon slurmctld
daemon slurmd
for _ in $(seq 1 30); do
	if sinfo -h -o %t 2>/dev/null | grep -q idle; then break; fi
	sleep 1
done
sinfo
# example runs examples/allreduce under each plugin, then without PMI.
example() {
	bin=$work/allreduce
	go build -o "$bin" ./examples/allreduce
	for mpi in $plugins; do
		echo "+ srun -n $ranks --mpi=$mpi $bin"
		COMMTUNE_PROFILE=off srun -n "$ranks" --mpi=$mpi "$bin"
	done
	if [ "$plugins" != pmi2 ]; then
		echo "+ COMMTUNE_PMIX=v3 srun -n $ranks --mpi=pmix $bin"
		COMMTUNE_PMIX=v3 COMMTUNE_PROFILE=off srun -n "$ranks" --mpi=pmix "$bin"
	fi
	echo "+ srun -n $ranks $bin   (no PMI: each task must refuse to run alone)"
	if COMMTUNE_PROFILE=off srun -n "$ranks" "$bin"; then
		echo "slurm-e2e: tasks without PMI ran" >&2
		exit 1
	fi
}
plugins=pmi2
if srun --mpi=list 2>&1 | grep -qw pmix; then
	plugins="pmi2 pmix"
else
	echo "slurm-e2e: this Slurm has no pmix plugin: --mpi=pmix not run"
fi
[ -n "${SLURM_E2E_ALSO_ONLY:-}" ] || example
if [ -n "${SLURM_E2E_ALSO:-}" ]; then
	for mpi in ${SLURM_E2E_ALSO_MPI:-pmi2}; do
		if [ "$mpi" = pmix ] && [ "$plugins" = pmi2 ]; then
			continue
		fi
		echo "+ srun -n $ranks --mpi=$mpi $SLURM_E2E_ALSO"
		status=0
		COMMTUNE_PROFILE=off srun -n "$ranks" --mpi="$mpi" $SLURM_E2E_ALSO || status=$?
		echo "slurm-e2e: also ($mpi): exit status $status at $(date +%s%N)"
	done
fi
