package driver

// AppendRange appends to dst the parts of iov that hold bytes [off, off+n)
// of iov's concatenation, sliced from iov's own memory (nothing is copied),
// and returns the extended list. Empty parts are left out, so every part
// appended holds at least one byte. A range past the end of iov is cut at
// the end; off and n are not negative.
func AppendRange(dst, iov [][]byte, off, n int) [][]byte {
	for _, b := range iov {
		if n <= 0 {
			break
		}
		if off >= len(b) {
			off -= len(b)
			continue
		}
		b = b[off:]
		off = 0
		if len(b) > n {
			b = b[:n]
		}
		dst = append(dst, b)
		n -= len(b)
	}
	return dst
}

// Place lands the n bytes of a Put at offset of region: it asks h where,
// piece by piece (Handler.Region may hand out fewer bytes than asked, up
// to the end of one piece of the region's memory), and calls fill with
// each piece in order until n bytes are placed; fill must fill the whole
// piece or fail. Place does not call PutDone. A Put of no bytes still asks
// once, so that an unknown region is reported; an empty piece while bytes
// remain is a protocol violation, never a loop.
func Place(h Handler, peer int, region uint64, offset int64, n int, fill func(dst []byte) error) error {
	done := 0
	for {
		dst, err := h.Region(peer, region, offset+int64(done), n-done)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if len(dst) == 0 {
			return ProtocolError("region %d gave no room at offset %d for %d bytes", region, offset+int64(done), n-done)
		}
		dst = dst[:min(len(dst), n-done)]
		if err := fill(dst); err != nil {
			return err
		}
		done += len(dst)
		if done == n {
			return nil
		}
	}
}
