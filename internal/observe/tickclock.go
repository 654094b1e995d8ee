package observe

import "time"

// tickClock is the timeline's clock: the processor's counter where it can
// be trusted (countersAgree), read in about 10 ns, the monotonic clock
// (Now) otherwise. Spans keep ticks; they become nanoseconds on Now's
// scale when written, by the rate measured from the clock's start to
// then, which grows more exact as the run goes on.
type tickClock struct {
	counter  bool
	tk0, ns0 int64   // a reading of both at the start
	perTick  float64 // nanoseconds per tick, measured at the start
}

// calibration is how long newTickClock measures the counter's rate for
// durations: its error is the two readings' (tens of ns) over it.
const calibration = 2 * time.Millisecond

func newTickClock() tickClock {
	c := tickClock{counter: countersAgree(), perTick: 1}
	if !c.counter {
		return c
	}
	c.ns0, c.tk0 = pairReading()
	time.Sleep(calibration)
	ns, tk := pairReading()
	if tk <= c.tk0 || ns <= c.ns0 {
		return tickClock{perTick: 1} // a counter that does not advance: not one to use
	}
	c.perTick = float64(ns-c.ns0) / float64(tk-c.tk0)
	return c
}

// pairReading reads Now and the counter at one moment: the counter
// between two readings of Now, and their middle.
func pairReading() (ns, tk int64) {
	a := Now()
	tk = ticks()
	b := Now()
	return a + (b-a)/2, tk
}

// now reads the clock.
func (c *tickClock) now() int64 {
	if c.counter {
		return ticks()
	}
	return Now()
}

// nanos converts a duration on the clock into nanoseconds.
func (c *tickClock) nanos(d int64) int64 {
	if !c.counter {
		return d
	}
	return int64(float64(d) * c.perTick)
}

// scale returns what converts readings of the clock into Now's
// nanoseconds: the rate measured from the start to now.
func (c *tickClock) scale() func(int64) int64 {
	if !c.counter {
		return func(t int64) int64 { return t }
	}
	ns, tk := pairReading()
	per := c.perTick
	if tk > c.tk0 && ns > c.ns0 {
		per = float64(ns-c.ns0) / float64(tk-c.tk0)
	}
	tk0, ns0 := c.tk0, c.ns0
	return func(t int64) int64 { return ns0 + int64(float64(t-tk0)*per) }
}
