package rexmle

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"math"
	"math/rand/v2"

	"golang.org/x/image/bmp"

	"amid/viewer/volume"
)

func init() { register("neurips-cellseg", genCellSeg) }

// cellExts are the image formats of the NeurIPS-CellSeg training set, used in turn.
var cellExts = []string{".png", ".bmp", ".tif", ".tiff"}

// genCellSeg writes NeurIPS-CellSeg: microscopy images train/images/cell_NNNNN.<ext> in
// mixed formats (PNG, BMP, TIFF as .tif and .tiff, grey or RGB, 8 or 16 bits) with
// instance label maps train/labels/cell_NNNNN_label.tiff (uint16: 0 background, 1..n one
// per cell), test/images and private/test/labels. Images are fluorescence (bright cells on
// black), brightfield (stained cells on a light background) or phase contrast (dark cells
// with bright halos); sizes vary per image.
func genCellSeg(d *dataset) error {
	lo, hi := 64, 97
	if d.opt.Real {
		lo, hi = 512, 1025
	}
	d.answerHeader = []string{"image_id", "image_path", "label_path"}
	for i := range d.n() {
		id := fmt.Sprintf("cell_%05d", i+1)
		rng := d.rng(i)
		w, h := lo+rng.IntN(hi-lo), lo+rng.IntN(hi-lo)
		ext := cellExts[i%len(cellExts)]
		img, lab, err := cellCase(rng, w, h, i%3, ext)
		if err != nil {
			return err
		}
		sp := d.caseSplit(i)
		imgRel := sp + "/images/" + id + ext
		if ext == ".bmp" {
			err = writeFile(d.pub, imgRel, img.([]byte))
		} else {
			err = writeImage(d.pub, imgRel, img.(*volume.Volume))
		}
		if err != nil {
			return err
		}
		root, rel := d.pub, "train/labels/"+id+"_label.tiff"
		if d.isTest[i] {
			root, rel = d.priv, "test/labels/"+id+"_label.tiff"
			d.answer(id, imgRel, rel)
		}
		if err := writeImage(root, rel, lab); err != nil {
			return err
		}
	}
	return nil
}

// cellCase draws one image of modality m (0 fluorescence, 1 brightfield, 2 phase
// contrast) and its instance labels. Cells stay 3 pixels clear of the border (the metric
// drops cells touching it) and do not overlap. The image is a volume, or BMP bytes when
// ext is .bmp.
func cellCase(rng *rand.Rand, w, h, m int, ext string) (any, *volume.Volume, error) {
	lab, err := image2D(volume.Uint16, w, h, 1)
	if err != nil {
		return nil, nil, err
	}
	ids := lab.Data.([]uint16)
	scale := math.Sqrt(float64(w*h)) / 80 // cell size grows a little with the image
	type cell struct{ x, y, r float64 }
	var cells []cell
	want := 4 + rng.IntN(12)
	for tries := 0; tries < 400 && len(cells) < want; tries++ {
		rx := uniform(rng, 4, 8) * math.Max(1, scale/2)
		ry := rx * uniform(rng, 0.6, 1)
		x, y := uniform(rng, rx+4, float64(w)-rx-4), uniform(rng, rx+4, float64(h)-rx-4)
		ok := true
		for _, c := range cells {
			if math.Hypot(c.x-x, c.y-y) < c.r+rx+2 {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		cells = append(cells, cell{x, y, rx})
		n := uint16(len(cells))
		fillPolygon(w, h, ellipsePoly(x, y, rx, ry, uniform(rng, 0, math.Pi), 0.08, 16, rng), func(k int) { ids[k] = n })
	}
	if len(cells) == 0 { // at least one cell, in the middle
		fillPolygon(w, h, ellipsePoly(float64(w)/2, float64(h)/2, 6, 5, 0, 0, 16, rng), func(k int) { ids[k] = 1 })
	}
	// Distance to the nearest background pixel, coarsely: a cell's rim is where a
	// 4-neighbour is not the same cell.
	rim := func(k int) bool {
		x, y := k%w, k/w
		for _, o := range [][2]int{{-1, 0}, {1, 0}, {0, -1}, {0, 1}} {
			xx, yy := x+o[0], y+o[1]
			if xx < 0 || yy < 0 || xx >= w || yy >= h || ids[yy*w+xx] != ids[k] {
				return true
			}
		}
		return false
	}
	grey := newPlane(w, h, 0)
	rgb := [3]*plane{newPlane(w, h, 0), newPlane(w, h, 0), newPlane(w, h, 0)}
	for k, c := range ids {
		switch m {
		case 0: // fluorescence
			if c != 0 {
				grey.pix[k] = 150
				if rim(k) {
					grey.pix[k] = 110
				}
			} else {
				grey.pix[k] = 12
			}
		case 1: // brightfield
			col := [3]float64{232, 226, 236}
			if c != 0 {
				col = [3]float64{168, 112, 176}
				if rim(k) {
					col = [3]float64{120, 70, 130}
				}
			}
			for j := range 3 {
				rgb[j].pix[k] = col[j]
			}
		case 2: // phase contrast: dark cell, bright halo just outside
			grey.pix[k] = 128
			if c != 0 {
				grey.pix[k] = 82
			}
		}
	}
	if m == 2 {
		halo := make([]float64, w*h)
		for k, c := range ids {
			if c != 0 && rim(k) {
				x, y := k%w, k/w
				for dy := -2; dy <= 2; dy++ {
					for dx := -2; dx <= 2; dx++ {
						xx, yy := x+dx, y+dy
						if xx >= 0 && yy >= 0 && xx < w && yy < h && ids[yy*w+xx] == 0 {
							halo[yy*w+xx] = 70
						}
					}
				}
			}
		}
		for k := range halo {
			grey.pix[k] += halo[k]
		}
	}
	planes := []*plane{grey}
	if m == 1 {
		planes = rgb[:]
	}
	for _, p := range planes {
		p.blur(0.8)
		for k := range p.pix {
			p.pix[k] += 5 * rng.NormFloat64()
		}
	}
	if ext == ".bmp" {
		b, err := encodeBMP(planes, w, h)
		return b, lab, err
	}
	t := volume.Uint8
	if m == 0 && ext == ".tif" { // 16-bit fluorescence, as many microscopes write
		t = volume.Uint16
		for k := range grey.pix {
			grey.pix[k] *= 180
		}
	}
	img, err := fromPlanes(t, planes...)
	return img, lab, err
}

// encodeBMP encodes 8-bit grey (one plane) or RGB (three planes) as BMP.
func encodeBMP(planes []*plane, w, h int) ([]byte, error) {
	clamp := func(f float64) uint8 { return uint8(math.Max(0, math.Min(255, math.Round(f)))) }
	var im image.Image
	if len(planes) == 1 {
		g := image.NewGray(image.Rect(0, 0, w, h))
		for k, f := range planes[0].pix {
			g.Pix[k] = clamp(f)
		}
		im = g
	} else {
		c := image.NewRGBA(image.Rect(0, 0, w, h))
		for k := range planes[0].pix {
			c.SetRGBA(k%w, k/w, color.RGBA{clamp(planes[0].pix[k]), clamp(planes[1].pix[k]), clamp(planes[2].pix[k]), 255})
		}
		im = c
	}
	var buf bytes.Buffer
	if err := bmp.Encode(&buf, im); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
