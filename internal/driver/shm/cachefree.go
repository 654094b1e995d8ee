package shm

// cacheFreeMin and copyCacheFree are the cache-bypassing copy used above
// DMA_min (seed 004 §3.3).
const cacheFreeMin = 1 << 62 // off until the copy kernel is measured

func copyCacheFree(dst, src []byte) { copy(dst, src) }
