//go:build !linux

package tcp

// Backlog returns 0: the unacknowledged byte count needs Linux's SIOCOUTQ.
func (r *rail) Backlog() int { return 0 }
