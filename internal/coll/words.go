package coll

import "unsafe"

// words views a []uint64 as bytes, and wordsOf a byte slice made by words
// as the []uint64 again.
func words(w []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), 8*len(w))
}

func wordsOf(b []byte) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
}
