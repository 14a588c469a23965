package rexmle

import (
	"fmt"
	"math"

	"amid/viewer/nrrd"
	"amid/viewer/volume"
)

func init() { register("seg_a", genSEGA) }

// aortaTree is the aortic vessel tree (mm, LPS; z = 0 at the diaphragm): ascending aorta,
// arch, descending and abdominal aorta, the iliac arteries, and the main branches, each
// with its radius.
var aortaTree = []struct {
	pts [][3]float64
	r   float64
}{
	{[][3]float64{{-10, -20, 150}, {-5, -25, 200}, {5, -10, 225}, {20, 15, 215}, {25, 40, 180}}, 14}, // ascending aorta and arch
	{[][3]float64{{25, 40, 180}, {20, 45, 100}, {15, 40, 0}, {10, 30, -100}, {5, 25, -170}}, 11},     // descending and abdominal aorta
	{[][3]float64{{5, 25, -170}, {-30, 25, -210}, {-50, 20, -260}}, 6},                               // right common and external iliac
	{[][3]float64{{5, 25, -170}, {40, 25, -210}, {60, 20, -260}}, 6},                                 // left common and external iliac
	{[][3]float64{{-2, -12, 222}, {-15, -15, 260}, {-25, -15, 300}}, 5},                              // brachiocephalic trunk
	{[][3]float64{{10, 0, 225}, {15, 0, 290}}, 4},                                                    // left common carotid
	{[][3]float64{{18, 12, 220}, {45, 15, 260}, {70, 20, 265}}, 4},                                   // left subclavian
	{[][3]float64{{15, 38, -20}, {15, 10, -25}, {25, -5, -20}}, 4},                                   // coeliac trunk
	{[][3]float64{{14, 36, -40}, {10, 5, -60}, {5, -5, -110}}, 4},                                    // superior mesenteric
	{[][3]float64{{12, 33, -70}, {-40, 45, -75}}, 3.5},                                               // right renal
	{[][3]float64{{12, 33, -70}, {60, 45, -72}}, 3.5},                                                // left renal
}

// genSEGA writes SEG.A: CT angiograms train/images/<id>.nrrd with 3D Slicer segmentations
// train/labels/<id>.seg.nrrd (one segment, the aortic vessel tree), test/images and
// private/test/labels. Ids name the institutions of the AVT dataset: D (Dongyang), K
// (KiTS), R (Rider) and a number.
func genSEGA(d *dataset) error {
	dims, fov := [3]int{40, 40, 48}, [3]float64{360, 360, 560}
	if d.opt.Real {
		dims, fov = [3]int{512, 512, 320}, [3]float64{360, 360, 560}
	}
	g := newGrid(dims, fov, [3]float64{0, 0, 20})
	d.answerHeader = []string{"image_id", "image_path", "label_path"}
	d.leaderboard = true
	for i := range d.n() {
		id := fmt.Sprintf("%c%d", "DKR"[i%3], i/3+1)
		rng := d.rng(i)
		img, err := g.volume(volume.Int16)
		if err != nil {
			return err
		}
		lab, err := g.volume(volume.Uint8)
		if err != nil {
			return err
		}
		// Torso: body, lungs above the diaphragm, spine, liver and kidneys below it.
		g.each(func(k int, p [3]float64) {
			hu := -1000.0
			switch {
			case sq(p[0]/165)+sq(p[1]/115) > 1 || p[2] > 330:
			case sq(p[0]/20)+sq((p[1]-75)/20) < 1:
				hu = 650
			case p[2] > 10 && sq((math.Abs(p[0])-75)/60)+sq(p[1]/70) < 1:
				hu = -850
			case p[2] < 10 && p[2] > -120 && sq((p[0]+70)/65)+sq((p[1]+5)/60) < 1:
				hu = 60
			case sq(p[0]/150)+sq(p[1]/100) > 1:
				hu = -100
			default:
				hu = 40
			}
			img.SetIndex(k, hu)
		})
		shift := [3]float64{uniform(rng, -12, 12), uniform(rng, -12, 12), uniform(rng, -25, 25)}
		scale := uniform(rng, 0.85, 1.15) // aortic calibre
		contrast := uniform(rng, 250, 450)
		l := lab.Data.([]uint8)
		minR := 0.75 * g.maxSpacing()
		for _, s := range aortaTree {
			pts := make([][3]float64, len(s.pts))
			for k, p := range s.pts {
				pts[k] = [3]float64{p[0] + shift[0], p[1] + shift[1], p[2] + shift[2]}
			}
			g.tube(pts, math.Max(s.r*scale, minR), func(k int) {
				img.SetIndex(k, contrast)
				l[k] = 1
			})
		}
		addNoise(img, 15, false, rng)
		sp := d.caseSplit(i)
		if err := writeImage(d.pub, sp+"/images/"+id+".nrrd", img); err != nil {
			return err
		}
		root, rel := d.pub, "train/labels/"+id+".seg.nrrd"
		if d.isTest[i] {
			root, rel = d.priv, "test/labels/"+id+".seg.nrrd"
			d.answer(id, "test/images/"+id+".nrrd", rel)
		}
		p := under(root, rel)
		if err := mkdirFor(p); err != nil {
			return err
		}
		seg := []nrrd.Segment{{ID: "Segment_1", Name: "aorta", LabelValue: 1, Layer: 0, Color: [3]float64{0.85, 0.2, 0.2}}}
		if err := nrrd.WriteSegmentation(p, lab, seg); err != nil {
			return err
		}
	}
	return nil
}
