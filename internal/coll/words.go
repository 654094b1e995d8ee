package coll

import "unsafe"

// words views a []uint64 as bytes.
func words(w []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), 8*len(w))
}
