package coll

import "math"

func f64(bits uint64) float64  { return math.Float64frombits(bits) }
func f64bits(f float64) uint64 { return math.Float64bits(f) }
