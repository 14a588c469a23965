package rexmle

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"amid/viewer/volume"
)

func init() { register("ldct-iqa", genLDCT) }

// genLDCT writes LDCT-IQA: low-dose abdominal CT slices train/images/NNNN.tif and
// test/images/NNNN.tiff (float32, HU), train_labels.csv (image_id, quality_score) in
// public, the test scores in private/test_labels.csv. The noise level of each slice sets
// its quality: five simulated radiologists rate it 0–4 around 4·(1 − (σ − 5)/55), and the
// score is their mean, on the challenge's 0.2 grid.
func genLDCT(d *dataset) error {
	w := 64
	if d.opt.Real {
		w = 512
	}
	d.answerHeader = []string{"image_id", "quality_score"}
	d.leaderboard = true
	var train [][]string
	for i := range d.n() {
		id := fmt.Sprintf("%04d", i)
		rng := d.rng(i)
		sigma := uniform(rng, 5, 60)
		img, err := ldctCase(rng, w, sigma)
		if err != nil {
			return err
		}
		truth := 4 * (1 - (sigma-5)/55)
		var sum float64
		for range 5 {
			sum += math.Max(0, math.Min(4, math.Round(truth+0.45*rng.NormFloat64())))
		}
		score := strconv.FormatFloat(sum/5, 'f', 1, 64)
		if d.isTest[i] {
			if err := writeImage(d.pub, "test/images/"+id+".tiff", img); err != nil {
				return err
			}
			d.answer(id, score)
			continue
		}
		if err := writeImage(d.pub, "train/images/"+id+".tif", img); err != nil {
			return err
		}
		train = append(train, []string{id, score})
	}
	return writeCSV(d.pub, "train_labels.csv", []string{"image_id", "quality_score"}, train)
}

// ldctCase draws an axial abdominal slice w×w in HU (body, fat, liver, spleen, kidneys,
// spine, aorta, bowel gas) with Gaussian noise of sigma HU, correlated a little as a
// reconstruction kernel makes it, and streaks that grow with the noise.
func ldctCase(rng *rand.Rand, w int, sigma float64) (*volume.Volume, error) {
	W := float64(w)
	p := newPlane(w, w, -1000)
	gas := [][3]float64{}
	for range 3 {
		gas = append(gas, [3]float64{uniform(rng, -0.3, 0.3), uniform(rng, -0.35, 0.05), uniform(rng, 0.02, 0.05)})
	}
	sx, sy := uniform(rng, 0.9, 1.05), uniform(rng, 0.9, 1.05)
	for k := range p.pix {
		x, y := ((float64(k%w)+0.5)/W-0.5)/sx, ((float64(k/w)+0.5)/W-0.5)/sy
		hu := -1000.0
		switch {
		case sq(x/0.45)+sq(y/0.32) > 1:
		case sq(x/0.41)+sq(y/0.28) > 1:
			hu = -100 // subcutaneous fat
		case sq(x/0.05)+sq((y-0.2)/0.05) < 1:
			hu = 700 // vertebra
		case sq((x-0.05)/0.03)+sq((y-0.1)/0.03) < 1:
			hu = 45 // aorta, no contrast
		case sq((x+0.2)/0.17)+sq((y+0.02)/0.16) < 1:
			hu = 60 // liver
		case sq((x-0.25)/0.07)+sq((y-0.08)/0.09) < 1:
			hu = 50 // spleen
		case sq((x+0.13)/0.05)+sq((y-0.17)/0.06) < 1, sq((x-0.15)/0.05)+sq((y-0.17)/0.06) < 1:
			hu = 30 // kidneys
		default:
			hu = 40 // bowel and muscle
			for _, g := range gas {
				if sq(x-g[0])+sq(y-g[1]) < sq(g[2]) {
					hu = -900
				}
			}
		}
		p.pix[k] = hu
	}
	noise := newPlane(w, w, 0)
	for k := range noise.pix {
		noise.pix[k] = rng.NormFloat64()
	}
	noise.blur(0.7)
	gain := sigma / 0.45 // the blur leaves about 0.45 of the standard deviation
	for k := range p.pix {
		p.pix[k] += gain * noise.pix[k]
	}
	// Streaks through the spine, stronger at high noise.
	for range int(sigma / 15) {
		a := uniform(rng, 0, math.Pi)
		amp := uniform(rng, 0.5, 1.5) * sigma
		for k := range p.pix {
			x, y := float64(k%w)/W-0.5, float64(k/w)/W-0.7
			if d := math.Abs(x*math.Sin(a) - y*math.Cos(a)); d < 1.5/W {
				p.pix[k] += amp
			}
		}
	}
	return fromPlanes(volume.Float32, p)
}
