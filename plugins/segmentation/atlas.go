package main

import (
	"bytes"
	bin "encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"amid/plugins/engine/data"
)

// The forest lane's position prior (an atlas): on a regular grid of the patient frame,
// the frequency of each class among the training voxels near each point, smoothed at
// several scales so that points between or beside the training cases take what lies
// nearest (the slabs of one scan, or the same anatomy in several patients). A voxel's
// prior, sampled at its position, is K more features of the forest, which weighs it
// against what the voxel looks like. The classic baseline for anatomy is this prior alone
// (make bench-quality's "position" shortcut); the nearest training slice is its limit at
// the finest scale.
//
// A training voxel's prior leaves out the cases of its own group (atlasGroups groups of
// the training cases, by index): a prior that held its own label would be trusted as a
// perfect feature, where a new case's prior comes from other cases only.
//
// A label transfer at the lane's own resolution (each voxel's class in the training case
// nearest it, one-hot, and how far that case lies: the nearest-slice shortcut as a
// feature) was measured beside this prior and instead of it (BenchmarkForestTask, its
// statistics then over every foreground voxel rather than data.CTFit's sample, 32
// trees, seed 1, global normalisation; t1-brain, t1-tissue, ch2-lobes): the prior alone
// 0.948, 0.806, 0.644; both 0.924, 0.807, 0.650; the transfer alone 0.924, 0.799, 0.681.
// No better over the tuning tasks, it was not kept.

// atlasStep is the finest cell of the atlas in mm: a few voxels of a 0.5–1 mm MR.
const atlasStep = 2.0

// atlasMaxCells bounds the atlas's grid: a case whose extent holds more cells of
// atlasStep gets coarser cells, and so does a grid over all the cases.
const atlasMaxCells = 1 << 18

// atlasSigma is the standard deviation, in cells, of the smoothing of the atlas's counts:
// the finest that fills a cell's neighbours. Fitted on make bench-quality's tuning tasks
// (the forest's test Dice of 32 trees, seed 1, without the prior and with it):
// ch2-lobes 0.609 and 0.649, t1-tissue 0.665 and 0.776, t1-brain 0.912 and 0.948. The sum
// of the smoothings at 1, 2, 4 and 8 cells blurred the lobes (ch2-lobes 0.370), and the
// finest of them that reaches a cell with a tenth of the average counts did worse too
// (0.618, 0.728, 0.905).
const atlasSigma = 1.0

// atlasGroups is the number of groups of training cases whose priors leave out their own.
const atlasGroups = 5

// atlas is a position prior: K planes of class frequencies on a grid of Dims cells of Step
// mm whose cell (0, 0, 0) has its centre at Origin (patient frame, mm).
type atlas struct {
	Origin [3]float64
	Step   float64
	Dims   [3]int
	K      int
	Prob   []float32 // K planes of Dims cells, X fastest
}

// atlasCounts accumulates the training voxels' classes by cell of a grid anchored at the
// frame's origin, by group of cases.
type atlasCounts struct {
	step  float64
	k, g  int
	cells map[[3]int32][]float32 // per cell, g × k counts
}

// newAtlasCounts counts k classes of cases training cases (two or more: a single case
// has no other to take its prior from, and the forest then goes without one).
func newAtlasCounts(k, cases int) *atlasCounts {
	return &atlasCounts{k: k, g: min(cases, atlasGroups), cells: map[[3]int32][]float32{}}
}

// add counts the voxels of a case (its index i among the training cases) whose positions
// in mm pos gives (three planes) and whose classes label gives.
func (a *atlasCounts) add(i int, pos [3][]float32, label []int32) {
	if a.step == 0 {
		// The first case sets the cell: atlasStep, or coarser when its extent holds more
		// than atlasMaxCells of them.
		vol := 1.0
		for ax := range 3 {
			lo, hi := extent(pos[ax])
			vol *= max(hi-lo, atlasStep)
		}
		a.step = max(atlasStep, math.Cbrt(vol/atlasMaxCells))
	}
	g := i % a.g
	for v, l := range label {
		key := [3]int32{}
		for ax := range 3 {
			key[ax] = int32(math.Floor(float64(pos[ax][v]) / a.step))
		}
		c := a.cells[key]
		if c == nil {
			c = make([]float32, a.g*a.k)
			a.cells[key] = c
		}
		c[g*a.k+int(l)]++
	}
}

// extent is the least and greatest of p.
func extent(p []float32) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range p {
		lo, hi = min(lo, float64(v)), max(hi, float64(v))
	}
	return lo, hi
}

// build makes the atlas of every case and those that leave out each group (its g atlases,
// group i % g for training case i).
func (a *atlasCounts) build() (all *atlas, without []*atlas, err error) {
	if len(a.cells) == 0 {
		return nil, nil, errors.New("atlas: no training voxels")
	}
	lo := [3]int32{math.MaxInt32, math.MaxInt32, math.MaxInt32}
	hi := [3]int32{math.MinInt32, math.MinInt32, math.MinInt32}
	for key := range a.cells {
		for ax := range 3 {
			lo[ax], hi[ax] = min(lo[ax], key[ax]), max(hi[ax], key[ax])
		}
	}
	// Cells of merge × merge × merge keys when the grid over all the cases is too large.
	merge := int32(1)
	for {
		n := 1
		for ax := range 3 {
			n *= int(hi[ax]/merge-lo[ax]/merge) + 1
		}
		if n <= atlasMaxCells {
			break
		}
		merge *= 2
	}
	var dims [3]int
	var base [3]int32
	for ax := range 3 {
		base[ax] = floorDiv(lo[ax], merge)
		dims[ax] = int(floorDiv(hi[ax], merge)-base[ax]) + 1
	}
	step := a.step * float64(merge)
	S := dims[0] * dims[1] * dims[2]
	// counts[g][k]: group g's voxels of class k by cell.
	counts := make([][][]float32, a.g)
	for g := range counts {
		counts[g] = make([][]float32, a.k)
		for k := range counts[g] {
			counts[g][k] = make([]float32, S)
		}
	}
	for key, c := range a.cells {
		i := 0
		for ax := 2; ax >= 0; ax-- {
			i = i*dims[ax] + int(floorDiv(key[ax], merge)-base[ax])
		}
		for g := range a.g {
			for k := range a.k {
				counts[g][k][i] += c[g*a.k+k]
			}
		}
	}
	origin := [3]float64{}
	for ax := range 3 {
		origin[ax] = (float64(base[ax]) + 0.5) * step
	}
	make1 := func(leave int) *atlas {
		num := make([][]float32, a.k)
		for k := range num {
			num[k] = make([]float32, S)
			for g := range a.g {
				if g == leave {
					continue
				}
				for i, v := range counts[g][k] {
					num[k][i] += v
				}
			}
		}
		return smoothAtlas(num, dims, step, origin)
	}
	all = make1(-1)
	without = make([]*atlas, a.g)
	for g := range without {
		without[g] = make1(g)
	}
	return all, without, nil
}

// floorDiv is a/b rounded down (b > 0).
func floorDiv(a, b int32) int32 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// smoothAtlas is the atlas of the counts num (K planes of cells): at each cell, each
// class's count over all counts, both smoothed by a Gaussian of atlasSigma cells
// (normalised convolution), so that a cell without voxels takes its neighbours' classes,
// the nearest most. A cell the smoothing does not reach (3 σ) takes the classes' overall
// frequencies.
func smoothAtlas(num [][]float32, dims [3]int, step float64, origin [3]float64) *atlas {
	K, S := len(num), dims[0]*dims[1]*dims[2]
	den := make([]float32, S)
	total := make([]float64, K)
	for k := range num {
		for i, v := range num[k] {
			den[i] += v
			total[k] += float64(v)
		}
	}
	var all float64
	for _, t := range total {
		all += t
	}
	cell := [3]float64{1, 1, 1}
	sd := make([][]float32, K+1)
	var wg sync.WaitGroup
	for k := range K + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if k == K {
				sd[k] = gaussian(den, dims, cell, atlasSigma)
			} else {
				sd[k] = gaussian(num[k], dims, cell, atlasSigma)
			}
		}()
	}
	wg.Wait()
	at := &atlas{Origin: origin, Step: step, Dims: dims, K: K, Prob: make([]float32, K*S)}
	for i := range S {
		d := sd[K][i]
		for k := range K {
			if d > 1e-3 {
				at.Prob[k*S+i] = sd[k][i] / d
			} else {
				at.Prob[k*S+i] = float32(total[k] / max(all, 1))
			}
		}
	}
	return at
}

// sample is the prior of K classes at position p (mm), trilinear between the cells'
// centres, clamped at the grid's edges, into out.
func (a *atlas) sample(p [3]float64, out []float32) {
	var i0 [3]int
	var f [3]float64
	for ax := range 3 {
		u := (p[ax] - a.Origin[ax]) / a.Step
		u = min(max(u, 0), float64(a.Dims[ax]-1))
		i0[ax] = min(int(u), max(a.Dims[ax]-2, 0))
		f[ax] = u - float64(i0[ax])
		if a.Dims[ax] == 1 {
			f[ax] = 0
		}
	}
	S := a.Dims[0] * a.Dims[1] * a.Dims[2]
	clear(out)
	for c := range 8 {
		w := 1.0
		idx := 0
		stride := 1
		for ax := range 3 {
			bit := (c >> ax) & 1
			if bit == 1 {
				w *= f[ax]
			} else {
				w *= 1 - f[ax]
			}
			j := min(i0[ax]+bit, a.Dims[ax]-1)
			idx += j * stride
			stride *= a.Dims[ax]
		}
		if w == 0 {
			continue
		}
		for k := range a.K {
			out[k] += float32(w) * a.Prob[k*S+idx]
		}
	}
}

// planes is the prior of every voxel whose positions in mm pos gives: K planes.
func (a *atlas) planes(pos [3][]float32) [][]float32 {
	n := len(pos[0])
	out := make([][]float32, a.K)
	for k := range out {
		out[k] = make([]float32, n)
	}
	v := make([]float32, a.K)
	for i := range n {
		a.sample([3]float64{float64(pos[0][i]), float64(pos[1][i]), float64(pos[2][i])}, v)
		for k := range v {
			out[k][i] = v[k]
		}
	}
	return out
}

// positions are the positions in mm of an image's voxels: the first position plane of
// each patient axis among planes (ch channels, then data.Norm.Coords' planes), in mm.
func positions(planes []float32, S, ch int) [3][]float32 {
	per := 1 + 2*len(data.CoordPeriods) // the planes of one patient axis
	var out [3][]float32
	for a := range 3 {
		at := ch + a*per
		p := make([]float32, S)
		for i, v := range planes[at*S : (at+1)*S] {
			p[i] = v * data.CoordScale
		}
		out[a] = p
	}
	return out
}

// atlasMagic opens an encoded atlas.
const atlasMagic = "AMIDAT1\n"

// maxAtlasClasses bounds a decoded atlas's classes, as the forest's decoder does.
const maxAtlasClasses = 256

// MarshalBinary encodes a: the magic, then little-endian values.
func (a *atlas) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(atlasMagic)
	w := func(v any) { _ = bin.Write(&b, bin.LittleEndian, v) }
	w(a.Origin)
	w(a.Step)
	for _, d := range a.Dims {
		w(uint32(d))
	}
	w(uint32(a.K))
	w(a.Prob)
	return b.Bytes(), nil
}

// errAtlas reports bytes that are not an encoded atlas.
var errAtlas = errors.New("not an encoded atlas")

// UnmarshalBinary decodes what MarshalBinary wrote, checking every count and value.
func (a *atlas) UnmarshalBinary(b []byte) error {
	r := bytes.NewReader(b)
	head := make([]byte, len(atlasMagic))
	if _, err := io.ReadFull(r, head); err != nil || string(head) != atlasMagic {
		return fmt.Errorf("%w: no %q header", errAtlas, atlasMagic[:len(atlasMagic)-1])
	}
	var out atlas
	var dims [3]uint32
	var k uint32
	if err := bin.Read(r, bin.LittleEndian, &out.Origin); err != nil {
		return fmt.Errorf("%w: origin: %w", errAtlas, err)
	}
	if err := bin.Read(r, bin.LittleEndian, &out.Step); err != nil {
		return fmt.Errorf("%w: step: %w", errAtlas, err)
	}
	if err := bin.Read(r, bin.LittleEndian, &dims); err != nil {
		return fmt.Errorf("%w: dims: %w", errAtlas, err)
	}
	if err := bin.Read(r, bin.LittleEndian, &k); err != nil {
		return fmt.Errorf("%w: classes: %w", errAtlas, err)
	}
	for _, o := range out.Origin {
		if math.IsNaN(o) || math.IsInf(o, 0) {
			return fmt.Errorf("%w: origin %v", errAtlas, out.Origin)
		}
	}
	if !(out.Step > 0) || math.IsInf(out.Step, 0) {
		return fmt.Errorf("%w: cell of %v mm", errAtlas, out.Step)
	}
	if k < 1 || k > maxAtlasClasses {
		return fmt.Errorf("%w: %d classes", errAtlas, k)
	}
	n := int64(k)
	for ax, d := range dims {
		if d < 1 || d > atlasMaxCells {
			return fmt.Errorf("%w: %d cells on axis %d", errAtlas, d, ax)
		}
		n *= int64(d)
		out.Dims[ax] = int(d)
	}
	if n*4 != int64(r.Len()) {
		return fmt.Errorf("%w: %d bytes of values, want %d", errAtlas, r.Len(), n*4)
	}
	out.K, out.Prob = int(k), make([]float32, n)
	if err := bin.Read(r, bin.LittleEndian, out.Prob); err != nil {
		return fmt.Errorf("%w: values: %w", errAtlas, err)
	}
	for _, v := range out.Prob {
		if !(v >= 0 && v <= 1.0001) {
			return fmt.Errorf("%w: a frequency of %v", errAtlas, v)
		}
	}
	*a = out
	return nil
}
