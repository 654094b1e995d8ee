//go:build !amd64 || purego

package vecop

import "unsafe"

// There are no assembly kernels here: useAsm stays false, so the stubs
// below, which keep the callers' code the same on every architecture, are
// never called.
var useAsm, hasAsm = false, false

func noAsm() { panic("vecop: no assembly kernels on this architecture") }

func addPD(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func mulPD(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func minPD(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func maxPD(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func addPS(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func mulPS(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func minPS(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func maxPS(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func addQ(dst, src unsafe.Pointer, n uintptr)    { noAsm() }
func addD(dst, src unsafe.Pointer, n uintptr)    { noAsm() }
func addW(dst, src unsafe.Pointer, n uintptr)    { noAsm() }
func addB(dst, src unsafe.Pointer, n uintptr)    { noAsm() }
func mulQ(dst, src unsafe.Pointer, n uintptr)    { noAsm() }
func mulD(dst, src unsafe.Pointer, n uintptr)    { noAsm() }
func mulW(dst, src unsafe.Pointer, n uintptr)    { noAsm() }
func minSQ(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func maxSQ(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func minUQ(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func maxUQ(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func minSD(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func maxSD(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func minUD(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func maxUD(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func minSW(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func maxSW(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func minUW(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func maxUW(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func minSB(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func maxSB(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func minUB(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func maxUB(dst, src unsafe.Pointer, n uintptr)   { noAsm() }
func andBits(dst, src unsafe.Pointer, n uintptr) { noAsm() }
func orBits(dst, src unsafe.Pointer, n uintptr)  { noAsm() }
func xorBits(dst, src unsafe.Pointer, n uintptr) { noAsm() }
