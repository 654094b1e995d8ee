package topo

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// readAPICIDs reads each CPU's APIC id from the kernel's /proc/cpuinfo
// (x86 only: "processor : N" starts a CPU's block, "apicid : X" gives its
// id).
func readAPICIDs(path string) (map[int]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseAPICIDs(f)
}

// parseAPICIDs parses /proc/cpuinfo's processor and apicid fields. A
// value that is not a number in range, an apicid before any processor
// line, or a CPU listed twice is an error; other fields are ignored.
func parseAPICIDs(r io.Reader) (map[int]int, error) {
	ids := map[int]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20) // the flags line is long
	cpu := -1
	for n := 1; sc.Scan(); n++ {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(key) {
		case "processor":
			c, err := strconv.Atoi(strings.TrimSpace(val))
			if err != nil || c < 0 || c > MaxCPU {
				return nil, fmt.Errorf("line %d: processor %q: %w", n, strings.TrimSpace(val), ErrMalformed)
			}
			if _, dup := ids[c]; dup {
				return nil, fmt.Errorf("line %d: processor %d listed twice: %w", n, c, ErrMalformed)
			}
			cpu = c
			ids[c] = -1
		case "apicid":
			a, err := strconv.ParseUint(strings.TrimSpace(val), 10, 31) // x2APIC ids are far smaller
			if err != nil || cpu < 0 {
				return nil, fmt.Errorf("line %d: apicid %q outside a processor's block or not a number: %w", n, strings.TrimSpace(val), ErrMalformed)
			}
			ids[cpu] = int(a)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for c, a := range ids {
		if a < 0 {
			delete(ids, c) // no apicid line: CPUID's own id applies
		}
	}
	return ids, nil
}
