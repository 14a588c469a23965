package predict

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"amid/host/task"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// Align brings every case's channels onto its first channel's grid: a channel acquired on
// another grid (ISLES'22 FLAIR against DWI) is resampled by world position (trilinear) and
// written into dir; the case's image list then names that file. Predictions are made on
// the first channel's grid, which is the label's. It returns how many channels it moved.
// Files already in dir are reused, so a resumed run and a reproduction do the same work
// once. First, a channel that is a series chosen in a DICOM study folder gets a folder of
// its own under dir/series (task.Dataset.LinkSeries), so that everything after reads
// that series alone.
func Align(ctx context.Context, d *task.Dataset, dir string) (int, error) {
	if err := d.LinkSeries(filepath.Join(dir, "series")); err != nil {
		return 0, err
	}
	n := 0
	for _, split := range [][]task.Case{d.Train, d.Test} {
		for i := range split {
			c := &split[i]
			if len(c.Images) < 2 {
				continue
			}
			if err := ctx.Err(); err != nil {
				return n, err
			}
			var first *volume.Volume
			for k := 1; k < len(c.Images); k++ {
				out := filepath.Join(dir, fmt.Sprintf("%s_%04d.nii.gz", c.ID, k))
				if _, err := os.Stat(out); err == nil {
					c.Images[k] = out
					n++
					continue
				}
				if first == nil {
					v, err := imageio.Read(c.Images[0])
					if err != nil {
						return n, fmt.Errorf("case %s: %w", c.ID, err)
					}
					first = v
				}
				v, err := imageio.Read(c.Images[k])
				if err != nil {
					return n, fmt.Errorf("case %s: %w", c.ID, err)
				}
				if volume.SameGrid(first, v, 1e-3) {
					continue
				}
				rs, err := volume.ResampleTo(v, first, true)
				if err != nil {
					return n, fmt.Errorf("case %s: channel %s: %w", c.ID, c.Images[k], err)
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return n, err
				}
				if err := imageio.Write(out, rs); err != nil {
					return n, fmt.Errorf("case %s: %w", c.ID, err)
				}
				c.Images[k] = out
				n++
			}
		}
	}
	return n, nil
}
