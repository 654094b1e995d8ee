package main

import "github.com/commtune/commtune"

// block is one rank's part of the grid: its interior extents and the
// global index of its first interior cell, per dimension. Its array adds
// a halo of width 1 on every side.
type block struct {
	ext, off [3]int
}

// blockOf returns the block of rank r of cart over grid.
func blockOf(cart *commtune.Cart, r int, grid [3]int) block {
	dims := cart.Dims()
	coords, _ := cart.Coords(r) // r is a rank of cart's communicator
	var b block
	for d := range 3 {
		b.ext[d], b.off[d] = split(grid[d], dims[d], coords[d])
	}
	return b
}

// split returns the extent and offset of block i of n blocks over cells
// cells: the first cells%n blocks hold one cell more. Neighbouring blocks
// thus agree on the faces they share.
func split(cells, n, i int) (ext, off int) {
	base, rem := cells/n, cells%n
	ext = base
	if i < rem {
		ext++
	}
	return ext, i*base + min(i, rem)
}

// cells is the size of the block's array, halo included.
func (b block) cells() int { return (b.ext[0] + 2) * (b.ext[1] + 2) * (b.ext[2] + 2) }

// interior is the number of the block's own cells.
func (b block) interior() int { return b.ext[0] * b.ext[1] * b.ext[2] }

// at is the index in the block's array of interior cell (i, j, k),
// counted from 0 in the interior.
func (b block) at(i, j, k int) int {
	return ((i+1)*(b.ext[1]+2)+j+1)*(b.ext[2]+2) + k + 1
}

// global is the index in the global grid (interior cells only, row-major)
// of the block's interior cell (i, j, k).
func (b block) global(i, j, k int, grid [3]int) int {
	return ((b.off[0]+i)*grid[1]+b.off[1]+j)*grid[2] + b.off[2] + k
}

// piece packs the interior of u, the block's array, as the checkpoint
// piece of rank owner of p at iteration t; a nil u makes room for one.
func (b block) piece(owner, p, t int, u []float64) Piece {
	pc := Piece{Owner: owner, P: p, Iter: t, Off: b.off, Ext: b.ext, Data: make([]float64, b.interior())}
	if u != nil {
		n := 0
		for i := range b.ext[0] {
			for j := range b.ext[1] {
				for k := range b.ext[2] {
					pc.Data[n] = u[b.at(i, j, k)]
					n++
				}
			}
		}
	}
	return pc
}

// place writes data, the block's packed interior, into the global grid g.
func (b block) place(g, data []float64, grid [3]int) {
	n := 0
	for i := range b.ext[0] {
		for j := range b.ext[1] {
			for k := range b.ext[2] {
				g[b.global(i, j, k, grid)] = data[n]
				n++
			}
		}
	}
}

// unpack fills the interior of u, the block's array, from the global
// grid g.
func (b block) unpack(u, g []float64, grid [3]int) {
	for i := range b.ext[0] {
		for j := range b.ext[1] {
			for k := range b.ext[2] {
				u[b.at(i, j, k)] = g[b.global(i, j, k, grid)]
			}
		}
	}
}

// source is h²·f for f = 1, h the spacing of the largest extent.
func source(grid [3]int) float64 {
	h := 1 / float64(max(grid[0], grid[1], grid[2])+1)
	return h * h
}

// sweep writes one Jacobi iteration of cur's interior into next's. Each
// cell adds the same neighbours in the same order in any block, so the
// result does not depend on the decomposition.
func sweep(b block, cur, next []float64, src float64) {
	sy, sx := b.ext[2]+2, (b.ext[1]+2)*(b.ext[2]+2)
	for i := range b.ext[0] {
		for j := range b.ext[1] {
			for k := range b.ext[2] {
				p := b.at(i, j, k)
				next[p] = (cur[p-sx] + cur[p+sx] + cur[p-sy] + cur[p+sy] + cur[p-1] + cur[p+1] + src) / 6
			}
		}
	}
}
