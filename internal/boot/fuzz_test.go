package boot

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewriteSeeds = flag.Bool("rewrite-seeds", false, "rewrite testdata/fuzz/FuzzKVSMessage from sampleMessages")

// FuzzKVSMessage feeds arbitrary bytes to the KVS frame reader and decoder:
// they must never panic, never allocate past maxFrame, and every frame they
// accept must re-encode to exactly the bytes read (one encoding per
// message, so nothing is silently dropped or invented).
func FuzzKVSMessage(f *testing.F) {
	for _, m := range sampleMessages() {
		if len(m.value) < 4096 { // a megabyte seed would slow every mutation
			f.Add(appendFrame(nil, &m))
		}
	}
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

// TestRewriteFuzzSeeds writes the seed corpus (go test -run RewriteFuzzSeeds
// -rewrite-seeds): one valid frame per op, plus frames that stress the
// decoder's length checks.
func TestRewriteFuzzSeeds(t *testing.T) {
	if !*rewriteSeeds {
		t.Skip("run with -rewrite-seeds to regenerate testdata/fuzz")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzKVSMessage")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	seeds := map[string][]byte{}
	for name, m := range sampleMessages() {
		if len(m.value) < 4096 { // a megabyte seed would slow every mutation
			seeds["valid-"+strings.ReplaceAll(name, " ", "-")] = appendFrame(nil, &m)
		}
	}
	two := sampleMessages()["put"]
	three := sampleMessages()["fence"]
	seeds["two-frames"] = appendFrame(appendFrame(nil, &two), &three)
	seeds["length-huge"] = []byte{0xff, 0xff, 0xff, 0xff, byte(opPut)}
	seeds["put-value-length-huge"] = append([]byte{12, 0, 0, 0}, body(opPut, 1, 1, 0, 'a', 0xff, 0xff, 0xff, 0x7f)...)
	seeds["unknown-op"] = append([]byte{5, 0, 0, 0}, body(0x7f, 1)...)
	for name, b := range seeds {
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
