package main

import (
	"cmp"
	"context"
	bin "encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"amid/plugins/engine/ckpt"
	"amid/plugins/internal/device"
	"amid/plugins/internal/training"
	"amid/plugins/protocol"
	"amid/plugins/sdk"
	"amid/plugins/taskspec"
)

// The box_transfer lane (laneTransfer) learns nothing by gradient: it keeps the training
// images on a small working grid with their boxes, and predicts a new image's boxes from
// the training images that look most like it. It is the fast learner of the boxes mode:
// ready in the seconds its images take to read, where the centernet lane needs thousands
// of steps, and made for tasks whose cases share an anatomy (the same structures at
// similar places: slices of one kind of scan, panoramic X-rays), where where a box lies
// decides its class as much as how it looks.
//
// Prediction (transfer):
//
//  1. The K training images nearest to the image (sum of squared differences on the
//     working grid, after prepare's normalisation) are its neighbours.
//  2. The neighbours' boxes are grouped: boxes of the same attributes whose IoU with the
//     group's first box (from the nearest neighbour that has one) is at least
//     transferIoU join it, one box of a neighbour at most.
//  3. Each group's box is a weighted mean of its members, with the weights of locally
//     linear embedding (Roweis and Saul 2000): the affine combination of the K neighbours
//     that best reconstructs the image's pixels in the group's region (the union of the
//     members' boxes grown by the margin), ridge-regularised, negative weights set to 0.
//     A neighbour between two others in shape (a slice between two slices, a jaw between
//     a smaller and a larger one) gets its box between theirs, not the nearer one's.
//  4. A group's score is the share of the weights held by the neighbours that have a
//     member: how much of the reconstruction says the object is there.
//
// The checkpoint keeps the atlas: the boxes in the training record, the images as the
// extra bytes (float32, little-endian, case after case).

// transferIoU is the least IoU a neighbour's box needs with a group's first box to join
// it: low, since the same structure's boxes in two neighbours can differ much in size
// while two objects of the same attributes in one image rarely overlap at all.
const transferIoU = 0.1

// Defaults of the box_transfer lane, fitted on make bench-quality's tuning detection task
// ch2-boxes (41 training and 21 test coronal slices of a human T1 at 1 mm on the 160-pixel
// grid; COCO AP on its test slices, README.md): neighbours 2, 4, 6, 8, 12 and margins 2,
// 4, 8, 16 pixels scored 0.546–0.651, best 0.636–0.651 at 8 or 12 neighbours with margins
// 8–16; 8 and 10 neighbours with margins of 24 or 32 scored 0.640–0.656, no clear gain
// for a wider comparison. The score as the members' weighted IoU with the fused box,
// rather than the weights' share, scored lower at 6 neighbours and more.
const (
	defaultNeighbours = 8
	defaultMargin     = 16   // working pixels around a group's boxes
	transferRidge     = 0.01 // the Gram matrix's ridge, a share of its mean diagonal
	// transferLongSide is the working grid's longest side: the atlas holds every training
	// image on it (4 bytes a pixel; 700 panoramic X-rays at 160 × 70 take 31 MB).
	transferLongSide = 160
)

// tbox is an atlas box in working pixels, with its class of each attribute of the spec.
type tbox struct {
	X     float64 `json:"x"`
	Y     float64 `json:"y"`
	W     float64 `json:"w"`
	H     float64 `json:"h"`
	Attrs []int   `json:"attrs,omitempty"`
}

// atlas is what the box_transfer lane keeps of its training cases: the working grid's
// size and each case's boxes (the record), and each case's image on that grid (the
// checkpoint's extra bytes).
type atlas struct {
	Dims  [2]int   `json:"dims"` // X, Y
	Cases [][]tbox `json:"cases"`
	imgs  [][]float32
}

// transferConfig checks a box_transfer configuration and fills its defaults.
func transferConfig(c config) (config, error) {
	if c.Neighbours == 0 {
		c.Neighbours = defaultNeighbours
	}
	if c.Margin == 0 {
		c.Margin = defaultMargin
	}
	if c.MaxDets == 0 {
		c.MaxDets = defaultMaxDets
	}
	c.Steps, c.Epoch, c.Report, c.Batch = 1, 1, 1, 1
	switch {
	case c.Size[0] != 1 || slices.ContainsFunc(c.Size[1:], func(v int) bool { return v < 1 || v > 4096 }):
		return c, fmt.Errorf("detection configuration: box_transfer's size %v must be 1, then 1 to 4096 pixels on each side", c.Size)
	case c.Neighbours < 1 || c.Neighbours > 64:
		return c, fmt.Errorf("detection configuration: neighbours %d is not between 1 and 64", c.Neighbours)
	case c.Margin < 0 || c.Margin > 1024:
		return c, fmt.Errorf("detection configuration: margin %d is not between 0 and 1024", c.Margin)
	case c.MaxDets < 1:
		return c, fmt.Errorf("detection configuration: max_detections must be positive")
	case !(c.Threshold >= 0 && c.Threshold <= 1):
		return c, fmt.Errorf("detection configuration: threshold must be in [0, 1]")
	}
	return c, nil
}

// fitTransfer reads every training case onto the working grid and returns the atlas.
func fitTransfer(ctx context.Context, cases []protocol.Case, s *taskspec.Spec, c config) (*atlas, error) {
	ld, err := newLoader2D(cases, s, modeBoxes, c, 1)
	if err != nil {
		return nil, err
	}
	g := c.sizeXYZ()
	a := &atlas{Dims: [2]int{g[0], g[1]}}
	for _, it := range ld.items {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := ld.load(it); err != nil {
			return nil, err
		}
		var bs []tbox
		for _, b := range it.boxs {
			bs = append(bs, tbox{X: b.x, Y: b.y, W: b.w, H: b.h, Attrs: b.attrs})
		}
		a.Cases = append(a.Cases, bs)
		a.imgs = append(a.imgs, it.img.data)
		it.img = nil // the atlas holds it now
	}
	return a, nil
}

// encode is the atlas's images as the checkpoint's extra bytes.
func (a *atlas) encode() []byte {
	out := make([]byte, 0, 4*len(a.imgs)*a.Dims[0]*a.Dims[1])
	for _, im := range a.imgs {
		for _, v := range im {
			out = bin.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return out
}

// decode reads the atlas's images from a checkpoint's extra bytes, checking them against
// the record: one image of the grid's size per case, finite values.
func (a *atlas) decode(b []byte, attrs int) error {
	S := a.Dims[0] * a.Dims[1]
	switch {
	case a.Dims[0] < 1 || a.Dims[1] < 1 || a.Dims[0] > 4096 || a.Dims[1] > 4096:
		return fmt.Errorf("atlas grid %v", a.Dims)
	case len(a.Cases) == 0:
		return fmt.Errorf("atlas without cases")
	case len(b) != 4*S*len(a.Cases):
		return fmt.Errorf("atlas of %d cases of %d × %d pixels in %d bytes", len(a.Cases), a.Dims[0], a.Dims[1], len(b))
	}
	for i, bs := range a.Cases {
		for _, x := range bs {
			if !(x.W > 0 && x.H > 0) || math.IsInf(x.X+x.Y+x.W+x.H, 0) || len(x.Attrs) != attrs {
				return fmt.Errorf("atlas case %d: box %+v", i, x)
			}
		}
	}
	a.imgs = make([][]float32, len(a.Cases))
	for i := range a.imgs {
		im := make([]float32, S)
		for j := range im {
			v := math.Float32frombits(bin.LittleEndian.Uint32(b[4*(i*S+j):]))
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("atlas case %d: pixel %d is %v", i, j, v)
			}
			im[j] = v
		}
		a.imgs[i] = im
	}
	return nil
}

// scored is a predicted box in working pixels and its score.
type scored struct {
	tbox
	score float64
}

// transfer predicts the boxes of an image on the atlas's grid (img, prepared as the
// atlas's images were) from its k nearest atlas images, in working pixels, highest score
// first.
func (a *atlas) transfer(img []float32, k, margin int) []scored {
	type near struct {
		i int
		d float64
	}
	nb := make([]near, len(a.imgs))
	for i, im := range a.imgs {
		var d float64
		for j, v := range im {
			e := float64(v - img[j])
			d += e * e
		}
		nb[i] = near{i, d}
	}
	slices.SortStableFunc(nb, func(x, y near) int { return cmp.Compare(x.d, y.d) })
	nb = nb[:min(k, len(nb))]
	// Groups of the neighbours' boxes, nearest neighbour first.
	type group struct {
		key     string
		seed    tbox
		members []tbox // by neighbour; W == 0: none
	}
	var groups []*group
	for n, x := range nb {
		for _, b := range a.Cases[x.i] {
			key := attrKey(b.Attrs)
			var best *group
			bestIoU := transferIoU
			for _, g := range groups {
				if g.key != key || g.members[n].W > 0 {
					continue
				}
				if v := tboxIoU(g.seed, b); v >= bestIoU {
					best, bestIoU = g, v
				}
			}
			if best == nil {
				best = &group{key: key, seed: b, members: make([]tbox, len(nb))}
				groups = append(groups, best)
			}
			best.members[n] = b
		}
	}
	var out []scored
	for _, g := range groups {
		x0, y0, x1, y1 := a.Dims[0], a.Dims[1], 0, 0
		for _, m := range g.members {
			if m.W > 0 {
				x0, y0 = min(x0, int(math.Floor(m.X))-margin), min(y0, int(math.Floor(m.Y))-margin)
				x1, y1 = max(x1, int(math.Ceil(m.X+m.W))+margin), max(y1, int(math.Ceil(m.Y+m.H))+margin)
			}
		}
		x0, y0, x1, y1 = max(x0, 0), max(y0, 0), min(x1, a.Dims[0]), min(y1, a.Dims[1])
		w := make([]float64, len(nb))
		for n := range nb {
			w[n] = 1
		}
		if x1 > x0 && y1 > y0 {
			w = lleWeights(img, a.Dims[0], x0, y0, x1, y1, func(n int) []float32 { return a.imgs[nb[n].i] }, len(nb))
		}
		var fused tbox
		var share float64
		for n, m := range g.members {
			if m.W > 0 {
				fused.X += w[n] * m.X
				fused.Y += w[n] * m.Y
				fused.W += w[n] * m.W
				fused.H += w[n] * m.H
				share += w[n]
			}
		}
		if !(share > 0) {
			continue // only neighbours the reconstruction gave no weight hold it
		}
		fused.X, fused.Y, fused.W, fused.H = fused.X/share, fused.Y/share, fused.W/share, fused.H/share
		fused.Attrs = g.seed.Attrs
		out = append(out, scored{fused, share})
	}
	slices.SortStableFunc(out, func(x, y scored) int { return cmp.Compare(y.score, x.score) })
	return out
}

// transferBoxes are the box_transfer lane's boxes of an image prepared onto the atlas's
// grid (p) whose original size is orig: in the image's pixels, clipped to it, the scores
// calibrated, those under the threshold left out, at most max_detections.
func (d *detector) transferBoxes(p *planes, orig [2]int) []taskspec.Box {
	c := d.s.Config
	var out []taskspec.Box
	for _, sb := range d.atlas.transfer(p.data, c.Neighbours, c.Margin) {
		x0, y0 := max(0, sb.X/p.scale[0]), max(0, sb.Y/p.scale[1])
		x1, y1 := min(float64(orig[0]), (sb.X+sb.W)/p.scale[0]), min(float64(orig[1]), (sb.Y+sb.H)/p.scale[1])
		score := d.s.calibrate(logit(sb.score))
		if !(x1 > x0 && y1 > y0) || score < d.s.Threshold {
			continue
		}
		b := taskspec.Box{X: x0, Y: y0, W: x1 - x0, H: y1 - y0, Score: score}
		if len(d.s.Spec.Attributes) > 0 {
			b.Attrs = map[string]int{}
			for i, at := range d.s.Spec.Attributes {
				b.Attrs[at.Name] = sb.Attrs[i]
			}
		}
		out = append(out, b)
		if len(out) == c.MaxDets {
			break
		}
	}
	return out
}

// lleWeights are the weights, summing to 1, of the affine combination of k images
// (image(n), on a grid x0 … x1 × y0 … y1 of a plane dx pixels wide) that best
// reconstructs img there, with transferRidge's ridge; negative weights are set to 0 and
// the rest renormalised (uniform weights when none is left).
func lleWeights(img []float32, dx, x0, y0, x1, y1 int, image func(n int) []float32, k int) []float64 {
	G := make([][]float64, k)
	for p := range k {
		G[p] = make([]float64, k+1)
	}
	for p := range k {
		ip := image(p)
		for q := p; q < k; q++ {
			iq := image(q)
			var s float64
			for y := y0; y < y1; y++ {
				for x := x0; x < x1; x++ {
					j := x + dx*y
					s += float64(ip[j]-img[j]) * float64(iq[j]-img[j])
				}
			}
			G[p][q], G[q][p] = s, s
		}
	}
	var tr float64
	for p := range k {
		tr += G[p][p]
	}
	uniform := func() []float64 {
		w := make([]float64, k)
		for p := range w {
			w[p] = 1 / float64(k)
		}
		return w
	}
	if !(tr > 0) {
		return uniform() // the image equals every neighbour here
	}
	for p := range k {
		G[p][p] += transferRidge * tr / float64(k)
		G[p][k] = 1
	}
	w, ok := solve(G)
	if !ok {
		return uniform()
	}
	var sum float64
	for _, v := range w {
		sum += v
	}
	var pos float64
	for p := range w {
		w[p] /= sum
		if !(w[p] > 0) {
			w[p] = 0
		}
		pos += w[p]
	}
	if !(pos > 0) {
		return uniform()
	}
	for p := range w {
		w[p] /= pos
	}
	return w
}

// solve solves the k × k system whose rows are G's first k columns and right-hand side
// its last, by Gaussian elimination with partial pivoting; ok is false when it is
// singular.
func solve(G [][]float64) ([]float64, bool) {
	k := len(G)
	for c := range k {
		p := c
		for r := c + 1; r < k; r++ {
			if math.Abs(G[r][c]) > math.Abs(G[p][c]) {
				p = r
			}
		}
		G[c], G[p] = G[p], G[c]
		if G[c][c] == 0 {
			return nil, false
		}
		for r := range k {
			if r == c {
				continue
			}
			f := G[r][c] / G[c][c]
			for j := c; j <= k; j++ {
				G[r][j] -= f * G[c][j]
			}
		}
	}
	x := make([]float64, k)
	for r := range k {
		x[r] = G[r][k] / G[r][r]
		if math.IsNaN(x[r]) || math.IsInf(x[r], 0) {
			return nil, false
		}
	}
	return x, true
}

// attrKey is a box's attribute classes as a map key.
func attrKey(attrs []int) string {
	var b strings.Builder
	for _, v := range attrs {
		b.WriteString(strconv.Itoa(v))
		b.WriteByte(',')
	}
	return b.String()
}

// tboxIoU is the IoU of two atlas boxes.
func tboxIoU(a, b tbox) float64 {
	return boxIoU(taskspec.Box{X: a.X, Y: a.Y, W: a.W, H: a.H}, taskspec.Box{X: b.X, Y: b.Y, W: b.W, H: b.H})
}

// finishTransfer builds the box_transfer lane's atlas, writes its checkpoint and scores
// it on the validation cases.
func finishTransfer(ctx context.Context, req *protocol.TrainRequest, rec saved, send func(*protocol.Progress) error) (*protocol.TrainResult, error) {
	start := time.Now()
	a, err := fitTransfer(ctx, req.Train, rec.Spec, rec.Config)
	if err != nil {
		return nil, fmt.Errorf("detection train: %w", err)
	}
	rec.Atlas = a
	extra := a.encode()
	p := filepath.Join(req.WorkDir, training.Final)
	if err := ckpt.Save(p, ckpt.Checkpoint{Train: rec, Epoch: 1, Step: 1, Model: emptyModel{}, Extra: extra}); err != nil {
		return nil, fmt.Errorf("detection train: %w", err)
	}
	if err := send(&protocol.Progress{Step: 1, TotalSteps: 1, Epoch: 1, Losses: map[string]float64{"transfer": 0}, Checkpoint: p,
		Message: fmt.Sprintf("box transfer: %d training images on a %d × %d grid in %v", len(a.Cases), a.Dims[0], a.Dims[1], time.Since(start).Round(time.Millisecond))}); err != nil {
		return nil, err
	}
	val, err := tune(ctx, p, req, &rec, device.ToLog)
	if err != nil {
		return nil, fmt.Errorf("detection train: validation: %w", err)
	}
	// The calibration chosen on validation goes into the checkpoint.
	if err := ckpt.Save(p, ckpt.Checkpoint{Train: rec, Epoch: 1, Step: 1, Model: emptyModel{}, Extra: extra}); err != nil {
		return nil, fmt.Errorf("detection train: %w", err)
	}
	return sdk.Result(p, 1, val)
}
