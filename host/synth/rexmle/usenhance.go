package rexmle

import (
	"fmt"
	"math"
	"math/rand/v2"

	"amid/viewer/volume"
)

func init() { register("usenhance", genUSenhance) }

// usOrgans are USenhance's five organs, used in turn.
var usOrgans = []string{"breast", "carotid", "kidney", "liver", "thyroid"}

// genUSenhance writes USenhance: pairs train/low_quality/<id>.png and
// train/high_quality/<id>.png (8-bit grey), test/low_quality, and the test targets in
// private/test/high_quality. Ids are <organ>_<n>. The high-quality image is the organ's
// echo structure with fine speckle; the low-quality one is the same structure blurred,
// with coarse multiplicative speckle, less contrast and a noise floor.
func genUSenhance(d *dataset) error {
	w, h := 96, 80
	if d.opt.Real {
		w, h = 512, 400
	}
	d.answerHeader = []string{"image_id", "ground_truth_path"}
	// sample_submission.csv names enhanced/<id>.png, as ReX's prepare.py writes it; the
	// task's own submission path is predictions/ (the folder ReX's validator ships).
	d.sample = "enhanced/{id}.png"
	for i := range d.n() {
		organ := usOrgans[i%len(usOrgans)]
		id := fmt.Sprintf("%s_%d", organ, i/len(usOrgans)+1)
		rng := d.rng(i)
		hq, lq, err := usCase(rng, w, h, organ)
		if err != nil {
			return err
		}
		sp := d.caseSplit(i)
		if err := writeImage(d.pub, sp+"/low_quality/"+id+".png", lq); err != nil {
			return err
		}
		if !d.isTest[i] {
			if err := writeImage(d.pub, "train/high_quality/"+id+".png", hq); err != nil {
				return err
			}
			continue
		}
		rel := "test/high_quality/" + id + ".png"
		if err := writeImage(d.priv, rel, hq); err != nil {
			return err
		}
		d.answer(id, rel)
	}
	return nil
}

// usCase draws one ultrasound pair of organ, w×h: the high- and low-quality images.
func usCase(rng *rand.Rand, w, h int, organ string) (hq, lq *volume.Volume, err error) {
	W, H := float64(w), float64(h)
	echo := newPlane(w, h, 0.35) // tissue echogenicity, 0..1
	ell := func(cx, cy, rx, ry, v float64) {
		fillPolygon(w, h, ellipsePoly(cx*W, cy*H, rx*W, ry*H, uniform(rng, -0.3, 0.3), 0.05, 24, rng), func(k int) { echo.pix[k] = v })
	}
	switch organ {
	case "breast": // layers, then a dark lesion
		for k := range echo.pix {
			y := float64(k/w) / H
			echo.pix[k] = 0.3 + 0.25*math.Sin(9*y+uniform(rng, 0, 0.05))
		}
		ell(uniform(rng, 0.35, 0.65), uniform(rng, 0.45, 0.7), uniform(rng, 0.1, 0.18), uniform(rng, 0.07, 0.12), 0.08)
	case "carotid": // a dark lumen between bright walls
		y := uniform(rng, 0.4, 0.6)
		for k := range echo.pix {
			d := math.Abs(float64(k/w)/H - y)
			switch {
			case d < 0.1:
				echo.pix[k] = 0.04
			case d < 0.13:
				echo.pix[k] = 0.85
			}
		}
	case "kidney": // bright capsule, darker cortex, bright sinus
		cx, cy := uniform(rng, 0.4, 0.6), uniform(rng, 0.45, 0.6)
		ell(cx, cy, 0.34, 0.22, 0.8)
		ell(cx, cy, 0.31, 0.19, 0.25)
		ell(cx, cy, 0.14, 0.08, 0.75)
	case "liver": // even parenchyma with dark vessels
		for range 4 + rng.IntN(4) {
			ell(uniform(rng, 0.1, 0.9), uniform(rng, 0.2, 0.9), uniform(rng, 0.02, 0.05), uniform(rng, 0.02, 0.05), 0.05)
		}
	case "thyroid": // two lobes either side of the trachea's shadow
		ell(0.27, 0.45, 0.18, 0.14, 0.55)
		ell(0.73, 0.45, 0.18, 0.14, 0.55)
		ell(0.5, 0.3, 0.08, 0.08, 0.9)
		for k := range echo.pix {
			if x, y := float64(k%w)/W, float64(k/w)/H; math.Abs(x-0.5) < 0.07 && y > 0.38 {
				echo.pix[k] = 0.03
			}
		}
	}
	// Depth attenuation, then speckle.
	for k := range echo.pix {
		echo.pix[k] *= math.Exp(-0.8 * float64(k/w) / H)
	}
	fine, coarse := newPlane(w, h, 0), newPlane(w, h, 0)
	for k := range fine.pix {
		fine.pix[k] = rayleigh(rng)
		coarse.pix[k] = rayleigh(rng)
	}
	fine.blur(0.5)
	coarse.blur(1.2)
	hi, lo := newPlane(w, h, 0), newPlane(w, h, 0)
	blurred := &plane{w: w, h: h, pix: append([]float64(nil), echo.pix...)}
	blurred.blur(2)
	for k := range hi.pix {
		hi.pix[k] = 255 * echo.pix[k] * (0.75 + 0.25*fine.pix[k])
		lo.pix[k] = 20 + 190*blurred.pix[k]*coarse.pix[k] + 8*rng.NormFloat64()
	}
	if hq, err = fromPlanes(volume.Uint8, hi); err != nil {
		return nil, nil, err
	}
	lq, err = fromPlanes(volume.Uint8, lo)
	return hq, lq, err
}

// rayleigh draws a Rayleigh variate of mean 1, the amplitude statistics of fully
// developed speckle.
func rayleigh(rng *rand.Rand) float64 {
	return math.Sqrt(-2*math.Log(1-rng.Float64())) / math.Sqrt(math.Pi/2)
}
