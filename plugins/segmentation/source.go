package main

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"amid/plugins/engine/data"
	"amid/plugins/engine/infer"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// conform gives an image want channels, for datasets that mix grayscale and colour
// images (NeurIPS-CellSeg): one channel is repeated into three, three or four (RGB, RGBA)
// are averaged into one, RGBA loses its alpha for three. Other changes are an error.
func conform(v *volume.Volume, want int, name string) (*volume.Volume, error) {
	have := v.Dims[3]
	if want <= 0 || have == want {
		return v, nil
	}
	if !(have == 1 && want == 3) && !((have == 3 || have == 4) && want <= 3) {
		return nil, fmt.Errorf("image %s has %d channels; the model takes %d", name, have, want)
	}
	dims := v.Dims
	dims[3] = want
	out, err := volume.New(volume.Float32, dims)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", name, err)
	}
	out.Spacing, out.Origin, out.Direction = v.Spacing, v.Origin, v.Direction
	src, dst := v.Float32(), out.Data.([]float32)
	for i := range v.NumVoxels() {
		px := src[i*have : i*have+have]
		switch {
		case have == 1:
			for c := range want {
				dst[i*want+c] = px[0]
			}
		case want == 1:
			dst[i] = (px[0] + px[1] + px[2]) / 3
		default:
			copy(dst[i*want:i*want+want], px[:want])
		}
	}
	return out, nil
}

// caseSource loads a case from its image files and label for the data loader, as
// data.FileSource does for one file.
type caseSource struct {
	images  []string
	label   string
	spacing [3]float64 // X, Y, Z; zero keeps the grid
	norm    data.Norm
	classes []int
	// instances: the label holds instance ids, turned into background, interior and
	// boundary classes (infer.InstanceClasses).
	instances bool
	// channels the model takes; the image is conformed to it (0: as read).
	channels int
	// prior is a cascade's low-resolution segmentation (class indices) on the image's
	// grid; the case gets its one-hot planes after the image's channels (cascade.go).
	prior *volume.Volume
}

func (s *caseSource) Name() string { return s.images[0] }

func (s *caseSource) Load() (*data.Case, error) {
	c, _, err := s.load()
	return c, err
}

// load is Load, with the spacing of the grid the case is on.
func (s *caseSource) load() (*data.Case, [3]float64, error) {
	none := [3]float64{}
	img, err := data.ReadChannels(s.images)
	if err != nil {
		return nil, none, err
	}
	if img, err = conform(img, s.channels, s.images[0]); err != nil {
		return nil, none, err
	}
	var lab *volume.Volume
	if s.label != "" {
		if lab, err = imageio.Read(s.label); err != nil {
			return nil, none, fmt.Errorf("label %s: %w", s.label, err)
		}
	}
	if s.spacing != [3]float64{} {
		if img, err = data.Resample(img, s.spacing, false); err != nil {
			return nil, none, fmt.Errorf("%s: %w", s.images[0], err)
		}
		if lab != nil {
			if lab, err = data.Resample(lab, s.spacing, true); err != nil {
				return nil, none, fmt.Errorf("%s: %w", s.label, err)
			}
		}
	}
	if s.instances && lab != nil {
		if lab, err = instanceClasses(lab); err != nil {
			return nil, none, fmt.Errorf("label %s: %w", s.label, err)
		}
	}
	c, err := data.NewCase(s.images[0], img, lab, s.norm, s.classes)
	if errors.Is(err, data.ErrLabel) {
		return nil, none, fmt.Errorf("label %s: %w", s.label, err)
	}
	if err != nil || s.prior == nil {
		return c, img.Spacing, err
	}
	oh, dims, err := priorPlanes(s.prior, s.spacing, len(s.classes))
	if err != nil {
		return nil, none, fmt.Errorf("%s: low-resolution segmentation: %w", s.images[0], err)
	}
	if dims != c.Dims {
		return nil, none, fmt.Errorf("%s: low-resolution segmentation on a grid of %v, the image %v", s.images[0], dims, c.Dims)
	}
	n, at := len(oh)/(len(s.classes)-1), img.Dims[3]
	c.Image = insertPlanes(c.Image, n, at, oh)
	c.Min = slices.Insert(c.Min, at, make([]float32, len(s.classes)-1)...)
	c.C += len(s.classes) - 1
	return c, img.Spacing, nil
}

// instanceClasses is the class map (0 background, 1 interior, 2 boundary) of an instance
// map on the same grid.
func instanceClasses(lab *volume.Volume) (*volume.Volume, error) {
	ids, err := instanceIDs(lab)
	if err != nil {
		return nil, err
	}
	out, err := volume.New(volume.Uint8, lab.Dims)
	if err != nil {
		return nil, err
	}
	out.Spacing, out.Origin, out.Direction = lab.Spacing, lab.Origin, lab.Direction
	px := out.Data.([]uint8)
	for i, k := range infer.InstanceClasses(ids, [3]int{lab.Dims[0], lab.Dims[1], lab.Dims[2]}) {
		px[i] = uint8(k)
	}
	return out, nil
}

// instanceIDs reads a single-channel instance map: non-negative integer ids below 2^31.
func instanceIDs(lab *volume.Volume) ([]int32, error) {
	if lab.Dims[3] != 1 {
		return nil, fmt.Errorf("an instance map has one channel, not %d", lab.Dims[3])
	}
	ids := make([]int32, lab.NumVoxels())
	for i := range ids {
		v := lab.AtIndex(i)
		if !(v >= 0 && v < math.MaxInt32) || v != math.Trunc(v) {
			return nil, fmt.Errorf("instance id %v at voxel %d is not an integer from 0 to %d", v, i, math.MaxInt32-1)
		}
		ids[i] = int32(v)
	}
	return ids, nil
}
