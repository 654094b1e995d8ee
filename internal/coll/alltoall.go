package coll

// Alltoall sends block d of every rank's In (l.Bytes each) to rank d,
// which keeps it as block s of its Out, s being the sender.

// alltoallPairwise exchanges with one rank per round: in round k a rank
// sends to me+k and receives from me−k, so every pair meets once and no
// rank is the target of two senders at a time. n−1 rounds of one block:
// the choice for large blocks. Blocks of up to pairwiseWindowMax go
// pairwiseWindow exchanges a round (me+1 … me+4, then me+5 …).
func alltoallPairwise(l Layout) Schedule {
	var s Schedule
	n, b, me := l.Size, l.Bytes, l.Rank
	w := 1
	if b <= pairwiseWindowMax {
		w = pairwiseWindow
	}
	s.add(0, Step{Kind: Copy, Buf: Out, Off: me * b, Len: b, From: In, FromOff: me * b})
	for k := 1; k < n; k++ {
		to, from := (me+k)%n, (me-k+n)%n
		s.add((k-1)/w+1, Step{Kind: Recv, Peer: from, Buf: Out, Off: from * b, Len: b},
			Step{Kind: Send, Peer: to, Buf: In, Off: to * b, Len: b})
	}
	return s
}

// pairwiseWindow is how many exchanges a pairwise round carries for
// blocks of up to pairwiseWindowMax. With more ranks than processors each
// round waits for its partners' turns on a processor, and a rank that
// runs takes in what four partners sent rather than one: 128 ranks on two
// processors, 10 Alltoalls of 16 KiB, took 5.9–9.0 s with four a round
// (6.9–7.9 with eight, 7.0–7.4 with sixteen) against 8.6–10.0 with one.
// Larger blocks keep one a round: four streams at once into one receiver
// compete for its cache.
const (
	pairwiseWindow    = 4
	pairwiseWindowMax = 64 << 10
)

// alltoallBruck is Bruck's algorithm: ⌈log2 n⌉ rounds for any n, each
// moving about half the data, so fewer, larger messages than pairwise —
// the choice for small blocks. Blocks are first rotated so that index i
// holds the block for rank me+i; in the round of bit j every block whose
// index has bit j set moves 2^j ranks on, keeping its index; at the end
// index i holds the block from rank me−i. Tmp holds the rotated blocks
// and, behind them, the packed blocks of one round going out and coming
// in.
func alltoallBruck(l Layout) Schedule {
	var s Schedule
	n, b, me := l.Size, l.Bytes, l.Rank
	// runs lists the index ranges with bit d set: [i, i+d) for i = d, 3d, …
	runs := func(d int) (out [][2]int, count int) {
		for i := d; i < n; i += 2 * d {
			out = append(out, [2]int{i, min(d, n-i)})
			count += min(d, n-i)
		}
		return out, count
	}
	maxCount := 0
	for d := 1; d < n; d *= 2 {
		_, c := runs(d)
		maxCount = max(maxCount, c)
	}
	out, in := n*b, n*b+maxCount*b // packing areas in Tmp
	s.TmpSize = n*b + 2*maxCount*b
	first := (n - me) * b
	s.add(0, Step{Kind: Copy, Buf: Tmp, Len: first, From: In, FromOff: me * b},
		Step{Kind: Copy, Buf: Tmp, Off: first, Len: me * b, From: In})
	pack := func(r, d int) {
		rs, _ := runs(d)
		off := out
		for _, run := range rs {
			s.add(r, Step{Kind: Copy, Buf: Tmp, Off: off, Len: run[1] * b, From: Tmp, FromOff: run[0] * b})
			off += run[1] * b
		}
	}
	r := 0
	if n > 1 {
		pack(0, 1)
	}
	for d := 1; d < n; d *= 2 {
		r++
		rs, count := runs(d)
		s.add(r, Step{Kind: Recv, Peer: (me - d + n) % n, Buf: Tmp, Off: in, Len: count * b},
			Step{Kind: Send, Peer: (me + d) % n, Buf: Tmp, Off: out, Len: count * b})
		off := in
		for _, run := range rs {
			s.add(r, Step{Kind: Copy, Buf: Tmp, Off: run[0] * b, Len: run[1] * b, From: Tmp, FromOff: off})
			off += run[1] * b
		}
		if 2*d < n {
			pack(r, 2*d)
		}
	}
	for i := 0; i < n; i++ {
		s.add(r+1, Step{Kind: Copy, Buf: Out, Off: (me - i + n) % n * b, Len: b, From: Tmp, FromOff: i * b})
	}
	return s
}
