package stats

// Mean returns the arithmetic mean of xs, summed in float64 so that
// durations in nanoseconds do not overflow; the mean of no values is 0.
//
// Beside a median it is the figure a program pays: the median of a run
// whose calls take 1 µs but one in a hundred 100 µs is 1 µs, its mean
// about 2.
func Mean[T Number](xs []T) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += float64(x)
	}
	return s / float64(len(xs))
}
