package boot

import (
	"bytes"
	"strings"
	"testing"

	"github.com/commtune/commtune/internal/fuzzseed"
)

// FuzzKVSMessage feeds arbitrary bytes to the KVS frame reader and decoder:
// they must never panic, never allocate past maxFrame, and every frame they
// accept must re-encode to exactly the bytes read (one encoding per
// message, so nothing is silently dropped or invented).
// The seed corpus is testdata/fuzz/FuzzKVSMessage (see TestFuzzSeeds).
func FuzzKVSMessage(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		buf := make([]byte, 64)
		for {
			start := len(data) - r.Len()
			frame, err := readFrame(r, buf)
			if err != nil {
				return
			}
			if len(frame) > maxFrame {
				t.Fatalf("readFrame returned %d bytes, max %d", len(frame), maxFrame)
			}
			m, err := decodeMessage(frame)
			if err != nil {
				continue
			}
			end := len(data) - r.Len()
			if again := appendFrame(nil, &m); !bytes.Equal(again, data[start:end]) {
				t.Fatalf("decoded %+v re-encodes as %x, read %x", m, again, data[start:end])
			}
		}
	})
}

// TestFuzzSeeds keeps testdata/fuzz/FuzzKVSMessage in step with the
// messages of the current format (go test -run FuzzSeeds -rewrite-seeds):
// one valid frame per op, plus frames that stress the decoder's length
// checks.
func TestFuzzSeeds(t *testing.T) {
	var seeds []fuzzseed.Seed
	add := func(name string, b []byte) { seeds = append(seeds, fuzzseed.Seed{Name: name, Values: []any{b}}) }
	for name, m := range sampleMessages() {
		if len(m.value) < 4096 { // a megabyte seed would slow every mutation
			add("valid-"+strings.ReplaceAll(name, " ", "-"), appendFrame(nil, &m))
		}
	}
	two := sampleMessages()["put"]
	three := sampleMessages()["fence"]
	add("two-frames", appendFrame(appendFrame(nil, &two), &three))
	add("length-huge", []byte{0xff, 0xff, 0xff, 0xff, byte(opPut)})
	add("put-value-length-huge", append([]byte{12, 0, 0, 0}, body(opPut, 1, 1, 0, 'a', 0xff, 0xff, 0xff, 0x7f)...))
	add("unknown-op", append([]byte{5, 0, 0, 0}, body(0x7f, 1)...))
	fuzzseed.Sync(t, "FuzzKVSMessage", seeds)
}
