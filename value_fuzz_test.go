package commtune

import (
	"testing"

	"github.com/commtune/commtune/internal/fuzzseed"
)

// fuzzRecord is a value of every encoding path but the codec's: gob
// (strings, maps, slices), a plain part sent as memory.
type fuzzRecord struct {
	Name  string
	Attrs map[string][]int
	Pos   [3]float64
}

type fuzzPlain struct {
	A int64
	B [2]float32
}

// gob numbers types in the order a process first encodes them, and its
// messages carry those numbers: encoding the seeds' gob types first,
// before any test runs, keeps TestValueSeeds' encodings the same whatever
// tests ran before it.
func init() {
	gobCodec{}.Encode(fuzzRecord{})
	gobCodec{}.Encode(map[int]string{})
}

// FuzzDecodeValue decodes arbitrary message bytes as values of each
// encoding: a message that does not decode is an error wrapping ErrDecode,
// never a panic. The seeds are encodings of real values (TestValueSeeds).
func FuzzDecodeValue(f *testing.F) {
	f.Fuzz(func(t *testing.T, msg []byte) {
		var cfg valueConfig
		checks := []func() error{
			func() error { _, err := decodeValue[fuzzRecord](msg, cfg, "fuzz"); return err },
			func() error { _, err := decodeValue[[]fuzzPlain](msg, cfg, "fuzz"); return err },
			func() error { _, err := decodeValue[fuzzPlain](msg, cfg, "fuzz"); return err },
			func() error { _, err := decodeValue[[]float64](msg, cfg, "fuzz"); return err },
			func() error { _, err := decodeValue[map[int]string](msg, cfg, "fuzz"); return err },
			func() error { _, err := decodeValue[[]struct{}](msg, cfg, "fuzz"); return err },
			func() error { _, err := decodeValue[[3]struct{}](msg, cfg, "fuzz"); return err },
			func() error {
				_, err := decodeValue[fuzzRecord](msg, valueConfig{codec: JSONCodec}, "fuzz")
				return err
			},
		}
		for _, check := range checks {
			if err := check(); err != nil && !isDecodeError(err) {
				t.Fatalf("decoding %q: %v does not wrap ErrDecode", msg, err)
			}
		}
	})
}

// TestValueSeeds keeps testdata/fuzz/FuzzDecodeValue in step with the
// encodings (go test -run ValueSeeds -rewrite-seeds after changing them).
func TestValueSeeds(t *testing.T) {
	enc := func(b []byte, err error) []byte {
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var cfg valueConfig
	rec := fuzzRecord{Name: "a", Attrs: map[string][]int{"k": {1, 2}}, Pos: [3]float64{1, 2, 3}}
	seeds := []fuzzseed.Seed{
		{Name: "gob-record", Values: []any{enc(encodeValue(rec, cfg))}},
		{Name: "plain-slice", Values: []any{enc(encodeValue([]fuzzPlain{{A: 1}, {A: 2, B: [2]float32{3, 4}}}, cfg))}},
		{Name: "gob-map", Values: []any{enc(encodeValue(map[int]string{1: "one"}, cfg))}},
		{Name: "json-record", Values: []any{enc(encodeValue(rec, valueConfig{codec: JSONCodec}))}},
		{Name: "empty", Values: []any{[]byte{}}},
		{Name: "zero-size-slice", Values: []any{enc(encodeValue(make([]struct{}, 5), cfg))}},
	}
	for _, s := range seeds {
		// Bytes copied: an encoding of a slice sent as memory aliases it.
		s.Values[0] = append([]byte(nil), s.Values[0].([]byte)...)
	}
	fuzzseed.Sync(t, "FuzzDecodeValue", seeds)
}
