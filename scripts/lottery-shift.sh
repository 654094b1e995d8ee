#!/usr/bin/env bash
# Changing conditions under the selection: runs `commtune bench coll --algo
# learn` (ALGO=lottery: --algo lottery) and, part way through, starts a CPU
# hog that runs to the end. With learn, FORCED (default 100) is each
# forced algorithm's calls, so that the selection's calls fill the run.
# Writes the report as JSON and the convergence figures into $OUT (default
# lottery-shift), and prints when the hog began, in unix µs, the clock of
# the report's at_unix_us.
#
# HOG=fifo (the default; needs root): one busy loop pinned to the last
# processor at real-time priority, which leaves the ranks that processor's
# 5 % the kernel keeps for others (sched_rt_runtime_us) and the rest. With
# 4 ranks on 2 processors, losing one reverses the order of some
# algorithms (bcast at 1 MiB: binary 471 µs and knomial 718 µs on both,
# 1526 and 1029 µs on one), so the lottery has somewhere to move.
# HOG=fair: one busy loop per processor at normal priority, which slows
# every algorithm alike here.
# HOG=pin: the job loses all processors but the first (taskset of its
# processes), as when a container's CPU set shrinks. Here, unlike the
# hogs, that reorders the candidates: allreduce at 1 MiB on 4 ranks went
# from knomial 1514, binomial 1623, binomial/64K 2341 µs to knomial 2479,
# binomial/64K 2656, binomial 3324 µs.
# Usage: scripts/lottery-shift.sh [op] [size] [ranks] [calls] [after-seconds] [transport]
set -euo pipefail
cd "$(dirname "$0")/.."
op=${1:-bcast} size=${2:-1K} ranks=${3:-4} calls=${4:-3000} after=${5:-3} transport=${6:-shm}
out=${OUT:-lottery-shift}
hog=${HOG:-fifo}
algo=${ALGO:-learn}
if [[ $algo != learn && $algo != lottery ]]; then
	echo "ALGO=$algo: want learn or lottery" >&2
	exit 2
fi
if [[ $hog != fifo && $hog != fair && $hog != pin ]]; then
	echo "HOG=$hog: want fifo, fair or pin" >&2
	exit 2
fi
mkdir -p "$out"
go build -o "$out/commtune" ./cmd/commtune
hogs=()
trap 'kill "${hogs[@]}" 2>/dev/null || true' EXIT
extra=()
if [[ $algo == learn ]]; then
	extra=(--forced-calls "${FORCED:-100}")
fi
"$out/commtune" bench coll --op "$op" --algo "$algo" "${extra[@]}" --calls "$calls" --sizes "$size" -n "$ranks" --transport "$transport" --json >"$out/report.json" &
bench=$!
sleep "$after"
case $hog in
fifo)
	cpu=$(($(nproc) - 1))
	echo "CPU hog (real-time busy loop on processor $cpu) from $(date +%s%6N) unix µs" | tee "$out/shift.txt"
	taskset -c "$cpu" chrt -f 50 bash -c 'while :; do :; done' &
	hogs+=($!)
	;;
fair)
	echo "CPU hog (one busy loop per processor) from $(date +%s%6N) unix µs" | tee "$out/shift.txt"
	for _ in $(seq "$(nproc)"); do
		bash -c 'while :; do :; done' &
		hogs+=($!)
	done
	;;
pin)
	echo "the job's processes pinned to processor 0 from $(date +%s%6N) unix µs" | tee "$out/shift.txt"
	for p in $(pgrep -f "$out/commtune "); do
		taskset -a -p -c 0 "$p" >/dev/null
	done
	;;
esac
wait "$bench"
"$out/commtune" plot --convergence "$out/report.json" --out "$out"
