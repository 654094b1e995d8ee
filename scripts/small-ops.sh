#!/usr/bin/env bash
# Small operations against Open MPI and MPICH, in one run: the floor of
# this machine (bench floor), then, 20 000 back-to-back calls and 2 000
# from the start, Barrier, Bcast, Reduce, Allreduce and Allgather at 8 B
# and 1 KiB on 2 processes, the same five at 8 B on 4 processes (the MPIs
# oversubscribed), goroutine ranks (Local) at 2 and 4, shared-memory
# ping-pong at 8 B, and the hierarchical Allreduce, Bcast and Barrier at
# 8 B against the families that ignore the nodes on 4 ranks of two
# pretend nodes (commtune run --nodes: one processor each, TCP between). Each comparison alternates ROUNDS runs of each side
# (default 3) and prints means with p50 and p99; a ratio below 1 means
# commtune is faster. Check that nothing else runs first (uptime): a run
# beside other work says nothing.
# Usage: scripts/small-ops.sh [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-${ROUNDS:-3}}
bin=$(mktemp -d)/commtune
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/commtune

section() { printf '\n== %s\n' "$*"; }

section "machine: $(nproc) processors; $(uptime)"
section "floor"
"$bin" bench floor

ops=(barrier bcast reduce allreduce allgather)
for vs in openmpi mpich; do
	for calls in 20000 2000; do
		section "2 processes, $calls calls, against $vs"
		for op in "${ops[@]}"; do
			"$bin" bench coll --op "$op" -n 2 --sizes 8,1K --iters "$calls" --vs "$vs" --rounds "$rounds" 2>/dev/null
		done
	done
done

section "4 processes on $(nproc) processors, 20000 calls, against openmpi"
for op in "${ops[@]}"; do
	"$bin" bench coll --op "$op" -n 4 --sizes 8 --iters 20000 --vs openmpi --rounds "$rounds" 2>/dev/null
done

for n in 2 4; do
	section "goroutine ranks, $n of them, 20000 calls"
	for op in barrier bcast allreduce; do
		printf "%s " "$op"
		"$bin" bench coll --op "$op" -n "$n" --sizes 8 --iters 20000 --transport inproc 2>/dev/null | tail -n 1
	done
done

for vs in openmpi mpich; do
	section "shared-memory ping-pong, 8 B, against $vs"
	"$bin" bench pingpong --transport shm --sizes 8 --iters 20000 --vs "$vs" --rounds "$rounds" 2>/dev/null
done

section "4 ranks on 2 pretend nodes, 20000 calls: hierarchical against the families that ignore the nodes"
for r in $(seq "$rounds"); do
	"$bin" bench coll --op allreduce -n 4 --nodes 2 --sizes 8 --iters 20000 \
		--algo hierarchical,reduce-bcast/binomial,recursive-doubling,reduce-bcast/knomial/k=4,rabenseifner 2>/dev/null | grep -E '^ +allreduce/'
	"$bin" bench coll --op bcast -n 4 --nodes 2 --sizes 8 --iters 20000 \
		--algo hierarchical,binomial,knomial,flat,binary,chain 2>/dev/null | grep -E '^ +bcast/'
	"$bin" bench coll --op barrier -n 4 --nodes 2 --sizes 8 --iters 20000 \
		--algo hierarchical,dissemination,tree:binomial,tree:knomial 2>/dev/null | grep -E '^ +barrier/'
done
