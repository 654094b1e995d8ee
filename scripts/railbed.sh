#!/usr/bin/env bash
# The multirail test bed: two network namespaces ("hosts" A and B) joined
# by one veth pair per rail, each shaped with tbf on both ends to its rate,
# so that rails of different speeds exist on one machine. Needs root and
# iproute2 (ip, tc).
#
#   scripts/railbed.sh up [RATE...]   build it; default rates 800mbit 400mbit
#                                     (one rail per rate, at most 4)
#   scripts/railbed.sh down           tear it down (also undoes a failed up)
#   scripts/railbed.sh exec A|B CMD…  run CMD in host A's or B's namespace
#   scripts/railbed.sh show           the rails, their addresses and rates
#
# Rail i (from 0) is interface ${ID}r<i> on both hosts, as a cluster names
# its NICs alike on every node: address 10.88.<i+1>.1/24 in A and
# 10.88.<i+1>.2/24 in B. RAILBED_ID (default "rb", at most 6 characters of
# [a-z0-9]) names the namespaces ${ID}A and ${ID}B and prefixes the
# interfaces, so that two beds can coexist.
set -euo pipefail
id=${RAILBED_ID:-rb}
if [[ ! $id =~ ^[a-z0-9]{1,6}$ ]]; then
	echo "railbed: RAILBED_ID=$id: want 1 to 6 characters of [a-z0-9]" >&2
	exit 2
fi
nsA=${id}A nsB=${id}B

die() { echo "railbed: $*" >&2; exit 1; }

# burst returns tbf's bucket for a rate: 4 ms of traffic, at least 32 KiB
# (tbf needs at least rate/HZ bytes or it cannot reach the rate).
burst() {
	local r=$1 bits
	case $r in
	*gbit) bits=$(( ${r%gbit} * 1000000000 )) ;;
	*mbit) bits=$(( ${r%mbit} * 1000000 )) ;;
	*kbit) bits=$(( ${r%kbit} * 1000 )) ;;
	*) die "rate $r: want <n>kbit, <n>mbit or <n>gbit" ;;
	esac
	local b=$(( bits / 8 / 250 ))
	(( b < 32768 )) && b=32768
	echo $b
}

up() {
	(( $# > 0 )) || set -- 800mbit 400mbit
	(( $# <= 4 )) || die "at most 4 rails, not $#"
	[[ $(id -u) == 0 ]] || die "needs root"
	command -v ip >/dev/null && command -v tc >/dev/null || die "needs iproute2 (ip, tc)"
	down 2>/dev/null || true
	ip netns add "$nsA"
	ip netns add "$nsB"
	ip -n "$nsA" link set lo up
	ip -n "$nsB" link set lo up
	local i=0 r
	for r in "$@"; do
		local a=${id}r${i}a b=${id}r${i}b n=${id}r${i} bu
		bu=$(burst "$r")
		# Unique names in this namespace, the common one once inside theirs.
		ip link add "$a" type veth peer name "$b"
		ip link set "$a" netns "$nsA" name "$n"
		ip link set "$b" netns "$nsB" name "$n"
		a=$n b=$n
		ip -n "$nsA" addr add "10.88.$((i + 1)).1/24" dev "$a"
		ip -n "$nsB" addr add "10.88.$((i + 1)).2/24" dev "$b"
		ip -n "$nsA" link set "$a" up
		ip -n "$nsB" link set "$b" up
		tc -n "$nsA" qdisc add dev "$a" root tbf rate "$r" burst "$bu" latency 20ms
		tc -n "$nsB" qdisc add dev "$b" root tbf rate "$r" burst "$bu" latency 20ms
		i=$((i + 1))
	done
}

down() {
	# Deleting a namespace deletes the veth ends inside it, and so the pairs.
	local err=0
	for ns in "$nsA" "$nsB"; do
		if ip netns list | grep -qw "$ns"; then
			ip netns del "$ns" || err=1
		fi
	done
	return $err
}

show() {
	ip netns list | grep -qw "$nsA" || die "no test bed $id (run: $0 up)"
	local l
	for l in $(ip -n "$nsA" -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep "^${id}r[0-9]" | sort); do
		printf '%s\t%s\t%s\n' "$l" "$(ip -n "$nsA" -o -4 addr show dev "$l" | awk '{print $4}')" \
			"$(tc -n "$nsA" qdisc show dev "$l" | grep -o 'rate [^ ]*')"
	done
}

cmd=${1:-}
shift || true
case $cmd in
up) up "$@" ;;
down) down ;;
show) show ;;
exec)
	case ${1:-} in
	A) ns=$nsA ;;
	B) ns=$nsB ;;
	*) die "exec: want A or B, not '${1:-}'" ;;
	esac
	shift
	exec ip netns exec "$ns" "$@"
	;;
*)
	sed -n '2,/^set -e/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
