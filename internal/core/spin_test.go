package core

import (
	"testing"
	"time"
)

func TestSpinPolicy(t *testing.T) {
	const max = 200 * time.Microsecond
	p := newSpinPolicy(max)
	if p.next() != max {
		t.Fatal("starts below the full budget")
	}
	// Waits that outlast the budget shrink it to nothing.
	for i := 0; i < 10; i++ {
		p.report(p.next(), false)
	}
	if p.budget.Load() != 0 {
		t.Fatalf("budget %v after failures", time.Duration(p.budget.Load()))
	}
	// Exhausted, it parks at once except for periodic probes.
	probes := 0
	for i := 0; i < 64; i++ {
		if d := p.next(); d != 0 {
			probes++
			p.report(d, false)
		}
	}
	if probes == 0 || probes > 64/probeFirst {
		t.Fatalf("%d probes in 64 waits", probes)
	}
	if p.probe.Load() <= probeFirst {
		t.Fatal("failed probes did not space out")
	}
	// A probe that succeeds brings polling back, doubling to the maximum.
	for p.next() == 0 {
	}
	p.report(max, true)
	for i := 0; i < 20; i++ {
		p.report(p.next(), true)
	}
	if p.next() != max {
		t.Fatalf("budget %v after successes", p.next())
	}
	// Never polling stays never.
	off := newSpinPolicy(-1)
	for i := 0; i < 100; i++ {
		if off.next() != 0 {
			t.Fatal("disabled policy polled")
		}
	}
}
