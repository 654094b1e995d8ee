package shm

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/commtune/commtune/internal/driver"
)

// cmaProbe is the word a peer reads to find out whether process_vm_readv
// works between us (containers, Yama's ptrace_scope or seccomp may forbid
// it). A package variable: its address never changes.
var cmaProbe = [8]byte{0xC0, 0x33, 0x77, 0x75, 0x6E, 0xE0, 0xC0, 0x9A}

// publishProbe writes the probe's address and value into our segment.
func publishProbe(s *segment) {
	le.PutUint64(s.mem[offProbe:], uint64(uintptr(unsafe.Pointer(&cmaProbe[0]))))
	le.PutUint64(s.mem[offProbeVal:], le.Uint64(cmaProbe[:]))
}

// probeCMA tries to read the peer's probe word; it says why not if it
// cannot.
func probeCMA(peer *segment) (bool, string) {
	var got [8]byte
	addr, want := le.Uint64(peer.mem[offProbe:]), le.Uint64(peer.mem[offProbeVal:])
	n, err := processVMRead(peer.pid(), got[:], addr)
	switch {
	case err != nil:
		return false, err.Error()
	case n != len(got) || le.Uint64(got[:]) != want:
		return false, fmt.Sprintf("process_vm_readv read %d bytes, %x instead of %x", n, got, want)
	}
	return true, ""
}

// cmaCalls counts single-copy reads, for tests that must see them happen.
var cmaCalls atomic.Uint64

// cmaError describes a failed process_vm_readv from pid; ESRCH, the
// process gone, is driver.ErrPeerGone, so that the reader reports its peer
// lost at once instead of a failed read.
func cmaError(pid int, err error) error {
	if err == unix.ESRCH {
		return fmt.Errorf("process_vm_readv from pid %d: %w (%w)", pid, driver.ErrPeerGone, err)
	}
	return fmt.Errorf("process_vm_readv from pid %d: %w", pid, err)
}

// processVMRead copies len(dst) bytes at addr in process pid into dst,
// looping over partial reads.
func processVMRead(pid int, dst []byte, addr uint64) (int, error) {
	got := 0
	for got < len(dst) {
		local := []unix.Iovec{{Base: &dst[got]}}
		local[0].SetLen(len(dst) - got)
		remote := []unix.RemoteIovec{{Base: uintptr(addr) + uintptr(got), Len: len(dst) - got}}
		n, err := unix.ProcessVMReadv(pid, local, remote, 0)
		cmaCalls.Add(1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return got, cmaError(pid, err)
		}
		if n == 0 {
			return got, fmt.Errorf("process_vm_readv from pid %d: no progress at %d of %d bytes", pid, got, len(dst))
		}
		got += n
	}
	return got, nil
}

// cmaIovMax is the most iovec entries one process_vm_readv takes
// (IOV_MAX); longer local lists take several calls.
const cmaIovMax = 1024

// processVMReadv copies the bytes at addr in process pid into the parts of
// dst in order, as many as their lengths add up to: one system call
// scatters up to cmaIovMax parts, looping over partial reads. dst itself
// is left as it is (it may be the caller's list).
func processVMReadv(pid int, dst [][]byte, addr uint64) (int, error) {
	var local []unix.Iovec
	got := 0
	i, pos := 0, 0 // the next byte to read lands at dst[i][pos]
	for {
		local = local[:0]
		n := 0
		for j := i; j < len(dst) && len(local) < cmaIovMax; j++ {
			b := dst[j]
			if j == i {
				b = b[pos:]
			}
			if len(b) == 0 {
				continue
			}
			v := unix.Iovec{Base: &b[0]}
			v.SetLen(len(b))
			local = append(local, v)
			n += len(b)
		}
		if n == 0 {
			return got, nil
		}
		remote := []unix.RemoteIovec{{Base: uintptr(addr) + uintptr(got), Len: n}}
		m, err := unix.ProcessVMReadv(pid, local, remote, 0)
		cmaCalls.Add(1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return got, cmaError(pid, err)
		}
		if m == 0 {
			return got, fmt.Errorf("process_vm_readv from pid %d: no progress at %d bytes", pid, got)
		}
		got += m
		for m > 0 { // step past what was read
			if rest := len(dst[i]) - pos; m >= rest {
				m -= rest
				i, pos = i+1, 0
			} else {
				pos += m
				m = 0
			}
		}
	}
}

// processVMReadSpans copies the concatenation of src, ranges of process
// pid's memory, into the concatenation of dst, whose total length must be
// the same: the two lists are cut where either has a boundary, and up to
// cmaIovMax of those pieces go in each system call, continuing after a
// partial read.
func processVMReadSpans(pid int, dst [][]byte, src []driver.Span) (int, error) {
	return processVMSpans(pid, dst, src, false)
}

// processVMWriteSpans copies the concatenation of src into dst, ranges of
// process pid's memory (process_vm_writev), as processVMReadSpans reads.
func processVMWriteSpans(pid int, dst []driver.Span, src [][]byte) (int, error) {
	return processVMSpans(pid, src, dst, true)
}

// processVMSpans moves bytes between the local parts and the remote
// ranges, reading them (process_vm_readv) or, when write, writing them
// (process_vm_writev).
func processVMSpans(pid int, dst [][]byte, src []driver.Span, write bool) (int, error) {
	call, sys := "process_vm_readv from", unix.ProcessVMReadv
	if write {
		call, sys = "process_vm_writev to", unix.ProcessVMWritev
	}
	var local []unix.Iovec
	var remote []unix.RemoteIovec
	want := 0
	for _, s := range src {
		want += s.Len
	}
	if have := segsTotal(dst); have != want {
		return 0, fmt.Errorf("%s pid %d: %d bytes of ranges for %d bytes of memory", call, pid, want, have)
	}
	got := 0
	di, dpos := 0, 0 // the next byte lands at dst[di][dpos]
	si, spos := 0, 0 // and comes from src[si].Addr + spos
	for got < want {
		local, remote = local[:0], remote[:0]
		n := 0
		for d, dp, s, sp := di, dpos, si, spos; n < want-got && len(local) < cmaIovMax; {
			if dp == len(dst[d]) {
				d, dp = d+1, 0
				continue
			}
			if sp == src[s].Len {
				s, sp = s+1, 0
				continue
			}
			k := min(len(dst[d])-dp, src[s].Len-sp)
			v := unix.Iovec{Base: &dst[d][dp]}
			v.SetLen(k)
			local = append(local, v)
			remote = append(remote, unix.RemoteIovec{Base: uintptr(src[s].Addr) + uintptr(sp), Len: k})
			dp, sp, n = dp+k, sp+k, n+k
		}
		m, err := sys(pid, local, remote, 0)
		cmaCalls.Add(1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return got, cmaError(pid, err)
		}
		if m == 0 {
			return got, fmt.Errorf("%s pid %d: no progress at %d of %d bytes", call, pid, got, want)
		}
		got += m
		for m > 0 { // step both lists past what was moved
			if dpos == len(dst[di]) {
				di, dpos = di+1, 0
				continue
			}
			if spos == src[si].Len {
				si, spos = si+1, 0
				continue
			}
			k := min(m, len(dst[di])-dpos, src[si].Len-spos)
			dpos, spos, m = dpos+k, spos+k, m-k
		}
	}
	return got, nil
}

func segsTotal(segs [][]byte) int {
	n := 0
	for _, b := range segs {
		n += len(b)
	}
	return n
}
