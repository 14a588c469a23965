package main

import (
	"fmt"
	"math"
	"slices"

	"amid/viewer/volume"
)

// planes is an image as C planes of X·Y·Z float32 values on a working grid, with the
// factor from the original grid to it per axis (working = original · scale).
type planes struct {
	data  []float32
	c     int
	dims  [3]int // X, Y, Z of the working grid
	orig  [3]int // X, Y, Z of the original image
	scale [3]float64
}

// prepare converts img to the wanted number of channels (1: the mean of the colour
// channels; 3: grey repeated or the first three, dropping alpha), normalises each channel
// (clipped to its 0.5–99.5 percentiles, then z-scored) and resamples it onto a grid of
// dims voxels (X, Y, Z), averaging over each output voxel's footprint when shrinking.
func prepare(img *volume.Volume, channels int, dims [3]int) (*planes, error) {
	if err := img.Validate(); err != nil {
		return nil, err
	}
	in := [3]int{img.Dims[0], img.Dims[1], img.Dims[2]}
	for a := range 3 {
		if dims[a] < 1 || in[a] < 1 {
			return nil, fmt.Errorf("working grid %v for an image of %v voxels", dims, in)
		}
	}
	S, C := img.NumVoxels(), img.Dims[3]
	f := img.Float32()
	for i, x := range f {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("non-finite value %v at voxel %d", x, i/C)
		}
	}
	colour := C
	if C == 4 || C == 2 { // RGBA, grey + alpha
		colour = C - 1
	}
	src := make([]float32, channels*S)
	for c := range channels {
		p := src[c*S : (c+1)*S]
		for i := range S {
			switch {
			case channels == 1 && colour > 1:
				var s float32
				for k := range colour {
					s += f[i*C+k]
				}
				p[i] = s / float32(colour)
			default:
				p[i] = f[i*C+min(c, colour-1)]
			}
		}
		normalise(p)
	}
	out := &planes{c: channels, dims: dims, orig: in}
	for a := range 3 {
		out.scale[a] = float64(dims[a]) / float64(in[a])
	}
	out.data = resize(src, channels, in, dims)
	return out, nil
}

// normalise clips p to its 0.5 and 99.5 percentiles (estimated on at most 65536 evenly
// spaced values) and z-scores it; a constant plane becomes zeros.
func normalise(p []float32) {
	step := max(1, len(p)/65536)
	var s []float32
	for i := 0; i < len(p); i += step {
		s = append(s, p[i])
	}
	slices.Sort(s)
	lo, hi := s[len(s)*5/1000], s[min(len(s)-1, len(s)*995/1000)]
	var sum, sq float64
	for i, x := range p {
		x = min(max(x, lo), hi)
		p[i] = x
		sum += float64(x)
	}
	mean := sum / float64(len(p))
	for _, x := range p {
		d := float64(x) - mean
		sq += d * d
	}
	sd := math.Sqrt(sq / float64(len(p)))
	if sd < 1e-8 {
		clear(p)
		return
	}
	for i, x := range p {
		p[i] = float32((float64(x) - mean) / sd)
	}
}

// taps are the taps of resampling an axis of n values to m: output i covers input
// [i·n/m, (i+1)·n/m) and averages it when shrinking (area), or interpolates linearly at its
// centre when growing.
type taps struct {
	idx [][]int
	w   [][]float32
}

// weights1D returns the taps of resampling n values to m.
func weights1D(n, m int) taps {
	var t taps
	s := float64(n) / float64(m)
	for i := range m {
		var idx []int
		var w []float32
		if s > 1 {
			lo, hi := float64(i)*s, float64(i+1)*s
			for j := int(lo); j < n && float64(j) < hi; j++ {
				ov := math.Min(hi, float64(j+1)) - math.Max(lo, float64(j))
				if ov > 0 {
					idx = append(idx, j)
					w = append(w, float32(ov/s))
				}
			}
		} else {
			c := (float64(i)+0.5)*s - 0.5
			j := int(math.Floor(c))
			fr := c - float64(j)
			j0, j1 := min(max(j, 0), n-1), min(max(j+1, 0), n-1)
			idx = append(idx, j0, j1)
			w = append(w, float32(1-fr), float32(fr))
		}
		t.idx = append(t.idx, idx)
		t.w = append(t.w, w)
	}
	return t
}

// resize resamples C planes of in voxels (X, Y, Z) to out voxels, axis by axis; src is
// returned as it is when the grids are equal.
func resize(src []float32, C int, in, out [3]int) []float32 {
	cur, dims := src, in
	for a := range 3 {
		if dims[a] == out[a] {
			continue
		}
		t := weights1D(dims[a], out[a])
		nd := dims
		nd[a] = out[a]
		S, NS := dims[0]*dims[1]*dims[2], nd[0]*nd[1]*nd[2]
		next := make([]float32, C*NS)
		stride := [3]int{1, dims[0], dims[0] * dims[1]}[a]
		for c := range C {
			sp, dp := cur[c*S:(c+1)*S], next[c*NS:(c+1)*NS]
			for z := range nd[2] {
				for y := range nd[1] {
					for x := range nd[0] {
						o := [3]int{x, y, z}
						i := o[a]
						o[a] = 0
						base := (o[2]*dims[1]+o[1])*dims[0] + o[0]
						var v float32
						for k, j := range t.idx[i] {
							v += t.w[i][k] * sp[base+j*stride]
						}
						dp[(z*nd[1]+y)*nd[0]+x] = v
					}
				}
			}
		}
		cur, dims = next, nd
	}
	return cur
}
