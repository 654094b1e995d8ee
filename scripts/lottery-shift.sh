#!/usr/bin/env bash
# Changing conditions under the lottery: runs `commtune bench coll --algo
# lottery` and, part way through, starts one busy loop per processor (a
# CPU hog) that runs to the end. Writes the report as JSON and the
# convergence figures into $OUT (default lottery-shift), and prints when
# the hog began, in unix µs, the clock of the report's at_unix_us.
# Usage: scripts/lottery-shift.sh [op] [size] [ranks] [calls] [after-seconds] [transport]
set -euo pipefail
cd "$(dirname "$0")/.."
op=${1:-bcast} size=${2:-1K} ranks=${3:-4} calls=${4:-3000} after=${5:-3} transport=${6:-shm}
out=${OUT:-lottery-shift}
mkdir -p "$out"
go build -o "$out/commtune" ./cmd/commtune
hogs=()
trap 'kill "${hogs[@]}" 2>/dev/null || true' EXIT
"$out/commtune" bench coll --op "$op" --algo lottery --calls "$calls" --sizes "$size" -n "$ranks" --transport "$transport" --json >"$out/report.json" &
bench=$!
sleep "$after"
echo "CPU hog (one busy loop per processor) from $(date +%s%6N) unix µs" | tee "$out/shift.txt"
for _ in $(seq "$(nproc)"); do
	bash -c 'while :; do :; done' &
	hogs+=($!)
done
wait "$bench"
"$out/commtune" plot --convergence "$out/report.json" --out "$out"
