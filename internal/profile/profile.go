// Package profile is commtune's sampled model of the machine (seed 000,
// NewMadeleine's sampling-based auto-tuning): for each transport, the
// one-way time of every transfer method over log-spaced message sizes;
// from them, predictions by linear interpolation and the thresholds where
// one method overtakes another, found at the interpolated crossing of their
// curves. A profile is stored as versioned JSON under a fingerprint of the
// platform, so that it is only ever applied to the machine it describes.
//
// The package knows methods by name only: what "eager-iovec" or
// "rendezvous/cma" does is the concern of the core and the drivers.
package profile

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Version is the profile format this package reads and writes.
const Version = 1

// Method names: each is a real code path that the sampler times and the
// library then uses.
const (
	EagerCopy  = "eager-copy"  // header and payload copied into one buffer
	EagerIovec = "eager-iovec" // header and the user's buffer handed over as an iovec
	// Rendezvous is the push rendezvous (RTS, CTS, data into the receive
	// buffer); on shared memory one curve per large-message method,
	// "rendezvous/<method>" (RendezvousVia).
	Rendezvous = "rendezvous"
	TwoPackets = "two-packets" // two messages as two packets
	Aggregated = "aggregated"  // the same two messages aggregated in one packet
	Memcpy     = "memcpy"      // a plain copy() in one process: the reference
)

// RendezvousVia names the rendezvous curve of a large-message method.
func RendezvousVia(method string) string { return Rendezvous + "/" + method }

// Sample is one sampled point: the one-way time (half a round trip) of a
// message of Size bytes, median and quartiles over Reps round trips.
type Sample struct {
	Size   int64   `json:"size"`
	Median float64 `json:"median_ns"`
	P25    float64 `json:"p25_ns"`
	P75    float64 `json:"p75_ns"`
	Reps   int     `json:"reps"`
}

// Curve is one method's samples, by increasing size.
type Curve []Sample

// Points returns the curve's sizes and median times (ns), the shape a
// model of it is built from.
func (c Curve) Points() ([]int64, []float64) {
	sizes := make([]int64, len(c))
	nanos := make([]float64, len(c))
	for i, s := range c {
		sizes[i], nanos[i] = s.Size, s.Median
	}
	return sizes, nanos
}

// Transport is the sampled data of one transport.
type Transport struct {
	// MaxEager is the largest message the transport carries eagerly (one
	// packet): the rendezvous threshold never exceeds it.
	MaxEager int64 `json:"max_eager"`
	// Methods maps a method name to its curve.
	Methods map[string]Curve `json:"methods"`
	// Rails holds, where the transport has several rails, each rail's
	// rendezvous curve measured with that rail alone, keyed by the rail's
	// identity (driver.Caps.Name: "eth1/ipv4"): what a multirail split
	// predicts chunk times from (seed 000 §III-C).
	Rails map[string]Curve `json:"rails,omitempty"`
	// Collectives holds collective operations timed between the pass's two
	// ranks as a program calls them (Collective), each by the path its
	// messages take ("eager-iovec", "rendezvous/copy"): a collective is more
	// than its messages (rounds sent both ways at once, the combining in
	// between), and only its own curve predicts what a program sees.
	Collectives map[string]map[string]Curve `json:"collectives,omitempty"`
	// Node holds Alltoalls (NodeOp) of every rank of a node timed as one
	// job, by how many ranks ran ("4") and how the messages moved
	// (NodeRing, NodePull), each point a call's time on its slowest rank.
	// A collective's single-copy crossing is its own (seed 004 §4.2: 4 KiB
	// against a ping-pong's 64 KiB), and it depends on whether the ranks
	// outnumber the processors (CollPull). NodeCPUs is how many processors
	// the node had.
	Node     map[string]map[string]Curve `json:"node,omitempty"`
	NodeCPUs int                         `json:"node_cpus,omitempty"`
	// Coll holds the collective decision tables node passes sampled, by
	// how many ranks ran ("4"): each operation's candidate algorithms
	// timed back to back at a ladder of sizes, on NodeCPUs processors.
	Coll map[string]CollTable `json:"coll,omitempty"`
}

// Collective names the operations a pass times as programs call them: the
// ring allreduce of float64 sums, out of place, between two ranks.
const Collective = "allreduce/ring"

// Profile is one platform's sampled data.
type Profile struct {
	Version     int                   `json:"version"`
	Fingerprint Fingerprint           `json:"fingerprint"`
	Created     time.Time             `json:"created"`
	Quick       bool                  `json:"quick,omitempty"` // from a quick pass: fewer sizes and repetitions
	Seconds     float64               `json:"seconds"`         // how long sampling took
	Transports  map[string]*Transport `json:"transports"`
	// Host holds curves measured in one process (Memcpy).
	Host map[string]Curve `json:"host,omitempty"`
}

// Curve returns the curve of method on transport, or nil.
func (p *Profile) Curve(transport, method string) Curve {
	if t := p.Transports[transport]; t != nil {
		return t.Methods[method]
	}
	return nil
}

// Predict returns the predicted one-way time of a message of size bytes
// sent by method over transport, interpolated between the nearest samples
// (seed 000 §III-A).
func (p *Profile) Predict(transport, method string, size int64) (time.Duration, error) {
	c := p.Curve(transport, method)
	if c == nil {
		return 0, fmt.Errorf("profile: no %s samples for %s", method, transport)
	}
	return time.Duration(math.Round(c.At(float64(size)))), nil
}

// PredictCollective returns the predicted time of the collective op
// (Collective) over size bytes between two ranks of transport whose
// messages take path, interpolated between the nearest samples.
func (p *Profile) PredictCollective(transport, op, path string, size int64) (time.Duration, error) {
	var c Curve
	if t := p.Transports[transport]; t != nil {
		c = t.Collectives[op][path]
	}
	if c == nil {
		return 0, fmt.Errorf("profile: no %s samples over %s for %s", op, path, transport)
	}
	return time.Duration(math.Round(c.At(float64(size)))), nil
}

// Limits on what a profile may hold: a file is input from outside the
// process, and a profile larger than this is not one commtune wrote.
const (
	maxSamples   = 512
	maxSize      = 1 << 40
	maxNanos     = 1e13 // about three hours
	maxCurves    = 64
	maxTransport = 16
	maxRailName  = 64 // an interface name (15 bytes on Linux) and a family
)

// ErrInvalid is wrapped by every error about a profile's content.
var ErrInvalid = errors.New("invalid profile")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Validate checks everything the rest of the package relies on: sizes
// strictly increasing and positive, times finite and positive, quartiles
// around the median, bounded counts.
func (p *Profile) Validate() error {
	if p.Version != Version {
		return invalid("format version %d, this commtune reads %d", p.Version, Version)
	}
	if len(p.Transports) > maxTransport || len(p.Host) > maxCurves {
		return invalid("%d transports, %d host curves", len(p.Transports), len(p.Host))
	}
	for name, t := range p.Transports {
		if t == nil {
			return invalid("transport %q has no data", name)
		}
		if t.MaxEager < 0 || t.MaxEager > maxSize {
			return invalid("transport %q: max_eager %d", name, t.MaxEager)
		}
		if len(t.Methods) > maxCurves {
			return invalid("transport %q: %d methods", name, len(t.Methods))
		}
		for m, c := range t.Methods {
			if err := c.validate(); err != nil {
				return invalid("%s %s: %v", name, m, err)
			}
		}
		if len(t.Rails) > maxCurves {
			return invalid("transport %q: %d rails", name, len(t.Rails))
		}
		if len(t.Collectives) > maxCurves {
			return invalid("transport %q: %d collectives", name, len(t.Collectives))
		}
		for op, paths := range t.Collectives {
			if len(paths) > maxCurves {
				return invalid("transport %q: %s over %d paths", name, op, len(paths))
			}
			for path, c := range paths {
				if err := c.validate(); err != nil {
					return invalid("%s %s over %s: %v", name, op, path, err)
				}
			}
		}
		if err := t.validateNode(name); err != nil {
			return err
		}
		if err := t.validateColl(name); err != nil {
			return err
		}
		for r, c := range t.Rails {
			if r == "" || len(r) > maxRailName {
				return invalid("transport %q: a rail named %q", name, r)
			}
			if err := c.validate(); err != nil {
				return invalid("%s rail %s: %v", name, r, err)
			}
		}
	}
	for m, c := range p.Host {
		if err := c.validate(); err != nil {
			return invalid("host %s: %v", m, err)
		}
	}
	return nil
}

func (c Curve) validate() error {
	if len(c) == 0 || len(c) > maxSamples {
		return fmt.Errorf("%d samples", len(c))
	}
	for i, s := range c {
		switch {
		case s.Size < 1 || s.Size > maxSize:
			return fmt.Errorf("size %d", s.Size)
		case i > 0 && s.Size <= c[i-1].Size:
			return fmt.Errorf("sizes not increasing at %d", s.Size)
		case !(s.Median > 0 && s.Median <= maxNanos):
			return fmt.Errorf("size %d: median %v ns", s.Size, s.Median)
		case !(s.P25 > 0 && s.P25 <= s.Median && s.Median <= s.P75 && s.P75 <= maxNanos):
			return fmt.Errorf("size %d: quartiles %v, %v around %v ns", s.Size, s.P25, s.P75, s.Median)
		case s.Reps < 1:
			return fmt.Errorf("size %d: %d repetitions", s.Size, s.Reps)
		}
	}
	return nil
}

// MethodNames returns the transport's method names, sorted.
func (t *Transport) MethodNames() []string {
	names := make([]string, 0, len(t.Methods))
	for m := range t.Methods {
		names = append(names, m)
	}
	slices.Sort(names)
	return names
}
