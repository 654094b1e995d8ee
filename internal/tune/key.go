package tune

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Key identifies one tuning decision: everything that may change which
// implementation is fastest. Its text form (String, ParseKey) names it in a
// saved State.
type Key struct {
	// Op is the operation, e.g. "allreduce".
	Op string
	// Ranks is the communicator size.
	Ranks int
	// SizeClass is the message size's power-of-two class (see SizeClass).
	SizeClass int
	// Commutative says whether the reduction operator commutes; false for
	// operations without one.
	Commutative bool
	// Transports names the transport mix the communicator spans, e.g.
	// "shm", "tcp" or "shm+tcp".
	Transports string
}

// SizeClass returns the power-of-two class of a message of the given size:
// floor(log2(bytes)), so class c holds sizes in [2^c, 2^(c+1)). Sizes of 0
// and 1 byte (and negative sizes) are class 0. Classes are coarse on
// purpose: implementations' relative costs change slowly with size, and one
// decision per doubling keeps the number of keys, and so the exploration
// they cost, small.
func SizeClass(bytes int) int {
	if bytes <= 1 {
		return 0
	}
	return bits.Len(uint(bytes)) - 1
}

// Text form: five fields separated by '/':
//
//	op/ranks=N/size=2^C/commutative|noncommutative/transports
//
// e.g. "allreduce/ranks=8/size=2^16/commutative/shm". Op and Transports are
// escaped so that neither can contain '/': bytes outside [A-Za-z0-9] and
// "-._~+,:=@" are written %XX with upper-case hex. Every Key has exactly one
// text form and ParseKey accepts only that form, so equal keys always name
// the same entry of a saved State.
const (
	ranksPrefix = "ranks="
	sizePrefix  = "size=2^"
	commutative = "commutative"
	noncommut   = "noncommutative"
)

// String returns k's text form, which ParseKey reads back.
func (k Key) String() string {
	var b strings.Builder
	escape(&b, k.Op)
	b.WriteString("/" + ranksPrefix)
	b.WriteString(strconv.Itoa(k.Ranks))
	b.WriteString("/" + sizePrefix)
	b.WriteString(strconv.Itoa(k.SizeClass))
	if k.Commutative {
		b.WriteString("/" + commutative + "/")
	} else {
		b.WriteString("/" + noncommut + "/")
	}
	escape(&b, k.Transports)
	return b.String()
}

// ParseKey reads the text form that Key.String writes. It accepts nothing
// else (no alternative spellings of numbers or escapes), so a parsed key
// prints back as the input.
func ParseKey(s string) (Key, error) {
	f := strings.Split(s, "/")
	if len(f) != 5 {
		return Key{}, fmt.Errorf("tune: key %q: want 5 fields op/ranks=N/size=2^C/commutative|noncommutative/transports, have %d", s, len(f))
	}
	var k Key
	var err error
	if k.Op, err = unescape(f[0]); err != nil {
		return Key{}, fmt.Errorf("tune: key %q: op: %w", s, err)
	}
	if k.Ranks, err = canonicalInt(f[1], ranksPrefix); err != nil {
		return Key{}, fmt.Errorf("tune: key %q: %w", s, err)
	}
	if k.SizeClass, err = canonicalInt(f[2], sizePrefix); err != nil {
		return Key{}, fmt.Errorf("tune: key %q: %w", s, err)
	}
	switch f[3] {
	case commutative:
		k.Commutative = true
	case noncommut:
	default:
		return Key{}, fmt.Errorf("tune: key %q: field 4 is %q, want %q or %q", s, f[3], commutative, noncommut)
	}
	if k.Transports, err = unescape(f[4]); err != nil {
		return Key{}, fmt.Errorf("tune: key %q: transports: %w", s, err)
	}
	return k, nil
}

// MarshalText returns k's text form, so that a Key can key a JSON object.
func (k Key) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText parses k's text form (see ParseKey).
func (k *Key) UnmarshalText(b []byte) error {
	p, err := ParseKey(string(b))
	if err != nil {
		return err
	}
	*k = p
	return nil
}

// canonicalInt parses prefix followed by a decimal integer as strconv.Itoa
// writes it.
func canonicalInt(f, prefix string) (int, error) {
	digits, ok := strings.CutPrefix(f, prefix)
	if !ok {
		return 0, fmt.Errorf("field %q does not start with %q", f, prefix)
	}
	n, err := strconv.Atoi(digits)
	if err != nil || strconv.Itoa(n) != digits {
		return 0, fmt.Errorf("field %q: %q is not a canonical decimal integer", f, digits)
	}
	return n, nil
}

// plain reports whether c is written as itself in an escaped field.
func plain(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~+,:=@", c) >= 0
}

const upperHex = "0123456789ABCDEF"

func escape(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&15])
	}
}

var errEscape = errors.New("not in canonical escaped form")

func unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		for i := 0; i < len(s); i++ {
			if !plain(s[i]) {
				return "", fmt.Errorf("%q: byte %q must be escaped: %w", s, s[i], errEscape)
			}
		}
		return s, nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain(c) {
			out = append(out, c)
			continue
		}
		if c != '%' || i+2 >= len(s) {
			return "", fmt.Errorf("%q: byte %d: %w", s, i, errEscape)
		}
		hi, lo := strings.IndexByte(upperHex, s[i+1]), strings.IndexByte(upperHex, s[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("%q: %q is not %%XX with upper-case hex: %w", s, s[i:i+3], errEscape)
		}
		d := byte(hi<<4 | lo)
		if plain(d) {
			return "", fmt.Errorf("%q: %q escapes %q, which is written as itself: %w", s, s[i:i+3], d, errEscape)
		}
		out = append(out, d)
		i += 2
	}
	return string(out), nil
}
