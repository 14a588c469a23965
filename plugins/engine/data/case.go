package data

import (
	"fmt"
	"math"

	"amid/viewer/volume"
)

// maxFgIndex is the most foreground positions kept per class and case (evenly strided),
// as nnU-Net keeps 10 000 sampled locations per class; here more, since they cost 4 bytes.
const maxFgIndex = 1 << 16

// Case is one training case in the engine's layout.
type Case struct {
	Name  string
	Dims  [3]int    // X, Y, Z
	C     int       // channels
	Image []float32 // C planes of X·Y·Z values, X fastest
	Label []int32   // X·Y·Z class indices 0..K-1; nil for an unlabelled case
	Min   []float32 // per-channel minimum of Image, the padding value
	fg    [][]int32 // per class (index 0 unused): voxel positions, evenly strided
}

// Bytes is the memory the case holds.
func (c *Case) Bytes() int64 {
	n := int64(len(c.Image)+len(c.Label)) * 4
	for _, f := range c.fg {
		n += int64(len(f)) * 4
	}
	return n
}

// FgClasses lists the classes (1..K-1) present in the label map.
func (c *Case) FgClasses() []int {
	var out []int
	for k, f := range c.fg {
		if k > 0 && len(f) > 0 {
			out = append(out, k)
		}
	}
	return out
}

// NewCase normalises img with n and maps lab's values to class indices through classes
// (classes[k] is the task's value for class k; classes[0] is background). lab may be nil;
// float label maps are accepted when every value is one of classes.
// NaN or infinite voxels, a label grid different from the image's, and label values outside
// classes are errors naming the case; those of the label map wrap ErrLabel, so that a
// caller can name the label's file.
func NewCase(name string, img, lab *volume.Volume, n Norm, classes []int) (*Case, error) {
	if err := img.Validate(); err != nil {
		return nil, fmt.Errorf("case %s: image: %w", name, err)
	}
	c := &Case{Name: name, Dims: [3]int{img.Dims[0], img.Dims[1], img.Dims[2]}, C: img.Dims[3]}
	var err error
	if c.Image, err = n.Apply(img); err != nil {
		return nil, fmt.Errorf("case %s: %w", name, err)
	}
	S := img.NumVoxels()
	c.C = len(c.Image) / S // with the position planes of Norm.Coords
	c.Min = make([]float32, c.C)
	for ch := range c.C {
		m := float32(math.Inf(1))
		for _, v := range c.Image[ch*S : (ch+1)*S] {
			m = min(m, v)
		}
		c.Min[ch] = m
	}
	if lab == nil {
		return c, nil
	}
	if err := lab.Validate(); err != nil {
		return nil, fmt.Errorf("case %s: %w: %w", name, ErrLabel, err)
	}
	if lab.Dims[3] != 1 || !volume.SameGrid(img, lab, 1e-3) {
		return nil, fmt.Errorf("case %s: %w: its grid %v does not match the image's %v: %w", name, ErrLabel, lab.Dims, img.Dims, volume.ErrGeometry)
	}
	if len(classes) == 0 {
		return nil, fmt.Errorf("case %s: no classes given", name)
	}
	idx := make(map[int]int32, len(classes))
	for k, v := range classes {
		idx[v] = int32(k)
	}
	c.Label = make([]int32, S)
	counts := make([]int, len(classes))
	last, lastK := math.NaN(), int32(0)
	for i := range c.Label {
		v := lab.AtIndex(i)
		if v != last {
			k, ok := idx[int(v)]
			if !ok || v != math.Trunc(v) {
				return nil, fmt.Errorf("case %s: %w: label value %v at voxel %d is not one of the task's labels %v", name, ErrLabel, v, i, classes)
			}
			last, lastK = v, k
		}
		c.Label[i] = lastK
		counts[lastK]++
	}
	c.fg = make([][]int32, len(classes))
	for k := 1; k < len(classes); k++ {
		if counts[k] == 0 {
			continue
		}
		step := (counts[k] + maxFgIndex - 1) / maxFgIndex
		f := make([]int32, 0, (counts[k]+step-1)/step)
		j := 0
		for i, l := range c.Label {
			if l == int32(k) {
				if j%step == 0 {
					f = append(f, int32(i))
				}
				j++
			}
		}
		c.fg[k] = f
	}
	return c, nil
}
