package tcp

import (
	"testing"
	"unsafe"
)

// TestPadFor checks that the pad moves a large payload's frame offset out
// of the 1..63-byte window above its page offset, and costs nothing
// otherwise.
func TestPadFor(t *testing.T) {
	page := make([]byte, padMinPayload+2*4096)
	base := int(uintptr(unsafe.Pointer(&page[0])) & 4095)
	aligned := page[(4096-base)&4095:] // starts on a page boundary
	tests := []struct {
		name    string
		before  int
		payload []byte
		want    int
	}{
		{"small payload", 24, aligned[:100], 0},
		{"put header, page-aligned", putHeaderSize, aligned[:padMinPayload], 40},
		{"packet with core header", packetHeaderSize + 24, aligned[:padMinPayload], 24},
		{"already 64 apart", 64, aligned[:padMinPayload], 0},
		{"same offset", 16, aligned[16 : 16+padMinPayload], 0},
		{"payload above frame offset", 24, aligned[100 : 100+padMinPayload], 0},
		{"just below", 24, aligned[20 : 20+padMinPayload], 60},
	}
	for _, tc := range tests {
		got := padFor(tc.before, tc.payload)
		if got != tc.want {
			t.Errorf("%s: padFor = %d, want %d", tc.name, got, tc.want)
		}
		addr := int(uintptr(unsafe.Pointer(&tc.payload[0])) & 4095)
		if d := (tc.before + got - addr) & 4095; len(tc.payload) >= padMinPayload && d > 0 && d < aliasWindow {
			t.Errorf("%s: distance %d still in the aliasing window", tc.name, d)
		}
		if got > maxPad {
			t.Errorf("%s: pad %d > %d", tc.name, got, maxPad)
		}
	}
}
