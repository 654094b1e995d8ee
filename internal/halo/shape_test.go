package halo

import (
	"math"
	"slices"
	"testing"
)

func TestShapeValidate(t *testing.T) {
	ok := Shape{Extents: []int{3, 4, 5}, Width: 2, Components: 3, ElemSize: 8}
	with := func(f func(*Shape)) Shape {
		s := ok
		s.Extents = slices.Clone(ok.Extents)
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name  string
		shape Shape
		err   string
	}{
		{"3-D", ok, ""},
		{"1-D", Shape{Extents: []int{1}, Width: 1, Components: 1, ElemSize: 1}, ""},
		{"width equals extent", with(func(s *Shape) { s.Extents[0] = 2 }), ""},
		{"MaxDims dimensions", Shape{Extents: make8(1), Width: 1, Components: 1, ElemSize: 1}, ""},
		{"zero value", Shape{}, "no dimensions"},
		{"no dimensions", with(func(s *Shape) { s.Extents = []int{} }), "no dimensions"},
		{"too many dimensions", with(func(s *Shape) { s.Extents = append(make8(2), 2) }), "9 dimensions, at most 8"},
		{"width 0", with(func(s *Shape) { s.Width = 0 }), "width 0"},
		{"negative width", with(func(s *Shape) { s.Width = -1 }), "width -1"},
		{"width exceeds extent", with(func(s *Shape) { s.Extents[1] = 1 }), "width 2 exceeds extent 1 in dimension 1"},
		{"extent 0", with(func(s *Shape) { s.Extents[2] = 0 }), "extent 0 in dimension 2"},
		{"negative extent", with(func(s *Shape) { s.Extents[0] = -3 }), "extent -3 in dimension 0"},
		{"no components", with(func(s *Shape) { s.Components = 0 }), "0 components"},
		{"element size 0", with(func(s *Shape) { s.ElemSize = 0 }), "element size 0"},
		{"negative element size", with(func(s *Shape) { s.ElemSize = -8 }), "element size -8"},
		{"too large", with(func(s *Shape) { s.Extents = []int{1 << 30, 1 << 30, 1 << 30} }), "too large"},
		{"extent near MaxInt", with(func(s *Shape) { s.Extents[0] = math.MaxInt }), "too large"},
		{"cell too large", with(func(s *Shape) { s.Components, s.ElemSize = math.MaxInt, 2 }), "too large"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, tc.shape.Validate(), tc.err) })
	}
}

func make8(e int) []int {
	x := make([]int, MaxDims)
	for i := range x {
		x[i] = e
	}
	return x
}

func TestShapeSizes(t *testing.T) {
	for _, tc := range []struct {
		shape Shape
		full  []int
		cells int
		bytes int
	}{
		{Shape{Extents: []int{5}, Width: 1, Components: 1, ElemSize: 8}, []int{7}, 7, 56},
		{Shape{Extents: []int{3, 4}, Width: 2, Components: 3, ElemSize: 4}, []int{7, 8}, 56, 672},
		{Shape{Extents: []int{3, 4, 5}, Width: 1, Components: 1, ElemSize: 1}, []int{5, 6, 7}, 210, 210},
	} {
		if got := tc.shape.Full(); !slices.Equal(got, tc.full) {
			t.Errorf("%+v: Full = %v, want %v", tc.shape, got, tc.full)
		}
		if got := tc.shape.Cells(); got != tc.cells {
			t.Errorf("%+v: Cells = %d, want %d", tc.shape, got, tc.cells)
		}
		if got := tc.shape.Bytes(); got != tc.bytes {
			t.Errorf("%+v: Bytes = %d, want %d", tc.shape, got, tc.bytes)
		}
	}
}
