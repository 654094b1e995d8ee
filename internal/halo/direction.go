package halo

import "fmt"

// Directions returns the 3^n−1 neighbour offsets of an n-dimensional grid,
// vectors over {−1, 0, 1} other than zero, in lexicographic order (dimension
// 0 most significant, −1 before 0 before 1). A direction's position in this
// list is its DirectionIndex. It returns nil unless 1 ≤ n ≤ MaxDims.
func Directions(n int) [][]int {
	if n < 1 || n > MaxDims {
		return nil
	}
	total := pow3(n)
	flat := make([]int, n*(total-1))
	out := make([][]int, 0, total-1)
	for v := range total {
		if v == total/2 { // the zero vector
			continue
		}
		o := flat[:n:n]
		flat = flat[n:]
		for d, x := n-1, v; d >= 0; d, x = d-1, x/3 {
			o[d] = x%3 - 1
		}
		out = append(out, o)
	}
	return out
}

// FaceDirections returns the 2n unit offsets of an n-dimensional grid in
// MPI's neighbour order: −e0, +e0, −e1, +e1, …. It returns nil unless
// 1 ≤ n ≤ MaxDims.
func FaceDirections(n int) [][]int {
	if n < 1 || n > MaxDims {
		return nil
	}
	flat := make([]int, 2*n*n)
	out := make([][]int, 0, 2*n)
	for d := range n {
		for _, sign := range [2]int{-1, 1} {
			o := flat[:n:n]
			flat = flat[n:]
			o[d] = sign
			out = append(out, o)
		}
	}
	return out
}

// DirectionIndex returns the position of direction o in Directions(len(o)).
func DirectionIndex(o []int) (int, error) {
	if len(o) < 1 || len(o) > MaxDims {
		return 0, fmt.Errorf("halo: direction %v has %d dimensions, want 1 to %d", o, len(o), MaxDims)
	}
	v, zero := 0, true
	for _, x := range o {
		if x < -1 || x > 1 {
			return 0, fmt.Errorf("halo: direction %v has a component outside {-1, 0, 1}", o)
		}
		zero = zero && x == 0
		v = 3*v + x + 1
	}
	if zero {
		return 0, fmt.Errorf("halo: direction %v is zero", o)
	}
	if v > pow3(len(o))/2 {
		v-- // the zero vector is not listed
	}
	return v, nil
}

func pow3(n int) int {
	p := 1
	for range n {
		p *= 3
	}
	return p
}
