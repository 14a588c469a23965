package rexmle

import (
	"fmt"
	"math"
	"math/rand/v2"

	"amid/viewer/volume"
)

func init() { register("dentex", genDENTEX) }

// DENTEX COCO categories, 0-based as in the challenge's training JSON.
type cocoCategory struct {
	ID            int    `json:"id"`
	Name          string `json:"name"`
	Supercategory string `json:"supercategory"`
}

type cocoImage struct {
	Height   int    `json:"height"`
	Width    int    `json:"width"`
	ID       int    `json:"id"`
	FileName string `json:"file_name"`
}

type cocoAnnotation struct {
	Iscrowd      int         `json:"iscrowd"`
	ImageID      int         `json:"image_id"`
	BBox         [4]float64  `json:"bbox"`
	Segmentation [][]float64 `json:"segmentation"`
	ID           int         `json:"id"`
	Area         float64     `json:"area"`
	Quadrant     int         `json:"category_id_1"`
	Enumeration  int         `json:"category_id_2"`
	Diagnosis    int         `json:"category_id_3"`
}

type cocoFile struct {
	Images      []cocoImage      `json:"images"`
	Annotations []cocoAnnotation `json:"annotations"`
	Categories1 []cocoCategory   `json:"categories_1"`
	Categories2 []cocoCategory   `json:"categories_2"`
	Categories3 []cocoCategory   `json:"categories_3"`
}

// dentexDiagnoses are the DENTEX diagnosis classes in category_id_3 order.
var dentexDiagnoses = []string{"Impacted", "Caries", "Periapical Lesion", "Deep Caries"}

func dentexCategories() (q, e, dg []cocoCategory) {
	for k := range 4 {
		n := fmt.Sprint(k + 1)
		q = append(q, cocoCategory{k, n, n})
	}
	for k := range 8 {
		n := fmt.Sprint(k + 1)
		e = append(e, cocoCategory{k, n, n})
	}
	for k, n := range dentexDiagnoses {
		dg = append(dg, cocoCategory{k, n, n})
	}
	return q, e, dg
}

// Relative tooth widths from the central incisor (1) to the third molar (8).
var toothWidth = [8]float64{0.8, 0.7, 0.8, 0.78, 0.76, 1.2, 1.12, 1.05}

// genDENTEX writes DENTEX: panoramic X-rays train/images/train_<n>.png (8-bit grey) with
// one COCO file train/train_quadrant_enumeration_disease.json (only abnormal teeth are
// annotated, as in the challenge), test/images, and private/ground_truth/train_<n>.json,
// one COCO file per test image.
func genDENTEX(d *dataset) error {
	w, h := 160, 80
	if d.opt.Real {
		w, h = 2744, 1316
	}
	q, e, dg := dentexCategories()
	train := cocoFile{Categories1: q, Categories2: e, Categories3: dg}
	d.answerHeader = []string{"image_id", "ground_truth_json"}
	annID := 1
	for i := range d.n() {
		stem := fmt.Sprintf("train_%d", i)
		im := cocoImage{Height: h, Width: w, ID: i + 1, FileName: stem + ".png"}
		rng := d.rng(i)
		img, anns, err := dentexCase(rng, w, h)
		if err != nil {
			return err
		}
		for k := range anns {
			anns[k].ImageID, anns[k].ID = im.ID, annID
			annID++
		}
		sp := d.caseSplit(i)
		if err := writeImage(d.pub, sp+"/images/"+stem+".png", img); err != nil {
			return err
		}
		if !d.isTest[i] {
			train.Images = append(train.Images, im)
			train.Annotations = append(train.Annotations, anns...)
			continue
		}
		gt := cocoFile{Images: []cocoImage{im}, Annotations: anns, Categories1: q, Categories2: e, Categories3: dg}
		rel := "ground_truth/" + stem + ".json"
		if err := writeJSON(d.priv, rel, gt); err != nil {
			return err
		}
		d.answer(stem, rel)
	}
	if train.Annotations == nil {
		train.Annotations = []cocoAnnotation{}
	}
	return writeJSON(d.pub, "train/train_quadrant_enumeration_disease.json", train)
}

// dentexCase draws a panoramic X-ray w×h: jaw bone around two rows of 16 teeth (image
// left is the patient's right: quadrants 1 upper and 4 lower on the left, 2 and 3 on
// the right; tooth 1 at the midline), a few missing teeth, and one to four abnormal
// teeth: caries (a dark spot in the crown), deep caries (a larger one reaching the
// pulp), a periapical lesion (a dark round at the root tip) or an impacted third molar
// (tilted and sunk into the bone). It returns the image and the abnormal teeth's
// annotations (0-based category ids, image and annotation ids unset).
func dentexCase(rng *rand.Rand, w, h int) (*volume.Volume, []cocoAnnotation, error) {
	W, H := float64(w), float64(h)
	p := newPlane(w, h, 22)
	// Jaw bone: an elliptical band.
	for k := range p.pix {
		x, y := (float64(k%w)+0.5)/W-0.5, (float64(k/w)+0.5)/H-0.5
		if r := sq(x/0.46) + sq(y/0.42); r < 1 {
			p.pix[k] = 70 + 20*(1-r)
		}
	}
	var sum float64
	for _, v := range toothWidth {
		sum += v
	}
	unit := 0.42 * W / sum
	th := 0.34 * H
	type tooth struct {
		q, e       int // quadrant 1–4, number 1–8
		x, y, w, h float64
		upper      bool
	}
	var teeth []tooth
	for _, q := range []int{1, 2, 3, 4} {
		upper := q <= 2
		side := -1.0 // image left
		if q == 2 || q == 3 {
			side = 1
		}
		off := 0.0
		for e := 1; e <= 8; e++ {
			tw := toothWidth[e-1] * unit
			cx := W/2 + side*(off+tw/2)
			off += tw
			curve := 0.06 * H * sq((cx-W/2)/(0.42*W))
			t := tooth{q: q, e: e, w: 0.9 * tw, h: th, upper: upper}
			t.x = cx - t.w/2
			if upper {
				t.y = 0.48*H - th - curve
			} else {
				t.y = 0.52*H + curve
			}
			if rng.Float64() < 0.05 {
				continue // missing tooth
			}
			teeth = append(teeth, t)
		}
	}
	// Abnormal teeth and their diagnoses.
	diag := map[int]int{}
	for n := 1 + rng.IntN(4); len(diag) < n; {
		k := rng.IntN(len(teeth))
		dx := 1 + rng.IntN(3) // caries, periapical lesion, deep caries
		if teeth[k].e == 8 && rng.Float64() < 0.6 {
			dx = 0 // impacted
		}
		diag[k] = dx
	}
	var anns []cocoAnnotation
	for k, t := range teeth {
		dx, abnormal := diag[k]
		angle := 0.0
		if abnormal && dx == 0 {
			angle = uniform(rng, 0.5, 0.9) * float64(map[bool]int{true: 1, false: -1}[t.q == 1 || t.q == 3])
			if t.upper {
				t.y -= 0.12 * H
			} else {
				t.y += 0.12 * H
			}
		}
		cx, cy := t.x+t.w/2, t.y+t.h/2
		ca, sa := math.Cos(angle), math.Sin(angle)
		rot := func(x, y float64) [2]float64 { // about the tooth centre
			x, y = x-cx, y-cy
			return [2]float64{cx + x*ca - y*sa, cy + x*sa + y*ca}
		}
		// Crown toward the occlusal plane, root away from it.
		crown := 0.4 * t.h
		fill := func(x0, y0, x1, y1, v float64) {
			poly := [][2]float64{rot(x0, y0), rot(x1, y0), rot(x1, y1), rot(x0, y1)}
			fillPolygon(w, h, poly, func(i int) { p.pix[i] = v })
		}
		if t.upper {
			fill(t.x+0.15*t.w, t.y, t.x+0.85*t.w, t.y+t.h-crown, 165)       // root
			fill(t.x, t.y+t.h-crown, t.x+t.w, t.y+t.h, 215)                 // crown
			fill(t.x+0.42*t.w, t.y+0.1*t.h, t.x+0.58*t.w, t.y+0.8*t.h, 110) // pulp
		} else {
			fill(t.x+0.15*t.w, t.y+crown, t.x+0.85*t.w, t.y+t.h, 165)
			fill(t.x, t.y, t.x+t.w, t.y+crown, 215)
			fill(t.x+0.42*t.w, t.y+0.2*t.h, t.x+0.58*t.w, t.y+0.9*t.h, 110)
		}
		if !abnormal {
			continue
		}
		crownY, apexY := t.y+t.h-0.2*t.h, t.y+0.04*t.h
		if !t.upper {
			crownY, apexY = t.y+0.2*t.h, t.y+0.96*t.h
		}
		spot := func(x, y, r, v float64) {
			c := rot(x, y)
			fillPolygon(w, h, ellipsePoly(c[0], c[1], r, r, 0, 0.15, 12, rng), func(i int) { p.pix[i] = v })
		}
		switch dx {
		case 1:
			spot(t.x+uniform(rng, 0.3, 0.7)*t.w, crownY, math.Max(0.2*t.w, 1), 70)
		case 2:
			spot(cx, apexY, math.Max(0.4*t.w, 1.2), 40)
		case 3:
			spot(cx, (crownY+cy)/2, math.Max(0.34*t.w, 1.2), 60)
		}
		// The box: the (tilted) tooth's bounding box, in whole pixels.
		x0, y0, x1, y1 := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
		for _, c := range [][2]float64{rot(t.x, t.y), rot(t.x+t.w, t.y), rot(t.x, t.y+t.h), rot(t.x+t.w, t.y+t.h)} {
			x0, y0, x1, y1 = math.Min(x0, c[0]), math.Min(y0, c[1]), math.Max(x1, c[0]), math.Max(y1, c[1])
		}
		x0, y0 = math.Max(0, math.Floor(x0)), math.Max(0, math.Floor(y0))
		x1, y1 = math.Min(W, math.Ceil(x1)), math.Min(H, math.Ceil(y1))
		anns = append(anns, cocoAnnotation{
			BBox:         [4]float64{x0, y0, x1 - x0, y1 - y0},
			Segmentation: [][]float64{{x0, y0, x1, y0, x1, y1, x0, y1}},
			Area:         (x1 - x0) * (y1 - y0),
			Quadrant:     t.q - 1, Enumeration: t.e - 1, Diagnosis: dx,
		})
	}
	p.blur(0.7 * W / 160)
	for k := range p.pix {
		p.pix[k] += 6 * rng.NormFloat64()
	}
	img, err := fromPlanes(volume.Uint8, p)
	return img, anns, err
}
