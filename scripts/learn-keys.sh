#!/usr/bin/env bash
# What a program pays for collective calls with no setting: for each key
# (2 and 4 ranks over shared memory; Allreduce and Bcast; 1 KiB, 64 KiB,
# 1 MiB), `commtune bench coll --algo learn` makes CALLS calls back to back
# from a cold start (no profile, no saved learning), then every algorithm
# of the operation forced (FORCED calls each: a mean over a thousand says
# what one costs), in the same job; a second job, sharing the
# first's state file, measures the warm start. Prints per key the default's
# wall time per call (each series' elapsed time over its calls, the slowest
# rank's: what back-to-back calls cost a program) over the best forced
# algorithm's, cold and warm, then the same ratio of the means of each
# call's slowest rank (which charges ranks' turns at being slow), and writes
# every report into $OUT (default learn-keys). Needs jq.
# Usage: scripts/learn-keys.sh [calls] [forced-calls]
set -euo pipefail
cd "$(dirname "$0")/.."
calls=${1:-5000} forced=${2:-1000}
out=${OUT:-learn-keys}
mkdir -p "$out"
out=$(cd "$out" && pwd)
go build -o "$out/commtune" ./cmd/commtune
export COMMTUNE_PROFILE=off
printf '%-5s %-10s %8s %6s %6s %9s %9s  %s\n' ranks op size cold warm cold-call warm-call "best forced (wall us)"
for n in 2 4; do
	for op in allreduce bcast; do
		state="$out/state-$op-$n.json"
		rm -f "$state"
		for run in cold warm; do
			COMMTUNE_TUNE_STATE="$state" "$out/commtune" bench coll --op "$op" --algo learn --calls "$calls" --forced-calls "$forced" \
				--sizes 1K,64K,1M -n "$n" --transport shm --json >"$out/$op-$n-$run.json" 2>/dev/null
		done
		for i in 0 1 2; do
			ratio() { # $1 run, $2 the mean: wall_us or mean_us
				jq -r ".runs[$i] | (.$2 / ([.fixed[].$2] | min))" "$out/$op-$n-$1.json"
			}
			best=$(jq -r ".runs[$i] | .fixed | min_by(.wall_us) | \"\(.algo) \(.wall_us*10|round/10)\"" "$out/$op-$n-cold.json")
			size=$(jq -r ".runs[$i].bytes" "$out/$op-$n-cold.json")
			printf '%-5s %-10s %8s %6.2f %6.2f %9.2f %9.2f  %s\n' "$n" "$op" "$size" "$(ratio cold wall_us)" "$(ratio warm wall_us)" \
				"$(ratio cold mean_us)" "$(ratio warm mean_us)" "$best"
		done
	done
done
