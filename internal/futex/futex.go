// Package futex sleeps on a 32-bit word of memory processes may share,
// and wakes its sleepers: the futex system calls, which Go does not wrap.
// Elsewhere than on Linux a sleep naps briefly instead, which keeps the
// contract (callers look again after every return).
package futex
