// Package tune is commtune's run-time selection layer: for each decision (an
// operation on a communicator of some size, for a message-size class, over
// some transports: a Key) it picks which implementation runs, learning from
// what the calls it picked cost. The first Selector is Lottery, the lottery
// scheduler of seed 001 §6.
//
// The selector is pure: it does no I/O, reads no clock and starts no
// goroutine. Callers measure and pass durations in. The only I/O is in
// store.go: LoadState and SaveState keep a State in a file between jobs.
package tune
