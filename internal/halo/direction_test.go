package halo

import (
	"slices"
	"testing"
)

func TestDirections(t *testing.T) {
	if got, want := Directions(1), [][]int{{-1}, {1}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("Directions(1) = %v, want %v", got, want)
	}
	want2 := [][]int{{-1, -1}, {-1, 0}, {-1, 1}, {0, -1}, {0, 1}, {1, -1}, {1, 0}, {1, 1}}
	if got := Directions(2); !slices.EqualFunc(got, want2, slices.Equal) {
		t.Errorf("Directions(2) = %v, want %v", got, want2)
	}
	for n := 1; n <= MaxDims; n++ {
		dirs := Directions(n)
		if len(dirs) != pow3(n)-1 {
			t.Fatalf("Directions(%d) has %d entries, want %d", n, len(dirs), pow3(n)-1)
		}
		for i, o := range dirs {
			if len(o) != n || cap(o) != n {
				t.Fatalf("Directions(%d)[%d] = %v: length %d capacity %d", n, i, o, len(o), cap(o))
			}
			// Strictly increasing lexicographically: distinct, in order.
			if i > 0 && slices.Compare(dirs[i-1], o) >= 0 {
				t.Fatalf("Directions(%d): %v before %v", n, dirs[i-1], o)
			}
			if idx, err := DirectionIndex(o); err != nil || idx != i {
				t.Fatalf("DirectionIndex(%v) = %d, %v, want %d", o, idx, err, i)
			}
		}
	}
	for _, n := range []int{-1, 0, MaxDims + 1} {
		if got := Directions(n); got != nil {
			t.Errorf("Directions(%d) = %v, want nil", n, got)
		}
	}
}

func TestFaceDirections(t *testing.T) {
	want := [][]int{{-1, 0, 0}, {1, 0, 0}, {0, -1, 0}, {0, 1, 0}, {0, 0, -1}, {0, 0, 1}}
	if got := FaceDirections(3); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("FaceDirections(3) = %v, want %v", got, want)
	}
	for n := 1; n <= MaxDims; n++ {
		if got := len(FaceDirections(n)); got != 2*n {
			t.Errorf("FaceDirections(%d) has %d entries", n, got)
		}
	}
	for _, n := range []int{-1, 0, MaxDims + 1} {
		if got := FaceDirections(n); got != nil {
			t.Errorf("FaceDirections(%d) = %v, want nil", n, got)
		}
	}
}

func TestDirectionIndexErrors(t *testing.T) {
	for _, tc := range []struct {
		o   []int
		err string
	}{
		{nil, "0 dimensions"},
		{[]int{}, "0 dimensions"},
		{make([]int, MaxDims+1), "9 dimensions"},
		{[]int{0}, "is zero"},
		{[]int{0, 0, 0}, "is zero"},
		{[]int{2, 0}, "outside {-1, 0, 1}"},
		{[]int{1, -2}, "outside {-1, 0, 1}"},
	} {
		_, err := DirectionIndex(tc.o)
		wantErr(t, err, tc.err)
	}
}
