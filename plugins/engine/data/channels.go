package data

import (
	"fmt"

	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// GridTol is the geometry tolerance (mm, cosine units) within which a case's channel
// files must share a grid.
const GridTol = 1e-3

// ReadChannels reads a case's image: one file (which may hold several channels), or one
// single-channel file per channel on a common grid, stacked as float32 channels in order.
func ReadChannels(paths []string) (*volume.Volume, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("no image file")
	}
	first, err := imageio.Read(paths[0])
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", paths[0], err)
	}
	if len(paths) == 1 {
		return first, nil
	}
	C := len(paths)
	dims := first.Dims
	dims[3] = C
	if err := volume.CheckSize(dims, volume.Float32); err != nil {
		return nil, fmt.Errorf("image %s with %d channels: %w", paths[0], C, err)
	}
	out, err := volume.New(volume.Float32, dims)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", paths[0], err)
	}
	out.Spacing, out.Origin, out.Direction = first.Spacing, first.Origin, first.Direction
	dst := out.Data.([]float32)
	for c, p := range paths {
		v := first
		if c > 0 {
			if v, err = imageio.Read(p); err != nil {
				return nil, fmt.Errorf("image %s: %w", p, err)
			}
		}
		if v.Dims[3] != 1 {
			return nil, fmt.Errorf("image %s has %d channels; a case with several files takes one channel per file", p, v.Dims[3])
		}
		if !volume.SameGrid(first, v, GridTol) {
			return nil, fmt.Errorf("image %s is not on the grid of %s: %w", p, paths[0], volume.ErrGeometry)
		}
		for i, x := range v.Float32() {
			dst[i*C+c] = x
		}
	}
	return out, nil
}
