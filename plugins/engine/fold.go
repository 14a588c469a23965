package engine

// A stride-1 3D convolution whose kernel spans several planes (k[0] > 1) can fold its
// depth axis into the rows of the SGEMM instead of the column matrix: the in-plane column
// matrix X (c·kh·kw rows, one column per input voxel) is multiplied by the weight of every
// depth offset at once, Y = W' X with W' = (kd·cout × c·kh·kw), and each depth offset's
// rows of Y are added to the output shifted by whole planes. X is k[0] times smaller than
// the full column matrix, and the SGEMM has k[0]·cout rows instead of cout. On few output
// channels (the U-Net's full-resolution stages, 16–32 channels) the product is bound by the
// memory traffic of writing and packing the column matrix, not by arithmetic, so the
// smaller matrix is what makes these layers faster (benchengine -layers shows it).
//
// The weight gradient folds the same way: dW' = D Xᵀ, D stacking the output gradient
// shifted by each depth offset; the input gradient is the folded convolution of the output
// gradient with the flipped kernel. A 2D convolution folds its rows the same way ([planar]).
// One sample split over several workers (inference) splits the output channels
// ([folded.channels]), so that workers write disjoint parts of the output.

// folded is the depth-folded form of a convolution of c channels into cout.
type folded struct {
	g            geom // in-plane geometry over every input plane: kernel (1, kh, kw), no depth padding
	k0, p0, out0 int  // depth kernel, padding and output planes
	cout         int
	w            []float32 // the weight as (cout·k0) × (c·kh·kw), row co·k0 + kd
	rowsPerTile  int
}

// planar views the geometry of a 2D convolution (one plane, a 1×kh×kw kernel) as a 3D one
// of H planes of one row each, so that its rows fold like planes: a sample's memory is the
// same either way. Other geometries are returned as they are.
func planar(g geom) geom {
	if g.in[0] != 1 || g.k[0] != 1 || g.p[0] != 0 || g.s[0] != 1 {
		return g
	}
	v, ok := newGeom(g.c, [3]int{g.in[1], 1, g.in[2]}, [3]int{g.k[1], 1, g.k[2]},
		[3]int{g.s[1], 1, g.s[2]}, [3]int{g.p[1], 0, g.p[2]})
	if !ok {
		return g
	}
	v.colBudget = g.colBudget
	return v
}

// newFolded returns the folded form of the stride-1 convolution of geometry g with cout
// output channels, or nil when folding does not apply (a 2D kernel or a stride).
func newFolded(g geom, cout int) *folded {
	if g.k[0] < 2 || g.s != [3]int{1, 1, 1} {
		return nil
	}
	g2, ok := newGeom(g.c, g.in, [3]int{1, g.k[1], g.k[2]}, g.s, [3]int{0, g.p[1], g.p[2]})
	if !ok {
		return nil
	}
	g2.colBudget = g.colBudget
	f := &folded{g: g2, k0: g.k[0], p0: g.p[0], out0: g.out[0], cout: cout,
		w: make([]float32, g.k[0]*cout*g2.rows())}
	perRow := (g2.rows() + f.k0*cout) * g2.out[2]
	f.rowsPerTile = min(g2.outRows(), max(1, g2.budget()/perRow))
	return f
}

// size is the workspace a worker needs: the in-plane column tile and the tile of Y (or D).
func (f *folded) size() int {
	return (f.g.rows() + f.k0*f.cout) * f.rowsPerTile * f.g.out[2]
}

// setWeight writes w (cout, c, kd, kh, kw) as the folded weight.
func (f *folded) setWeight(w []float32) {
	c, kk2, K := f.g.c, f.g.kk(), f.g.rows()
	for co := range f.cout {
		for ci := range c {
			for kd := range f.k0 {
				src := w[((co*c+ci)*f.k0+kd)*kk2:][:kk2]
				copy(f.w[(co*f.k0+kd)*K+ci*kk2:][:kk2], src)
			}
		}
	}
}

// addGrad adds (or writes, when add is false) the folded weight gradient dwf to dw in the
// weight's layout (cout, c, kd, kh, kw).
func (f *folded) addGrad(dw, dwf []float32, add bool) {
	c, kk2, K := f.g.c, f.g.kk(), f.g.rows()
	for co := range f.cout {
		for ci := range c {
			for kd := range f.k0 {
				dst := dw[((co*c+ci)*f.k0+kd)*kk2:][:kk2]
				src := dwf[(co*f.k0+kd)*K+ci*kk2:][:kk2]
				if !add {
					copy(dst, src)
					continue
				}
				for i, v := range src {
					dst[i] += v
				}
			}
		}
	}
}

// shift returns, for depth offset kd and the input rows [q0,q1) of a tile, the input rows
// [lo,hi) whose output row (lo−s … hi−s) exists; s is the offset in rows.
func (f *folded) shift(kd, q0, q1 int) (lo, hi, s int) {
	s = (kd - f.p0) * f.g.out[1]
	return max(q0, s), min(q1, f.out0*f.g.out[1]+s), s
}

// forward writes (or adds to, when acc is set) y, the convolution of one sample x, using
// buf as workspace.
func (f *folded) forward(be Backend, x, y, buf []float32, acc bool) {
	f.channels(be, x, y, buf, acc, 0, f.cout)
}

// channels computes output channels [c0,c1) of forward: workers that split one sample's
// channels write disjoint parts of y.
func (f *folded) channels(be Backend, x, y, buf []float32, acc bool, c0, c1 int) {
	K, M, o2, P := f.g.rows(), f.k0*(c1-c0), f.g.out[2], f.out0*f.g.out[1]*f.g.out[2]
	Q, R := f.g.outRows(), f.rowsPerTile
	col, yt := buf[:K*R*o2], buf[K*R*o2:]
	if !acc {
		clear(y[c0*P : c1*P])
	}
	for q0 := 0; q0 < Q; q0 += R {
		q1 := min(Q, q0+R)
		T := (q1 - q0) * o2
		f.g.im2col(x, col, q0, q1)
		be.Sgemm(false, false, M, T, K, 1, f.w[c0*f.k0*K:], K, col, T, 0, yt, T)
		for kd := range f.k0 {
			lo, hi, s := f.shift(kd, q0, q1)
			if lo >= hi {
				continue
			}
			for co := c0; co < c1; co++ {
				src := yt[((co-c0)*f.k0+kd)*T+(lo-q0)*o2:][:(hi-lo)*o2]
				dst := y[co*P+(lo-s)*o2:][:len(src)]
				for i, v := range src {
					dst[i] += v
				}
			}
		}
	}
}

// weightGrad adds (beta 1) or writes (beta 0) the folded weight gradient of one sample to
// dwf: x the input, dy the output gradient.
func (f *folded) weightGrad(be Backend, x, dy, dwf, buf []float32, beta float32) {
	K, M, o2, P := f.g.rows(), f.k0*f.cout, f.g.out[2], f.out0*f.g.out[1]*f.g.out[2]
	Q, R := f.g.outRows(), f.rowsPerTile
	col, dt := buf[:K*R*o2], buf[K*R*o2:]
	for q0 := 0; q0 < Q; q0 += R {
		q1 := min(Q, q0+R)
		T := (q1 - q0) * o2
		f.g.im2col(x, col, q0, q1)
		for kd := range f.k0 {
			lo, hi, s := f.shift(kd, q0, q1)
			for co := range f.cout {
				row := dt[(co*f.k0+kd)*T:][:T]
				if lo >= hi {
					clear(row)
					continue
				}
				clear(row[:(lo-q0)*o2])
				copy(row[(lo-q0)*o2:(hi-q0)*o2], dy[co*P+(lo-s)*o2:])
				clear(row[(hi-q0)*o2:])
			}
		}
		be.Sgemm(false, true, M, K, T, 1, dt, T, col, T, beta, dwf, K)
		beta = 1
	}
}
