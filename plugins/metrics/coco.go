package metrics

import (
	"math"
	"slices"
	"sort"
)

// COCOBox is an axis-aligned box [x, y, width, height] in pixels (COCO "bbox").
type COCOBox struct{ X, Y, W, H float64 }

// COCOGT is a ground-truth annotation.
type COCOGT struct {
	ID         int64 // annotation id; pycocotools treats id 0 as "no match" (see COCOEvaluate)
	ImageID    int64
	CategoryID int64
	Box        COCOBox
	Area       float64 // the annotation's "area" field (used for the area ranges)
	Crowd      bool    // iscrowd: ignored, matched by intersection over the detection's area
}

// COCODet is a detection.
type COCODet struct {
	ImageID    int64
	CategoryID int64
	Box        COCOBox
	Score      float64
}

// COCOStats are pycocotools' 12 summary numbers for bbox evaluation (COCOeval.stats), -1
// where undefined (no ground truth in the range).
type COCOStats struct {
	AP, AP50, AP75, APSmall, APMedium, APLarge   float64
	AR1, AR10, AR100, ARSmall, ARMedium, ARLarge float64
}

// Slice returns the stats in pycocotools' order (stats[0] … stats[11]).
func (s COCOStats) Slice() []float64 {
	return []float64{s.AP, s.AP50, s.AP75, s.APSmall, s.APMedium, s.APLarge,
		s.AR1, s.AR10, s.AR100, s.ARSmall, s.ARMedium, s.ARLarge}
}

// cocoIoUThrs and cocoRecThrs reproduce np.linspace(.5, .95, 10) and np.linspace(0, 1, 101)
// bit for bit (i·step + start, the last element set to stop).
var cocoIoUThrs, cocoRecThrs = func() ([]float64, []float64) {
	t := make([]float64, 10)
	step := (0.95 - 0.5) / 9
	for i := range t {
		t[i] = float64(i)*step + 0.5
	}
	t[9] = 0.95
	r := make([]float64, 101)
	for i := range r {
		r[i] = float64(i) * 0.01
	}
	r[100] = 1
	return t, r
}()

var cocoAreaRng = [4][2]float64{{0, 1e10}, {0, 32 * 32}, {32 * 32, 96 * 96}, {96 * 96, 1e10}}
var cocoMaxDets = [3]int{1, 10, 100}

// cocoIoU is pycocotools' bbIou for one pair: intersection over union, or over the
// detection's area when the GT is a crowd.
func cocoIoU(d, g COCOBox, crowd bool) float64 {
	w := math.Min(d.X+d.W, g.X+g.W) - math.Max(d.X, g.X)
	if w <= 0 {
		return 0
	}
	h := math.Min(d.Y+d.H, g.Y+g.H) - math.Max(d.Y, g.Y)
	if h <= 0 {
		return 0
	}
	i := w * h
	da := d.W * d.H
	u := da
	if !crowd {
		u = da + g.W*g.H - i
	}
	return i / u
}

// cocoImgEval is pycocotools' evaluateImg output for one image, category and area range.
type cocoImgEval struct {
	scores []float64
	dtm    [10][]int64 // matched GT id per detection (0: none)
	dtIg   [10][]bool
	gtIg   []bool
}

// COCOEvaluate runs pycocotools COCOeval for iouType 'bbox' with default parameters
// (IoU thresholds .50:.05:.95, 101 recall points, maxDets 1/10/100, area ranges all,
// small < 32², medium < 96², large) on the images imgIDs and categories catIDs (only
// annotations and detections in both take part), then summarize(): it returns stats[0…11].
//
// It follows pycocotools exactly: detections are sorted by score (stable, descending) per
// image and category and cut to 100; each is greedily matched, at each IoU threshold, to
// the best still unmatched GT (crowd GTs may match many), non-ignored GTs first; detections
// matched to ignored GTs, and unmatched detections outside the area range, are ignored;
// precision is made monotone and sampled at the recall thresholds (searchsorted 'left');
// AP is the mean over all defined entries. One pycocotools quirk is kept: a GT whose
// annotation id is 0 counts as unmatched when a detection matches it.
func COCOEvaluate(gts []COCOGT, dts []COCODet, imgIDs, catIDs []int64) COCOStats {
	imgs := slices.Clone(imgIDs)
	slices.Sort(imgs)
	imgs = slices.Compact(imgs)
	cats := slices.Clone(catIDs)
	slices.Sort(cats)
	cats = slices.Compact(cats)
	type key struct{ img, cat int64 }
	inImg := map[int64]bool{}
	for _, i := range imgs {
		inImg[i] = true
	}
	inCat := map[int64]bool{}
	for _, c := range cats {
		inCat[c] = true
	}
	g := map[key][]COCOGT{}
	for _, a := range gts {
		if inImg[a.ImageID] && inCat[a.CategoryID] {
			k := key{a.ImageID, a.CategoryID}
			g[k] = append(g[k], a)
		}
	}
	d := map[key][]COCODet{}
	for _, a := range dts {
		if inImg[a.ImageID] && inCat[a.CategoryID] {
			k := key{a.ImageID, a.CategoryID}
			d[k] = append(d[k], a)
		}
	}
	const T, R, A, M = 10, 101, 4, 3
	K := len(cats)
	// precision[t][r][k][a][m], recall[t][k][a][m], -1 where undefined.
	prec := make([]float64, T*R*K*A*M)
	rec := make([]float64, T*K*A*M)
	for i := range prec {
		prec[i] = -1
	}
	for i := range rec {
		rec[i] = -1
	}
	pIdx := func(t, r, k, a, m int) int { return (((t*R+r)*K+k)*A+a)*M + m }
	rIdx := func(t, k, a, m int) int { return ((t*K+k)*A+a)*M + m }
	maxDet := cocoMaxDets[M-1]
	for ki, cat := range cats {
		// evalImgs for this category: per area range, per image (nil when empty).
		var evals [A][]*cocoImgEval
		for _, img := range imgs {
			k := key{img, cat}
			gl, dl := g[k], d[k]
			if len(gl) == 0 && len(dl) == 0 {
				continue
			}
			// Detections sorted by descending score (stable), cut to maxDets[-1].
			dl = slices.Clone(dl)
			sort.SliceStable(dl, func(a, b int) bool { return cocoBefore(dl[a].Score, dl[b].Score) })
			if len(dl) > maxDet {
				dl = dl[:maxDet]
			}
			ious := make([]float64, len(dl)*len(gl))
			for di := range dl {
				for gi := range gl {
					ious[di*len(gl)+gi] = cocoIoU(dl[di].Box, gl[gi].Box, gl[gi].Crowd)
				}
			}
			for a := 0; a < A; a++ {
				evals[a] = append(evals[a], cocoEvalImg(gl, dl, ious, cocoAreaRng[a]))
			}
		}
		for a := 0; a < A; a++ {
			E := evals[a]
			for mi, md := range cocoMaxDets {
				var scores []float64
				var dtm [T][]int64
				var dtIg [T][]bool
				npig := 0
				for _, e := range E {
					n := min(md, len(e.scores))
					scores = append(scores, e.scores[:n]...)
					for t := 0; t < T; t++ {
						dtm[t] = append(dtm[t], e.dtm[t][:n]...)
						dtIg[t] = append(dtIg[t], e.dtIg[t][:n]...)
					}
					for _, ig := range e.gtIg {
						if !ig {
							npig++
						}
					}
				}
				if npig == 0 {
					continue
				}
				inds := make([]int, len(scores))
				for i := range inds {
					inds[i] = i
				}
				sort.SliceStable(inds, func(x, y int) bool { return cocoBefore(scores[inds[x]], scores[inds[y]]) })
				nd := len(inds)
				pr := make([]float64, nd)
				rc := make([]float64, nd)
				for t := 0; t < T; t++ {
					tp, fp := 0.0, 0.0
					for j, i := range inds {
						if dtIg[t][i] {
							// neither
						} else if dtm[t][i] != 0 {
							tp++
						} else {
							fp++
						}
						rc[j] = tp / float64(npig)
						pr[j] = tp / (fp + tp + cocoEps)
					}
					if nd > 0 {
						rec[rIdx(t, ki, a, mi)] = rc[nd-1]
					} else {
						rec[rIdx(t, ki, a, mi)] = 0
					}
					for i := nd - 1; i > 0; i-- {
						if pr[i] > pr[i-1] {
							pr[i-1] = pr[i]
						}
					}
					for ri, thr := range cocoRecThrs {
						pi := sort.SearchFloat64s(rc, thr) // first rc ≥ thr: searchsorted 'left'
						q := 0.0
						if pi < nd {
							q = pr[pi]
						} else {
							// pycocotools stops filling at the first index past the end;
							// the rest stay 0.
							for rr := ri; rr < R; rr++ {
								prec[pIdx(t, rr, ki, a, mi)] = 0
							}
							break
						}
						prec[pIdx(t, ri, ki, a, mi)] = q
					}
				}
			}
		}
	}
	summ := func(ap bool, iouThr float64, a, m int) float64 {
		sum, n := 0.0, 0
		for t := 0; t < T; t++ {
			if iouThr >= 0 && cocoIoUThrs[t] != iouThr {
				continue
			}
			for k := 0; k < K; k++ {
				if ap {
					for r := 0; r < R; r++ {
						if v := prec[pIdx(t, r, k, a, m)]; v > -1 {
							sum += v
							n++
						}
					}
				} else if v := rec[rIdx(t, k, a, m)]; v > -1 {
					sum += v
					n++
				}
			}
		}
		if n == 0 {
			return -1
		}
		return sum / float64(n)
	}
	return COCOStats{
		AP: summ(true, -1, 0, 2), AP50: summ(true, 0.5, 0, 2), AP75: summ(true, 0.75, 0, 2),
		APSmall: summ(true, -1, 1, 2), APMedium: summ(true, -1, 2, 2), APLarge: summ(true, -1, 3, 2),
		AR1: summ(false, -1, 0, 0), AR10: summ(false, -1, 0, 1), AR100: summ(false, -1, 0, 2),
		ARSmall: summ(false, -1, 1, 2), ARMedium: summ(false, -1, 2, 2), ARLarge: summ(false, -1, 3, 2),
	}
}

// cocoBefore orders scores as numpy's stable argsort of −score does: descending, NaN last.
func cocoBefore(a, b float64) bool {
	if math.IsNaN(a) {
		return false
	}
	return math.IsNaN(b) || a > b
}

// cocoEps is np.spacing(1), the machine epsilon pycocotools adds to precision's denominator.
const cocoEps = 2.220446049250313e-16

// cocoEvalImg is pycocotools' evaluateImg for one image and category: gl in file order,
// dl already score-sorted and cut, ious[d][g] against gl.
func cocoEvalImg(gl []COCOGT, dl []COCODet, ious []float64, rng [2]float64) *cocoImgEval {
	G, D := len(gl), len(dl)
	ig := make([]bool, G)
	for i, a := range gl {
		ig[i] = a.Crowd || a.Area < rng[0] || a.Area > rng[1]
	}
	// Non-ignored GTs first (stable).
	order := make([]int, G)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return !ig[order[a]] && ig[order[b]] })
	e := &cocoImgEval{scores: make([]float64, D), gtIg: make([]bool, G)}
	for i, o := range order {
		e.gtIg[i] = ig[o]
	}
	for i, dt := range dl {
		e.scores[i] = dt.Score
	}
	for t, thr := range cocoIoUThrs {
		gtm := make([]bool, G)
		e.dtm[t] = make([]int64, D)
		e.dtIg[t] = make([]bool, D)
		if G == 0 {
			continue
		}
		for di := 0; di < D; di++ {
			iou := math.Min(thr, 1-1e-10)
			m := -1
			for gi := 0; gi < G; gi++ {
				og := order[gi]
				if gtm[gi] && !gl[og].Crowd {
					continue
				}
				if m > -1 && !e.gtIg[m] && e.gtIg[gi] {
					break
				}
				v := ious[di*G+og]
				if v < iou {
					continue
				}
				iou, m = v, gi
			}
			if m == -1 {
				continue
			}
			e.dtIg[t][di] = e.gtIg[m]
			e.dtm[t][di] = gl[order[m]].ID
			gtm[m] = true
		}
	}
	for di, dt := range dl {
		area := dt.Box.W * dt.Box.H
		out := area < rng[0] || area > rng[1]
		for t := range cocoIoUThrs {
			if e.dtm[t][di] == 0 && out {
				e.dtIg[t][di] = true
			}
		}
	}
	return e
}
