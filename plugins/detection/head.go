package main

import (
	"math"

	"amid/plugins/engine"
	"amid/plugins/taskspec"
)

// Channels of the centernet head: the centre heatmap, the centre's offset inside its
// pixel (x, y), the log of the box size over the training boxes' mean (w, h), then the
// logits of each attribute's classes in the spec's order.
const (
	chHeat    = 0
	chOffset  = 1
	chSize    = 3
	chAttrs   = 5
	sizeClamp = 5 // |log size ratio| kept below this when decoding (e⁵ ≈ 148×)
)

// headChannels is the number of output channels of mode's head.
func headChannels(mode string, s *taskspec.Spec) int {
	switch mode {
	case modeBoxes:
		n := chAttrs
		for _, a := range s.Attributes {
			n += len(a.Classes)
		}
		return n
	case modePoints:
		return len(s.Points)
	}
	return 2 // box3d_seg: background and box
}

// object is one box's regression and class targets at its centre pixel.
type object struct {
	cell  int        // index of the centre pixel in the plane
	off   [2]float32 // centre offset inside the pixel, in [0, 1)
	size  [2]float32 // log(w/refW), log(h/refH)
	attrs []int      // class of each attribute
}

// target is one sample's targets: heatmaps (K planes) and, for boxes, the objects.
type target struct {
	heat []float32
	objs []object
	nbr  [][]int // per object: the centre pixel and its 8 neighbours inside the plane
}

// Loss weights of the centernet head (CenterNet: offset 1; the size is a log ratio here,
// of the offset's order, so 1 too; attributes 1 each).
const (
	wOffset = 1
	wSize   = 1
	wAttr   = 1
)

// boxLoss is the centernet head's loss for one sample: focal loss on the heatmap, L1 on
// the offset and log size at each centre (mean over objects), and softmax cross-entropy
// of each attribute over each centre's 3×3 neighbourhood (mean over pixels). groups are
// the attributes' class counts. It writes the gradient into dx.
func boxLoss(x, dx []float32, t *target, S int, groups []int) float64 {
	clear(dx)
	loss := engine.FocalLoss(x[chHeat*S:(chHeat+1)*S], t.heat, dx[chHeat*S:(chHeat+1)*S])
	if len(t.objs) == 0 {
		return loss
	}
	k := 1 / float64(len(t.objs))
	for _, o := range t.objs {
		for a := range 2 {
			for _, r := range []struct {
				ch  int
				w   float64
				val float32
			}{{chOffset + a, wOffset, o.off[a]}, {chSize + a, wSize, o.size[a]}} {
				i := r.ch*S + o.cell
				d := float64(x[i] - r.val)
				loss += r.w * k * math.Abs(d)
				if d > 0 {
					dx[i] += float32(r.w * k)
				} else if d < 0 {
					dx[i] -= float32(r.w * k)
				}
			}
		}
	}
	var n int
	for _, nb := range t.nbr {
		n += len(nb)
	}
	kc := wAttr / float64(n)
	var p [64]float64
	for j, o := range t.objs {
		ch := chAttrs
		for g, C := range groups {
			for _, cell := range t.nbr[j] {
				m := math.Inf(-1)
				for c := range C {
					m = math.Max(m, float64(x[(ch+c)*S+cell]))
				}
				var z float64
				for c := range C {
					p[c] = math.Exp(float64(x[(ch+c)*S+cell]) - m)
					z += p[c]
				}
				y := o.attrs[g]
				loss += kc * (math.Log(z) - (float64(x[(ch+y)*S+cell]) - m))
				for c := range C {
					g := p[c] / z
					if c == y {
						g--
					}
					dx[(ch+c)*S+cell] += float32(kc * g)
				}
			}
			ch += C
		}
	}
	return loss
}

// render draws an elliptic Gaussian of σ (sx, sy) centred on pixel (cx, cy) into the
// plane (w×h), keeping the maximum with what is there, truncated at 3σ, exactly 1 at the
// centre.
func render(plane []float32, w, h, cx, cy int, sx, sy float64) {
	rx, ry := int(math.Ceil(3*sx)), int(math.Ceil(3*sy))
	for y := max(0, cy-ry); y <= min(h-1, cy+ry); y++ {
		dy := float64(y - cy)
		for x := max(0, cx-rx); x <= min(w-1, cx+rx); x++ {
			dx := float64(x - cx)
			v := float32(math.Exp(-dx*dx/(2*sx*sx) - dy*dy/(2*sy*sy)))
			if x == cx && y == cy {
				v = 1
			}
			i := y*w + x
			plane[i] = max(plane[i], v)
		}
	}
}

// neighbours are the pixel cell and its 8 neighbours inside a w×h plane.
func neighbours(cell, w, h int) []int {
	cx, cy := cell%w, cell/w
	var out []int
	for y := max(0, cy-1); y <= min(h-1, cy+1); y++ {
		for x := max(0, cx-1); x <= min(w-1, cx+1); x++ {
			out = append(out, y*w+x)
		}
	}
	return out
}

// sigmoid is the logistic function.
func sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
