package driver

import (
	"slices"
	"strconv"
)

// Method identifies a way of moving the data of a Put frame. Its value
// means the same on every rail and in every process: a packet's method
// travels with each of its chunks, whichever rail carries them, and a rail
// lists the methods it offers in Caps.Methods in any order. The value is
// the sender's business only; a rail that needs its peer to know (shm's
// cache-bypassing copy-out) says so in its own framing.
type Method uint8

const (
	// MethodDefault is the rail's own way, which every rail takes: shm
	// copies through its ring (MethodCopy), tcp writes to its socket,
	// inproc copies in place.
	MethodDefault Method = iota
	// MethodCopy streams the data through the shared-memory ring in
	// chunks that the receiver drains as they come (double-buffering,
	// seed 004 §2.1).
	MethodCopy
	// MethodCacheFree is MethodCopy with the receiver copying out of the
	// ring by cache-bypassing stores: the cache is spared, as by seed 004's
	// offloaded copies, from DMA_min on (§3.2–3.3).
	MethodCacheFree
	// MethodVmsplice maps the sender's pages into a pipe that the
	// receiver reads (seed 004 §2.2).
	MethodVmsplice
)

// methodNames are the names of the methods, by value: the words a policy
// (core.Policy.Large), the configuration and the profile use.
var methodNames = [...]string{
	MethodDefault:   "default",
	MethodCopy:      "copy",
	MethodCacheFree: "cachefree",
	MethodVmsplice:  "vmsplice",
}

// String returns the method's name ("copy", "cachefree" …).
func (m Method) String() string {
	if int(m) < len(methodNames) {
		return methodNames[m]
	}
	return "method(" + strconv.Itoa(int(m)) + ")"
}

// MethodNamed returns the method a name stands for, and whether there is
// one. MethodDefault has no name to look up: a policy that names no method
// gets it.
func MethodNamed(name string) (Method, bool) {
	i := slices.Index(methodNames[:], name)
	if i <= int(MethodDefault) {
		return MethodDefault, false
	}
	return Method(i), true
}

// MethodNames returns the names of ms, in their order.
func MethodNames(ms []Method) []string {
	if len(ms) == 0 {
		return nil
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.String()
	}
	return out
}

// CommonMethods returns the methods every one of rails offers, in the
// first rail's order: those a packet to a peer they all reach may name,
// since any of them may carry its chunks.
func CommonMethods(rails []Caps) []Method {
	if len(rails) == 0 {
		return nil
	}
	out := slices.Clone(rails[0].Methods)
	for _, r := range rails[1:] {
		out = slices.DeleteFunc(out, func(m Method) bool { return !slices.Contains(r.Methods, m) })
	}
	return out
}
