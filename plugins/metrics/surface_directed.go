package metrics

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// surfel reports whether a corner code marks a surface element (neither 0 nor 255).
func surfel(c uint8) bool { return uint8(c+1) > 1 }

// surfacePair is one surfel's distance and area.
type surfacePair struct{ d, a float64 }

// surfaceWorkers is how many goroutines share a pass over n planes.
func surfaceWorkers(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n))
}

// surfaceZDist writes, for every corner of the m grid, the number of planes to the nearest
// feature surfel in the same (x, y) column, or −1 when the column holds none. It is the
// first (Z) pass of the distance transform kept in integers: the squared distance in mm²
// is formed from it exactly as the float pass would form it. It reports whether any
// feature surfel exists.
func surfaceZDist(feature []uint8, m [3]int, dz []int32) bool {
	plane, nz := m[0]*m[1], m[2]
	workers := surfaceWorkers(plane / 4096)
	var any atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := plane*w/workers, plane*(w+1)/workers
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			found := false
			last := make([]int32, hi-lo)
			for i := range last {
				last[i] = -1
			}
			for z := 0; z < nz; z++ {
				f := feature[z*plane+lo : z*plane+hi]
				d := dz[z*plane+lo : z*plane+hi]
				for i, c := range f {
					switch {
					case surfel(c):
						last[i] = int32(z)
						d[i] = 0
						found = true
					case last[i] >= 0:
						d[i] = int32(z) - last[i]
					default:
						d[i] = -1
					}
				}
			}
			if found {
				any.Store(true)
			}
			for i := range last {
				last[i] = -1
			}
			for z := nz - 1; z >= 0; z-- {
				f := feature[z*plane+lo : z*plane+hi]
				d := dz[z*plane+lo : z*plane+hi]
				for i, c := range f {
					if surfel(c) {
						last[i] = int32(z)
					} else if l := last[i]; l >= 0 {
						if e := l - int32(z); d[i] < 0 || e < d[i] {
							d[i] = e
						}
					}
				}
			}
		}(lo, hi)
	}
	wg.Wait()
	return any.Load()
}

// surfaceDirected lists (distance, area) for every surfel of query: its distance in mm to
// the nearest surfel of feature (+Inf when feature has none), sorted like Python's
// sorted(zip(distances, areas)). The distances are those of EDTSquaredToFeatures(feature)
// bit for bit: the Z pass in integers (surfaceZDist), then per plane the lower-envelope
// passes along Y and X, evaluated only on the rows that hold query surfels. dz is scratch
// of len(query).
func surfaceDirected(feature, query []uint8, m [3]int, spacing [3]float64, area *[256]float64, dz []int32) []surfacePair {
	nx, ny, nz := m[0], m[1], m[2]
	plane := nx * ny
	inf := math.Inf(1)
	have := surfaceZDist(feature, m, dz)
	sx, sy, sz := spacing[0], spacing[1], spacing[2]
	workers := surfaceWorkers(nz)
	parts := make([][]surfacePair, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var out []surfacePair
			g := make([]float64, plane)
			need := make([]bool, ny)
			n := max(nx, ny)
			f := make([]float64, n)
			d := make([]float64, n)
			v := make([]int32, n)
			zb := make([]float64, n+1)
			hb := make([]float64, n)
			for {
				z := int(next.Add(1) - 1)
				if z >= nz {
					break
				}
				q := query[z*plane : (z+1)*plane]
				anyRow := false
				for y := range need {
					need[y] = slices.ContainsFunc(q[y*nx:(y+1)*nx], surfel)
					anyRow = anyRow || need[y]
				}
				if !anyRow {
					continue
				}
				if !have {
					for _, c := range q {
						if surfel(c) {
							out = append(out, surfacePair{inf, area[c]})
						}
					}
					continue
				}
				dzp := dz[z*plane : (z+1)*plane]
				// Y pass, column by column, into g (rows needed only).
				fy, dy := f[:ny], d[:ny]
				for x := 0; x < nx; x++ {
					for y := range fy {
						if e := dzp[y*nx+x]; e < 0 {
							fy[y] = inf
						} else {
							t := float64(e) * sz
							fy[y] = float64(t * t)
						}
					}
					if edtTrivial(fy) {
						copy(dy, fy)
					} else {
						edtEnvelope(fy, dy, v, zb, hb, sy)
					}
					for y, ok := range need {
						if ok {
							g[y*nx+x] = dy[y]
						}
					}
				}
				// X pass on the needed rows, read at the query surfels.
				for y, ok := range need {
					if ok {
						out = surfaceRowX(g[y*nx:(y+1)*nx], q[y*nx:(y+1)*nx], sx, area, out, d[:nx], v, zb, hb)
					}
				}
			}
			parts[w] = out
		}(w)
	}
	wg.Wait()
	ps := slices.Concat(parts...)
	slices.SortFunc(ps, func(x, y surfacePair) int {
		switch {
		case x.d < y.d:
			return -1
		case x.d > y.d:
			return 1
		case x.a < y.a:
			return -1
		case x.a > y.a:
			return 1
		}
		return 0
	})
	return ps
}

// surfaceRowX appends (distance, area) for the surfels of the query row q, the distance
// being the square root of min over x' of (Δx·sx)² + g[x'], the last pass of the
// transform. Surfels are few on a row and their nearest feature is usually near, so each
// is found by scanning outward from it while (Δx·sx)² stays below the best sum so far
// (the minimum of the same float sums the envelope forms); when the scans grow past twice
// the row's length the row falls back to the lower envelope (d, v, zb, hb: its scratch).
func surfaceRowX(g []float64, q []uint8, sx float64, area *[256]float64, out []surfacePair, d []float64, v []int32, zb, hb []float64) []surfacePair {
	n := len(g)
	budget := 2 * n
	env := false
	for x, c := range q {
		if !surfel(c) {
			continue
		}
		if env {
			out = append(out, surfacePair{math.Sqrt(d[x]), area[c]})
			continue
		}
		best := g[x]
		for j := 1; ; j++ {
			l, r := x-j, x+j
			if l < 0 && r >= n {
				break
			}
			t := float64(j) * sx
			tt := float64(t * t)
			if tt > best {
				break
			}
			if l >= 0 {
				if s := tt + g[l]; s < best {
					best = s
				}
			}
			if r < n {
				if s := tt + g[r]; s < best {
					best = s
				}
			}
			budget -= 2
		}
		out = append(out, surfacePair{math.Sqrt(best), area[c]})
		if budget < 0 {
			env = true
			edtEnvelope(g, d, v, zb, hb, sx)
		}
	}
	return out
}

// surfaceSplit unzips sorted pairs into distances and areas.
func surfaceSplit(ps []surfacePair) ([]float64, []float64) {
	d := make([]float64, len(ps))
	a := make([]float64, len(ps))
	for i, p := range ps {
		d[i], a[i] = p.d, p.a
	}
	return d, a
}
