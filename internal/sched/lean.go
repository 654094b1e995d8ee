package sched

import "math"

// The share search corrects a split where the rails' models stop telling
// the truth: a rail loaded by traffic that is not ours. Its correction
// factor (RailModel.Observe) fits the chunks it sees at one size, but under
// a foreign stream a longer chunk fares better per byte than a shorter one
// (it holds its own against the stream's window for longer), which no
// factor fitted at one operating point can see. So while some rail's
// correction says it is loaded, the scheduler takes over that rail's share
// of each split message: it starts from the share the models gave, sends
// each message a step above or below it, scores each on how long it took to
// land — the receiver's time from its clear-to-send to the last byte
// (Scheduler.Arrived) — and walks the share toward the side that lands
// sooner. The models keep learning meanwhile but no longer set the share:
// two controllers on one quantity chased each other (a larger chunk fared
// better, the correction fell, the solve gave more still, and back).
const (
	// leanOn is the correction at which a rail counts as loaded and the
	// search starts; leanOff the one under which it stops (hysteresis).
	leanOn  = 1.5
	leanOff = 1.25
	// A probe gives the rail center ± leanProbe of the message.
	leanProbe = 0.04
	// leanMove bounds one move of the center.
	leanMove = 0.1
	// leanMinShare bounds the share searched, on both sides.
	leanMinShare = 0.05
	// The sides alternate + − − + so that a drift cancels. Every
	// leanRound scores, once leanFit are in, the center moves toward the
	// minimum of a parabola of time per byte over the rail's share,
	// fitted to the last leanFit messages. A fit over several rounds sees
	// what one round's noise (a tenth of a message's time, under a
	// foreign stream) hides, and a parabola, unlike a line, stays true
	// over the span the center walked across those rounds (a line's
	// slope lagged behind the walk, which then swung across the minimum).
	leanRound = 4
	leanFit   = 16
	// leanPending bounds the trials awaiting their report (a lost report
	// is overwritten).
	leanPending = 8
)

// leanTrial is one split message sent leaned, waiting for its report.
type leanTrial struct {
	region uint64
	n      int     // payload bytes
	share  float64 // the leaning rail's part of them
}

// leanPoint is one scored message: the leaning rail's share and the time
// per byte it took to land.
type leanPoint struct{ share, perByte float64 }

// leanSearch is one destination's search. It runs under the destination's
// lock.
type leanSearch struct {
	rail   int     // the loaded rail whose share is searched; -1: no search
	center float64 // its share; 0 until the first split gives the models' one
	moved  bool    // the center has moved: it no longer follows the models
	// unanswered counts trials planned since the last report: a receiver
	// that does not answer leaves the share to the models.
	unanswered int
	trials     int // trials planned since the search started (picks the side)
	pending    [leanPending]leanTrial
	next       int // ring index of the next pending trial
	points     [leanFit]leanPoint
	scored     int // messages scored since the search started
}

// leanOrder is the side of each trial in a round: + − − +.
var leanOrder = [leanRound]int{0, 1, 1, 0}

// update starts, moves or stops the search from the rails' corrections:
// the loaded rail is the one with the largest correction at or above
// leanOn. It reports whether a search runs.
func (s *leanSearch) update(states []RailState) bool {
	k := min(len(states), maxRails)
	best, bestF := -1, 0.0
	models := 0
	for i := 0; i < k; i++ {
		m := states[i].Model
		if m == nil {
			continue
		}
		models++
		if f := m.Factor(); f > bestF {
			best, bestF = i, f
		}
	}
	switch {
	case models < 2:
		s.stop()
	case s.rail >= 0 && s.rail != best && bestF >= leanOn:
		s.stop() // another rail is the loaded one now
		s.start(best)
	case s.rail >= 0 && states[s.rail].Model.Factor() < leanOff:
		s.stop()
	case s.rail < 0 && bestF >= leanOn:
		s.start(best)
	}
	return s.rail >= 0
}

func (s *leanSearch) start(rail int) {
	s.rail, s.center, s.moved = rail, 0, false
	s.reset()
}

func (s *leanSearch) stop() {
	if s.rail < 0 {
		return
	}
	s.rail = -1
	s.reset()
	s.pending = [leanPending]leanTrial{}
}

// reset forgets the scores.
func (s *leanSearch) reset() {
	s.points, s.scored, s.trials, s.unanswered = [leanFit]leanPoint{}, 0, 0, 0
}

// share returns the share the next split message's loaded rail gets; 0:
// the models' (the first split, which sets the center).
func (s *leanSearch) share() float64 {
	if s.center == 0 || s.unanswered >= leanPending {
		return 0
	}
	if leanOrder[s.trials%leanRound] == 0 {
		return s.center + leanProbe
	}
	return s.center - leanProbe
}

// planned records that the message to region (n bytes) went with share
// of it on the searched rail, where the models' solve gave solved. Until
// the first move, the center follows the models: the search starts while
// the rail's correction is still climbing toward the load.
func (s *leanSearch) planned(region uint64, n int, share, solved float64) {
	if !s.moved {
		s.center = s.bound(solved)
	}
	s.pending[s.next] = leanTrial{region: region, n: n, share: share}
	s.next = (s.next + 1) % leanPending
	s.trials++
	s.unanswered++
}

// bound keeps a center where both probes around it stay in the range.
func (s *leanSearch) bound(c float64) float64 {
	return min(max(c, leanMinShare+leanProbe), 1-leanMinShare-leanProbe)
}

// arrived scores the trial to region, which took ns to land, and every
// leanRound scores moves the center one step down the fitted slope.
func (s *leanSearch) arrived(region uint64, ns float64) {
	if s.rail < 0 || !(ns > 0) || math.IsInf(ns, 1) {
		return
	}
	var t *leanTrial
	for i := range s.pending {
		if p := &s.pending[i]; p.n > 0 && p.region == region {
			t = p
			break
		}
	}
	if t == nil {
		return
	}
	s.unanswered = 0
	s.points[s.scored%leanFit] = leanPoint{t.share, ns / float64(t.n)}
	s.scored++
	*t = leanTrial{}
	if s.scored < leanFit || s.scored%leanRound != 0 {
		return
	}
	s.center = s.bound(s.center + fitMove(&s.points, s.center))
	s.moved = true
}

// fitMove fits time per byte = a + b·x + c·x² (x the share less center)
// to the points by least squares and returns the move toward its minimum,
// at most leanMove: the whole way to a minimum of a convex fit, else a
// full move down the slope at the center; 0 when the shares do not spread.
func fitMove(ps *[leanFit]leanPoint, center float64) float64 {
	// Normal equations over the moments of x (centered) and y.
	var m [5]float64 // Σx⁰..Σx⁴
	var r [3]float64 // Σy, Σxy, Σx²y
	for _, p := range ps {
		x := p.share - center
		xk := 1.0
		for k := range m {
			if k < 3 {
				r[k] += xk * p.perByte
			}
			m[k] += xk
			xk *= x
		}
	}
	det := func(a [3][3]float64) float64 {
		return a[0][0]*(a[1][1]*a[2][2]-a[1][2]*a[2][1]) -
			a[0][1]*(a[1][0]*a[2][2]-a[1][2]*a[2][0]) +
			a[0][2]*(a[1][0]*a[2][1]-a[1][1]*a[2][0])
	}
	a := [3][3]float64{{m[0], m[1], m[2]}, {m[1], m[2], m[3]}, {m[2], m[3], m[4]}}
	d := det(a)
	if !(math.Abs(d) > 1e-18) {
		return 0
	}
	var coef [3]float64 // a, b, c by Cramer's rule
	for k := range coef {
		ak := a
		for i := range ak {
			ak[i][k] = r[i]
		}
		coef[k] = det(ak) / d
	}
	b, c := coef[1], coef[2]
	move := -math.Copysign(leanMove, b) // down the slope at the center
	if c > 0 {
		move = -b / (2 * c)
	}
	return min(max(move, -leanMove), leanMove)
}

// leanChunks gives rail share·n of the n bytes in out, taking the
// difference from the other rails given something (or giving it to them)
// in proportion to what they can spare (or to their chunks), keeping every
// chunk at least minChunk. It reports whether it moved anything.
func leanChunks(out *[maxRails]int, k, rail int, share float64, minChunk int) bool {
	n := 0
	for i := 0; i < k; i++ {
		n += out[i]
	}
	if out[rail] == 0 || !(share > 0 && share < 1) {
		return false
	}
	others, room := 0, 0 // bytes of the others, and what they can give
	for i := 0; i < k; i++ {
		if i != rail && out[i] > 0 {
			others += out[i]
			room += out[i] - minChunk
		}
	}
	if others == 0 {
		return false
	}
	d := int(share*float64(n)) - out[rail]
	d = min(d, room)               // the others keep minChunk each
	d = max(d, minChunk-out[rail]) // the rail keeps minChunk
	if d == 0 {
		return false
	}
	out[rail] += d
	// The others give in proportion to what they can spare, or take in
	// proportion to their chunks.
	weight := func(i int) int {
		if d > 0 {
			return out[i] - minChunk
		}
		return out[i]
	}
	total := room
	if d < 0 {
		total = others
	}
	left, big := d, -1
	for i := 0; i < k; i++ {
		if i == rail || out[i] == 0 {
			continue
		}
		w := weight(i)
		take := int(float64(d) * float64(w) / float64(total))
		out[i] -= take
		left -= take
		if big < 0 || out[i] > out[big] {
			big = i
		}
	}
	out[big] -= left // rounding: the largest other settles it
	return true
}
