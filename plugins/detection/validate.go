package main

import (
	"context"
	"fmt"
	"math"
	"slices"

	"amid/plugins/engine"
	"amid/plugins/internal/device"
	"amid/plugins/metrics"
	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// Validation constants.
const (
	tuneCases  = 8    // training cases that tune thresholds when there are no validation cases
	lowThr     = 0.01 // the boxes' heatmap threshold while fitting calibration
	calibIoU   = 0.5  // IoU at which a box counts as found when fitting calibration
	pointsLow  = 0.05 // lowest points threshold tried
	pointsStep = 0.05 // step of the points thresholds tried
)

// tune predicts the validation cases (or, without them, the first training cases) with
// the checkpoint at path, chooses the points threshold and the boxes' score calibration,
// records them in rec and returns the validation metrics (none without validation cases).
func tune(ctx context.Context, path string, req *protocol.TrainRequest, rec *saved, log device.Log) (map[string]float64, error) {
	cases := req.Validation
	if len(cases) == 0 {
		cases = req.Train[:min(len(req.Train), tuneCases)]
	}
	c := rec.Config
	var preds, refs []*taskspec.Annotation
	_, err := device.Predict(0, log, func(be engine.Backend) error {
		d, err := load(be, path)
		if err != nil {
			return err
		}
		defer d.Close()
		switch rec.Mode {
		case modeBoxes:
			d.s.Threshold = lowThr
		case modePoints:
			d.s.Threshold = pointsLow
		}
		preds, refs = nil, nil
		for _, k := range cases {
			if err := ctx.Err(); err != nil {
				return err
			}
			if len(k.Images) == 0 {
				return fmt.Errorf("%w: case %s has no image file", ErrInput, k.ID)
			}
			ref, err := readLabel(k.ID, k.Label, rec.Spec, rec.Mode)
			if err != nil {
				return err
			}
			p, err := d.detect(k.Images)
			if err != nil {
				return fmt.Errorf("case %s: %w", k.ID, err)
			}
			preds, refs = append(preds, p), append(refs, ref)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	val := map[string]float64{}
	switch rec.Mode {
	case modeBoxes:
		rec.Threshold = c.Threshold
		if rec.Threshold == 0 {
			rec.Threshold = defaultBoxThr
		}
		rec.Calib = fitCalibration(preds, refs)
		for _, p := range preds {
			for i := range p.Boxes {
				p.Boxes[i].Score = rec.calibrate(logit(p.Boxes[i].Score))
			}
		}
		var sum float64
		for _, at := range rec.Spec.Attributes {
			ap := meanAP(preds, refs, func(b taskspec.Box) int { return b.Attrs[at.Name] })
			val["ap_"+at.Name] = ap
			sum += ap
		}
		val["ap_boxes"] = meanAP(preds, refs, func(taskspec.Box) int { return 0 })
		val["ap_mean"] = val["ap_boxes"]
		if n := len(rec.Spec.Attributes); n > 0 {
			val["ap_mean"] = sum / float64(n)
		}
	case modePoints:
		radius := rec.Spec.PointRadius
		if radius == 0 {
			radius = metrics.PUMAMatchRadius
		}
		best, bestThr := -1.0, c.Threshold
		thrs := []float64{c.Threshold}
		if c.Threshold == 0 {
			thrs = nil
			for t := pointsLow; t < 1; t += pointsStep {
				thrs = append(thrs, t)
			}
		}
		for _, t := range thrs {
			if f := pointsF1(preds, refs, rec.Spec.Points, radius, t, metrics.PointsRuleOf(rec.Spec.Challenge, false)); f > best {
				best, bestThr = f, t
			}
		}
		rec.Threshold = bestThr
		val["f1"] = best
		val["threshold"] = bestThr
	case modeBox3D:
		var sum float64
		for i, p := range preds {
			sum += iou3D(*p.Box3D, *refs[i].Box3D)
		}
		val["iou"] = sum / float64(len(preds))
	}
	if len(req.Validation) == 0 {
		return nil, nil
	}
	return val, nil
}

// logit is the inverse of sigmoid, finite for scores of 0 and 1.
func logit(p float64) float32 {
	p = min(max(p, 1e-7), 1-1e-7)
	return float32(math.Log(p / (1 - p)))
}

// fitCalibration fits Platt scaling σ(a·l + b) of the heatmap logit l to whether a box
// matches a reference box at IoU ≥ 0.5 (each reference once, highest scores first), by
// Newton's method on the log-likelihood with a small ridge; zero (no calibration) when
// the boxes are all found or all missed.
func fitCalibration(preds, refs []*taskspec.Annotation) [2]float64 {
	var xs, ys []float64
	for i, p := range preds {
		used := make([]bool, len(refs[i].Boxes))
		for _, b := range p.Boxes { // highest score first
			best, bj := calibIoU, -1
			for j, r := range refs[i].Boxes {
				if v := boxIoU(b, r); !used[j] && v >= best {
					best, bj = v, j
				}
			}
			y := 0.0
			if bj >= 0 {
				used[bj] = true
				y = 1
			}
			xs, ys = append(xs, float64(logit(b.Score))), append(ys, y)
		}
	}
	var pos float64
	for _, y := range ys {
		pos += y
	}
	if pos == 0 || pos == float64(len(ys)) {
		return [2]float64{}
	}
	a, b := 1.0, 0.0
	const ridge = 1e-3
	for range 50 {
		var ga, gb, haa, hab, hbb float64
		for i, x := range xs {
			p := sigmoid(a*x + b)
			r := p - ys[i]
			w := p * (1 - p)
			ga += r * x
			gb += r
			haa += w * x * x
			hab += w * x
			hbb += w
		}
		ga += ridge * (a - 1)
		haa += ridge
		hbb += ridge
		det := haa*hbb - hab*hab
		if !(det > 0) {
			break
		}
		da, db := (hbb*ga-hab*gb)/det, (haa*gb-hab*ga)/det
		a, b = a-da, b-db
		if math.Abs(da)+math.Abs(db) < 1e-9 {
			break
		}
	}
	if !(a > 0) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
		return [2]float64{} // a calibration must keep the ranking
	}
	return [2]float64{a, b}
}

// meanAP is COCO's AP, averaged over IoU thresholds .50:.05:.95 and over the categories
// (given by cat) with reference boxes: detections sorted by score and matched greedily to
// the best unmatched reference of their image and category, precision made monotone and
// sampled at 101 recall points. Area ranges and crowds are left out.
func meanAP(preds, refs []*taskspec.Annotation, cat func(taskspec.Box) int) float64 {
	type det struct {
		img   int
		box   taskspec.Box
		score float64
	}
	cats := map[int]bool{}
	for _, r := range refs {
		for _, b := range r.Boxes {
			cats[cat(b)] = true
		}
	}
	var sum float64
	var n int
	for c := range cats {
		var dets []det
		for i, p := range preds {
			for _, b := range p.Boxes {
				if cat(b) == c {
					dets = append(dets, det{i, b, b.Score})
				}
			}
		}
		slices.SortStableFunc(dets, func(a, b det) int {
			switch {
			case a.score > b.score:
				return -1
			case a.score < b.score:
				return 1
			}
			return 0
		})
		var gt int
		for _, r := range refs {
			for _, b := range r.Boxes {
				if cat(b) == c {
					gt++
				}
			}
		}
		for t := range 10 {
			thr := 0.5 + 0.05*float64(t)
			used := make([][]bool, len(refs))
			for i, r := range refs {
				used[i] = make([]bool, len(r.Boxes))
			}
			var prec, rec []float64
			tp := 0
			for k, d := range dets {
				best, bj := thr, -1
				for j, r := range refs[d.img].Boxes {
					if cat(r) != c || used[d.img][j] {
						continue
					}
					if v := boxIoU(d.box, r); v >= best {
						best, bj = v, j
					}
				}
				if bj >= 0 {
					used[d.img][bj] = true
					tp++
				}
				prec = append(prec, float64(tp)/float64(k+1))
				rec = append(rec, float64(tp)/float64(gt))
			}
			for k := len(prec) - 2; k >= 0; k-- {
				prec[k] = max(prec[k], prec[k+1])
			}
			var ap float64
			j := 0
			for r := range 101 {
				rt := float64(r) / 100
				for j < len(rec) && rec[j] < rt {
					j++
				}
				if j < len(prec) {
					ap += prec[j]
				}
			}
			sum += ap / 101
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// pointsF1 is the macro F1 over classes of the points scoring at least thr, matched within
// radius and averaged under rule, the rule of the task's grader (metrics.PointsF1).
func pointsF1(preds, refs []*taskspec.Annotation, classes []string, radius, thr float64, rule metrics.PointsRule) float64 {
	truth, pred := make([][]metrics.Nucleus, len(refs)), make([][]metrics.Nucleus, len(preds))
	for i, r := range refs {
		for _, q := range r.Points {
			truth[i] = append(truth[i], metrics.Nucleus{Class: q.Class, X: q.X, Y: q.Y, Score: q.Score})
		}
	}
	for i, p := range preds {
		for _, q := range p.Points {
			if q.Score >= thr {
				pred[i] = append(pred[i], metrics.Nucleus{Class: q.Class, X: q.X, Y: q.Y, Score: q.Score})
			}
		}
	}
	f1, _ := metrics.PointsF1(truth, pred, classes, radius, rule)
	return f1
}
