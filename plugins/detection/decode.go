package main

import (
	"math"
	"slices"

	"amid/plugins/taskspec"
)

// peak is a local maximum of a heatmap: its pixel and its value.
type peak struct {
	cell  int
	value float32
}

// peaks returns the pixels of a w×h map that are at least thr and no lower than any of
// their 8 neighbours (CenterNet's 3×3 max-pool), highest first (ties: lower index first),
// at most limit of them.
func peaks(m []float32, w, h int, thr float32, limit int) []peak {
	var out []peak
	for y := range h {
		for x := range w {
			v := m[y*w+x]
			if v < thr {
				continue
			}
			top := true
			for ny := max(0, y-1); ny <= min(h-1, y+1) && top; ny++ {
				for nx := max(0, x-1); nx <= min(w-1, x+1); nx++ {
					if m[ny*w+nx] > v {
						top = false
						break
					}
				}
			}
			if top {
				out = append(out, peak{y*w + x, v})
			}
		}
	}
	slices.SortStableFunc(out, func(a, b peak) int {
		switch {
		case a.value > b.value:
			return -1
		case a.value < b.value:
			return 1
		}
		return 0
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// boxIoU is the intersection over union of two boxes.
func boxIoU(a, b taskspec.Box) float64 {
	w := math.Min(a.X+a.W, b.X+b.W) - math.Max(a.X, b.X)
	h := math.Min(a.Y+a.H, b.Y+b.H) - math.Max(a.Y, b.Y)
	if w <= 0 || h <= 0 {
		return 0
	}
	i := w * h
	return i / (a.W*a.H + b.W*b.H - i)
}

// nms keeps boxes (sorted by score, highest first) that overlap no kept box by more than
// iou, at most limit of them.
func nms(boxes []taskspec.Box, iou float64, limit int) []taskspec.Box {
	var keep []taskspec.Box
	for _, b := range boxes {
		if len(keep) == limit {
			break
		}
		ok := true
		for _, k := range keep {
			if boxIoU(b, k) > iou {
				ok = false
				break
			}
		}
		if ok {
			keep = append(keep, b)
		}
	}
	return keep
}

// decodeBoxes turns centernet head outputs (raw values, K planes of w×h working pixels)
// into boxes in the original image's pixels: peaks of the heatmap probability above thr,
// offset and size read at the peak, each attribute's most likely class, the score
// calibrated by calib, non-maximum suppression at nmsIoU, at most limit boxes.
func decodeBoxes(out []float32, w, h int, scale [2]float64, orig [2]int, s *saved) []taskspec.Box {
	S := w * h
	heat := make([]float32, S)
	for i := range heat {
		heat[i] = float32(sigmoid(float64(out[chHeat*S+i])))
	}
	c := s.Config
	pk := peaks(heat, w, h, float32(s.Threshold), 4*c.MaxDets)
	var boxes []taskspec.Box
	for _, p := range pk {
		ix, iy := p.cell%w, p.cell/w
		cx := float64(ix) + float64(out[(chOffset)*S+p.cell])
		cy := float64(iy) + float64(out[(chOffset+1)*S+p.cell])
		sw := clampAbs(float64(out[chSize*S+p.cell]), sizeClamp)
		sh := clampAbs(float64(out[(chSize+1)*S+p.cell]), sizeClamp)
		bw, bh := s.RefSize[0]*math.Exp(sw), s.RefSize[1]*math.Exp(sh)
		// Back to original pixels, clipped to the image.
		x0, y0 := max(0, (cx-bw/2)/scale[0]), max(0, (cy-bh/2)/scale[1])
		x1, y1 := min(float64(orig[0]), (cx+bw/2)/scale[0]), min(float64(orig[1]), (cy+bh/2)/scale[1])
		if !(x1 > x0 && y1 > y0) {
			continue
		}
		b := taskspec.Box{X: x0, Y: y0, W: x1 - x0, H: y1 - y0, Score: s.calibrate(out[chHeat*S+p.cell])}
		if len(s.Spec.Attributes) > 0 {
			b.Attrs = map[string]int{}
			ch := chAttrs
			for _, at := range s.Spec.Attributes {
				best := 0
				for k := range at.Classes {
					if out[(ch+k)*S+p.cell] > out[(ch+best)*S+p.cell] {
						best = k
					}
				}
				b.Attrs[at.Name] = best
				ch += len(at.Classes)
			}
		}
		boxes = append(boxes, b)
	}
	slices.SortStableFunc(boxes, func(a, b taskspec.Box) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return nms(boxes, c.NMS, c.MaxDets)
}

func clampAbs(v, m float64) float64 { return min(max(v, -m), m) }

// decodePoints turns the points head's class probabilities (K planes of w×h working
// pixels) into points in the original image's pixels: peaks of the highest class
// probability above thr, each at least minDist working pixels from a higher one, with the
// class of highest probability there.
func decodePoints(prob []float32, K, w, h int, scale [2]float64, classes []string, thr float64, minDist float64, limit int) []taskspec.Point {
	S := w * h
	top := make([]float32, S)
	for i := range top {
		for k := range K {
			top[i] = max(top[i], prob[k*S+i])
		}
	}
	pk := peaks(top, w, h, float32(thr), max(limit, 1)*4)
	var kept []peak
	// A grid of cells of minDist pixels finds the kept peaks near a candidate.
	cell := max(1, int(math.Ceil(minDist)))
	gw := (w + cell - 1) / cell
	grid := map[int][]int{}
	d2 := minDist * minDist
	var out []taskspec.Point
	for _, p := range pk {
		if len(out) == limit {
			break
		}
		x, y := p.cell%w, p.cell/w
		gx, gy := x/cell, y/cell
		near := false
		for ny := gy - 1; ny <= gy+1 && !near; ny++ {
			for nx := gx - 1; nx <= gx+1 && !near; nx++ {
				if nx < 0 || ny < 0 {
					continue
				}
				for _, j := range grid[ny*gw+nx] {
					q := kept[j]
					dx, dy := float64(q.cell%w-x), float64(q.cell/w-y)
					if dx*dx+dy*dy < d2 {
						near = true
						break
					}
				}
			}
		}
		if near {
			continue
		}
		grid[gy*gw+gx] = append(grid[gy*gw+gx], len(kept))
		kept = append(kept, p)
		best := 0
		for k := range K {
			if prob[k*S+p.cell] > prob[best*S+p.cell] {
				best = k
			}
		}
		out = append(out, taskspec.Point{X: (float64(x) + 0.5) / scale[0], Y: (float64(y) + 0.5) / scale[1], Class: classes[best], Score: float64(p.value)})
	}
	return out
}
