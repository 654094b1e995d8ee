package boot

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The PMI wire formats (MPICH's "simple" PMI, spoken by Hydra and Slurm):
//
//   - PMI-1: one line per message, "cmd=NAME key=value key=value\n";
//     fields are separated by spaces, a value runs to the next space.
//   - PMI-2: after a PMI-1 style init, each message is a 6-character
//     decimal length (padded with spaces on either side) then that many
//     bytes, "cmd=NAME;key=value;...;"; a ';' inside a value is doubled.
//
// A reply is a set of fields; its order differs between servers (Slurm
// puts rc first, Hydra last), so it is kept as a map.

// maxPMIMessage bounds one message: a server cannot make a client buffer
// more (Hydra's own limit is 1024-byte values in 64 KiB messages).
const maxPMIMessage = 64 << 10

// ErrPMI reports a PMI reply that is malformed, unexpected or an error.
var ErrPMI = errors.New("pmi")

// pmiFields is one parsed message.
type pmiFields map[string]string

func (f pmiFields) cmd() string { return f["cmd"] }

// parsePMI1 parses a PMI-1 line (without its newline).
func parsePMI1(line string) (pmiFields, error) {
	f := pmiFields{}
	for _, tok := range strings.Fields(line) {
		k, v, ok := strings.Cut(tok, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: field %q of %q is not key=value", ErrPMI, tok, clip(line))
		}
		if _, dup := f[k]; dup {
			return nil, fmt.Errorf("%w: key %q twice in %q", ErrPMI, k, clip(line))
		}
		f[k] = v
	}
	if f.cmd() == "" {
		return nil, fmt.Errorf("%w: no cmd= in %q", ErrPMI, clip(line))
	}
	return f, nil
}

// parsePMI2 parses a PMI-2 message body.
func parsePMI2(body string) (pmiFields, error) {
	f := pmiFields{}
	var field strings.Builder
	flush := func() error {
		tok := field.String()
		field.Reset()
		if tok == "" {
			return nil
		}
		k, v, ok := strings.Cut(tok, "=")
		if !ok || k == "" {
			return fmt.Errorf("%w: field %q of %q is not key=value", ErrPMI, clip(tok), clip(body))
		}
		if _, dup := f[k]; dup {
			return fmt.Errorf("%w: key %q twice in %q", ErrPMI, k, clip(body))
		}
		f[k] = v
		return nil
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == ';' && i+1 < len(body) && body[i+1] == ';':
			field.WriteByte(';')
			i++
		case c == ';':
			if err := flush(); err != nil {
				return nil, err
			}
		default:
			field.WriteByte(c)
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	if f.cmd() == "" {
		return nil, fmt.Errorf("%w: no cmd= in %q", ErrPMI, clip(body))
	}
	return f, nil
}

// formatPMI2 frames a PMI-2 message from alternating keys and values.
func formatPMI2(cmd string, kv ...string) []byte {
	var b strings.Builder
	b.WriteString("cmd=" + cmd + ";")
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(kv[i] + "=" + strings.ReplaceAll(kv[i+1], ";", ";;") + ";")
	}
	body := b.String()
	return []byte(fmt.Sprintf("%-6d%s", len(body), body))
}

// readPMI1 reads one PMI-1 line.
func readPMI1(r *bufio.Reader) (pmiFields, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxPMIMessage {
			return nil, fmt.Errorf("%w: reply line longer than %d bytes", ErrPMI, maxPMIMessage)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return nil, readErr(err)
		}
		return parsePMI1(strings.TrimRight(string(line), "\r\n"))
	}
}

// readPMI2 reads one PMI-2 message.
func readPMI2(r io.Reader) (pmiFields, error) {
	var hdr [6]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, readErr(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(hdr[:])))
	if err != nil || n < 0 || n > maxPMIMessage {
		return nil, fmt.Errorf("%w: bad PMI-2 length header %q", ErrPMI, hdr[:])
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, readErr(err)
	}
	return parsePMI2(string(body))
}

func readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: the PMI server closed the connection", ErrPMI)
	}
	return fmt.Errorf("%w: reading a reply: %w", ErrPMI, err)
}

// clip shortens what goes into an error message.
func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}
