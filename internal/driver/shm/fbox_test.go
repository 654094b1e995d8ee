package shm

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/commtune/commtune/internal/driver"
	"github.com/commtune/commtune/internal/fuzzseed"
)

// fboxPair returns a producer's and a consumer's view of one fast box in a
// fresh header page.
func fboxPair() (prod, cons *fbox, hdr []byte) {
	hdr = make([]byte, pageSize)
	return newFbox(hdr), newFbox(hdr), hdr
}

// TestFboxRoundTrip sends records of every line count, split at every
// place between head and body, through many laps of the box: each arrives
// whole and in order, skip lines included.
func TestFboxRoundTrip(t *testing.T) {
	prod, cons, _ := fboxPair()
	sent := 0
	for lap := 0; lap < 40; lap++ {
		for _, n := range []int{1, 8, fboxPayload, fboxPayload + 1, 3*fboxPayload - 5, FboxMax} {
			msg := fill(n, sent)
			cut := sent % (n + 1)
			if !prod.write(msg[:cut], msg[cut:]) {
				t.Fatalf("lap %d: %d bytes refused with the box empty", lap, n)
			}
			sent++
			body, lines, err := cons.next()
			if err != nil || !bytes.Equal(body, msg) {
				t.Fatalf("lap %d, %d bytes: got %d bytes, err %v", lap, n, len(body), err)
			}
			cons.release(lines)
			if body, _, err := cons.next(); body != nil || err != nil {
				t.Fatalf("a second record after one was sent: %d bytes, %v", len(body), err)
			}
		}
	}
	if cons.pending() {
		t.Fatal("pending with the box empty")
	}
}

// TestFboxFullAndTooLarge: a full box refuses a record until the consumer
// frees room, and a record larger than FboxMax is refused at once.
func TestFboxFullAndTooLarge(t *testing.T) {
	prod, cons, _ := fboxPair()
	if prod.write(fill(FboxMax+1, 0), nil) || prod.write(nil, nil) {
		t.Fatal("an oversized or empty record was taken")
	}
	n := 0
	for prod.write(fill(8, n), nil) {
		n++
	}
	if n != fboxSize/fboxLine {
		t.Fatalf("%d one-line records fit, want %d", n, fboxSize/fboxLine)
	}
	if !cons.pending() {
		t.Fatal("not pending with the box full")
	}
	_, lines, _ := cons.next()
	cons.release(lines)
	if !prod.write(fill(8, n), nil) {
		t.Fatal("no room after the consumer freed a line")
	}
	for i := 1; i <= n; i++ {
		body, lines, err := cons.next()
		if err != nil || !bytes.Equal(body, fill(8, i)) {
			t.Fatalf("record %d: %v %v", i, body, err)
		}
		cons.release(lines)
	}
}

// TestFboxConcurrent streams records of mixed sizes from one goroutine to
// another through a box shared as two processes share it.
func TestFboxConcurrent(t *testing.T) {
	prod, cons, _ := fboxPair()
	const count = 20000
	sizes := []int{8, 40, 100, 300, FboxMax}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < count; i++ {
			msg := fill(sizes[i%len(sizes)], i)
			for !prod.write(msg[:4], msg[4:]) {
			}
		}
	}()
	for i := 0; i < count; {
		body, lines, err := cons.next()
		if err != nil {
			t.Fatal(err)
		}
		if body == nil {
			continue
		}
		if want := fill(sizes[i%len(sizes)], i); !bytes.Equal(body, want) {
			t.Fatalf("record %d: %d bytes, want %d", i, len(body), len(want))
		}
		cons.release(lines)
		i++
	}
	wg.Wait()
}

// FuzzFboxRecords lays arbitrary bytes over a fast box, as a broken or
// hostile peer could, and reads it as the consumer does: every record is
// returned within the box or rejected as a protocol violation, and reading
// ends.
// The seed corpus is testdata/fuzz/FuzzFboxRecords (see TestFboxSeeds).
func FuzzFboxRecords(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := readFbox(t, data); err != nil && !errors.Is(err, driver.ErrProtocol) {
			t.Fatalf("unexpected error %v", err)
		}
	})
}

// readFbox copies data over a fresh box and reads records until none is
// left or one is rejected; it returns the bodies read.
func readFbox(t *testing.T, data []byte) ([][]byte, error) {
	_, cons, hdr := fboxPair()
	copy(hdr[fboxOff:fboxOff+fboxSize], data)
	var out [][]byte
	for i := 0; ; i++ {
		if i > 2*fboxSize/fboxLine {
			t.Fatalf("%d records out of one lap of the box", i)
		}
		body, lines, err := cons.next()
		if err != nil || body == nil {
			return out, err
		}
		if len(body) == 0 || len(body) > FboxMax {
			t.Fatalf("record of %d bytes", len(body))
		}
		out = append(out, append([]byte(nil), body...))
		cons.release(lines)
	}
}

// fboxImage returns the box as a producer leaves it after writing msgs.
func fboxImage(msgs ...[]byte) []byte {
	prod, _, hdr := fboxPair()
	for _, m := range msgs {
		if !prod.write(m, nil) {
			panic(fmt.Sprintf("seed record of %d bytes refused", len(m)))
		}
	}
	return append([]byte(nil), hdr[fboxOff:fboxOff+fboxSize]...)
}

func fboxSeeds() []seed {
	one := fboxImage(fill(8, 1))
	three := fboxImage(fill(8, 1), fill(3*fboxPayload, 2), fill(fboxPayload, 3))
	lengthZero := append([]byte(nil), one...)
	le.PutUint16(lengthZero[4:], 0)
	tooManyLines := append([]byte(nil), one...)
	tooManyLines[6] = fboxMaxLines + 1
	lengthPastLines := append([]byte(nil), one...)
	le.PutUint16(lengthPastLines[4:], 2*fboxPayload)
	skipAtStart := append([]byte(nil), one...)
	skipAtStart[7] = fboxSkip
	return []seed{
		{name: "one", data: one},
		{name: "three", data: three},
		{name: "length-zero", data: lengthZero},
		{name: "too-many-lines", data: tooManyLines},
		{name: "length-past-lines", data: lengthPastLines},
		{name: "skip-at-start", data: skipAtStart},
		{name: "empty", data: nil},
	}
}

// TestFboxSeeds checks the fast box seeds are what they claim and keeps
// testdata/fuzz/FuzzFboxRecords in step (-rewrite-seeds).
func TestFboxSeeds(t *testing.T) {
	valid := map[string]int{"one": 1, "three": 3, "empty": 0}
	var seeds []fuzzseed.Seed
	for _, s := range fboxSeeds() {
		got, err := readFbox(t, s.data)
		if want, ok := valid[s.name]; ok {
			if err != nil || len(got) != want {
				t.Errorf("seed %s: %d records, %v; want %d", s.name, len(got), err, want)
			}
		} else if !errors.Is(err, driver.ErrProtocol) {
			t.Errorf("seed %s: %v, want a protocol violation", s.name, err)
		}
		seeds = append(seeds, fuzzseed.Seed{Name: s.name, Values: []any{s.data}})
	}
	fuzzseed.Sync(t, "FuzzFboxRecords", seeds)
}
