package main

import (
	"fmt"
	"math"
	"slices"

	"amid/plugins/engine/data"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
	"amid/viewer/volume"
)

// prior is the box3d_prior lane's model, fitted on the training boxes: their mean size in
// mm, their mean centre relative to the image's extent, and their centre's mean offset in
// mm from the image's intensity-weighted centre.
type prior struct {
	SizeMM   [3]float64 `json:"size_mm"`
	Rel      [3]float64 `json:"relative_centre"`
	OffsetMM [3]float64 `json:"offset_mm"`
	Centre   string     `json:"centre"`
}

// brightQuantile is the intensity quantile above which voxels weigh in the intensity
// centre: contrast-filled vessels are the brightest few percent of a CTA or TOF-MRA.
const brightQuantile = 0.99

// intensityCentre is the centre (voxels, X, Y, Z) of the voxels of v's first channel
// brighter than its brightQuantile, weighted by how much brighter; the grid's centre
// when the image is flat.
func intensityCentre(v *volume.Volume) [3]float64 {
	C := v.Dims[3]
	n := v.NumVoxels()
	step := max(1, n/65536)
	var s []float64
	for i := 0; i < n; i += step {
		s = append(s, v.AtIndex(i*C))
	}
	slices.Sort(s)
	thr := s[min(len(s)-1, int(float64(len(s))*brightQuantile))]
	var c [3]float64
	var wsum float64
	X, Y := v.Dims[0], v.Dims[1]
	for i := range n {
		w := v.AtIndex(i*C) - thr
		if !(w > 0) {
			continue
		}
		c[0] += w * float64(i%X)
		c[1] += w * float64(i/X%Y)
		c[2] += w * float64(i/(X*Y))
		wsum += w
	}
	if wsum == 0 {
		return [3]float64{float64(v.Dims[0]-1) / 2, float64(v.Dims[1]-1) / 2, float64(v.Dims[2]-1) / 2}
	}
	for a := range c {
		c[a] /= wsum
	}
	return c
}

// boxCentre is a 3D box's centre in voxel coordinates (voxel i spans [i−½, i+½]).
func boxCentre(b *taskspec.Box3D) [3]float64 {
	var c [3]float64
	for a := range 3 {
		c[a] = float64(b.Min[a]) + float64(b.Size[a]-1)/2
	}
	return c
}

// fitPrior fits the prior on the training cases' images and boxes.
func fitPrior(cases []protocol.Case, s *taskspec.Spec, centre string) (*prior, error) {
	if len(cases) == 0 {
		return nil, fmt.Errorf("%w: no training cases", ErrInput)
	}
	p := &prior{Centre: centre}
	for _, k := range cases {
		a, v, err := read3D(k, s)
		if err != nil {
			return nil, err
		}
		bc, ic := boxCentre(a.Box3D), intensityCentre(v)
		for ax := range 3 {
			p.SizeMM[ax] += float64(a.Box3D.Size[ax]) * v.Spacing[ax]
			p.Rel[ax] += (bc[ax] + 0.5) / float64(v.Dims[ax])
			p.OffsetMM[ax] += (bc[ax] - ic[ax]) * v.Spacing[ax]
		}
	}
	n := float64(len(cases))
	for ax := range 3 {
		p.SizeMM[ax] /= n
		p.Rel[ax] /= n
		p.OffsetMM[ax] /= n
	}
	return p, nil
}

// read3D reads a 3D case's image and its checked label.
func read3D(k protocol.Case, s *taskspec.Spec) (*taskspec.Annotation, *volume.Volume, error) {
	if len(k.Images) == 0 {
		return nil, nil, fmt.Errorf("%w: case %s has no image file", ErrInput, k.ID)
	}
	a, err := readLabel(k.ID, k.Label, s, modeBox3D)
	if err != nil {
		return nil, nil, err
	}
	v, err := data.ReadChannels(k.Images)
	if err != nil {
		return nil, nil, fmt.Errorf("case %s: %w", k.ID, err)
	}
	if err := checkInside(k.ID, k.Label, a, [3]int{v.Dims[0], v.Dims[1], v.Dims[2]}); err != nil {
		return nil, nil, err
	}
	return a, v, nil
}

// predict is the prior's box for image v.
func (p *prior) predict(v *volume.Volume) taskspec.Box3D {
	var c [3]float64
	if p.Centre == "intensity" {
		ic := intensityCentre(v)
		for a := range 3 {
			c[a] = ic[a] + p.OffsetMM[a]/v.Spacing[a]
		}
	} else {
		for a := range 3 {
			c[a] = p.Rel[a]*float64(v.Dims[a]) - 0.5
		}
	}
	var size [3]float64
	for a := range 3 {
		size[a] = p.SizeMM[a] / v.Spacing[a]
	}
	return boxAround(c, size, [3]int{v.Dims[0], v.Dims[1], v.Dims[2]})
}

// boxAround is the box of whole voxels of the given size (voxels) centred on c, clipped to
// an image of dims voxels, at least one voxel on each side.
func boxAround(c, size [3]float64, dims [3]int) taskspec.Box3D {
	var b taskspec.Box3D
	for a := range 3 {
		n := min(max(1, int(math.Round(size[a]))), dims[a])
		lo := int(math.Round(c[a] - float64(n-1)/2))
		lo = min(max(lo, 0), dims[a]-n)
		b.Min[a], b.Size[a] = lo, n
	}
	return b
}

// item3D is a 3D training case on the coarse grid: normalised image and box mask.
type item3D struct {
	img []float32
	lab []int32
}

// coarseMask marks the coarse voxels whose centres lie inside box b of an image whose
// coarse grid is scale times its own (original voxel i spans [i, i+1), coarse voxel j
// spans [j/scale, (j+1)/scale)); at least the voxel holding the box's centre.
func coarseMask(b *taskspec.Box3D, scale [3]float64, dims [3]int) []int32 {
	var lo, hi [3]int
	for a := range 3 {
		lo[a] = int(math.Ceil(float64(b.Min[a])*scale[a] - 0.5))
		hi[a] = int(math.Ceil(float64(b.Min[a]+b.Size[a])*scale[a]-0.5)) - 1
		lo[a], hi[a] = max(lo[a], 0), min(hi[a], dims[a]-1)
		if hi[a] < lo[a] {
			c := min(max(int((float64(b.Min[a])+float64(b.Size[a])/2)*scale[a]), 0), dims[a]-1)
			lo[a], hi[a] = c, c
		}
	}
	m := make([]int32, dims[0]*dims[1]*dims[2])
	for z := lo[2]; z <= hi[2]; z++ {
		for y := lo[1]; y <= hi[1]; y++ {
			for x := lo[0]; x <= hi[0]; x++ {
				m[(z*dims[1]+y)*dims[0]+x] = 1
			}
		}
	}
	return m
}

// boxFromMask is the box, in the original image's voxels, of the largest 26-connected
// component of the coarse voxels where fg holds; ok false when there is none.
func boxFromMask(fg []bool, dims [3]int, scale [3]float64, orig [3]int) (taskspec.Box3D, bool) {
	n := len(fg)
	comp := make([]int32, n)
	var best int32
	bestSize := 0
	var bestLo, bestHi [3]int
	var queue []int
	id := int32(0)
	for s := range n {
		if !fg[s] || comp[s] != 0 {
			continue
		}
		id++
		comp[s] = id
		queue = append(queue[:0], s)
		lo := [3]int{math.MaxInt, math.MaxInt, math.MaxInt}
		hi := [3]int{-1, -1, -1}
		for q := 0; q < len(queue); q++ {
			i := queue[q]
			p := [3]int{i % dims[0], i / dims[0] % dims[1], i / (dims[0] * dims[1])}
			for a := range 3 {
				lo[a], hi[a] = min(lo[a], p[a]), max(hi[a], p[a])
			}
			for dz := -1; dz <= 1; dz++ {
				for dy := -1; dy <= 1; dy++ {
					for dx := -1; dx <= 1; dx++ {
						x, y, z := p[0]+dx, p[1]+dy, p[2]+dz
						if x < 0 || y < 0 || z < 0 || x >= dims[0] || y >= dims[1] || z >= dims[2] {
							continue
						}
						j := (z*dims[1]+y)*dims[0] + x
						if fg[j] && comp[j] == 0 {
							comp[j] = id
							queue = append(queue, j)
						}
					}
				}
			}
		}
		if len(queue) > bestSize {
			best, bestSize, bestLo, bestHi = id, len(queue), lo, hi
		}
	}
	if best == 0 {
		return taskspec.Box3D{}, false
	}
	var b taskspec.Box3D
	for a := range 3 {
		// Coarse voxel i covers original [i/scale, (i+1)/scale).
		lo := int(math.Floor(float64(bestLo[a]) / scale[a]))
		hi := int(math.Ceil(float64(bestHi[a]+1)/scale[a])) - 1
		lo, hi = max(lo, 0), min(hi, orig[a]-1)
		if hi < lo {
			hi = lo
		}
		b.Min[a], b.Size[a] = lo, hi-lo+1
	}
	return b, true
}

// iou3D is the intersection over union of two boxes of whole voxels.
func iou3D(a, b taskspec.Box3D) float64 {
	inter := 1.0
	for k := range 3 {
		lo := max(a.Min[k], b.Min[k])
		hi := min(a.Min[k]+a.Size[k], b.Min[k]+b.Size[k])
		if hi <= lo {
			return 0
		}
		inter *= float64(hi - lo)
	}
	va := float64(a.Size[0]) * float64(a.Size[1]) * float64(a.Size[2])
	vb := float64(b.Size[0]) * float64(b.Size[1]) * float64(b.Size[2])
	return inter / (va + vb - inter)
}
