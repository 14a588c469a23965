package rexmle

import (
	"fmt"
	"math"
	"math/rand/v2"

	"amid/viewer/volume"
)

func init() {
	register("panther-task1", func(d *dataset) error { return genPANTHER(d, 1) })
	register("panther-task2", func(d *dataset) error { return genPANTHER(d, 2) })
}

// Abdominal tissue classes of the PANTHER phantom.
const (
	abAir = iota
	abFat
	abMuscle
	abLiver
	abKidney
	abSpine
	abAorta
	abPancreas
	abTumor
)

// abdomen classifies a point (mm; x to the patient's left, y posterior) of an axial
// abdominal section: body, subcutaneous fat, liver on the right, kidneys, spine, aorta.
func abdomen(p [3]float64) int {
	if sq(p[0]/165)+sq(p[1]/115) > 1 {
		return abAir
	}
	if sq(p[0]/150)+sq(p[1]/100) > 1 {
		return abFat
	}
	switch {
	case sq((p[0]+0)/18)+sq((p[1]-70)/18) < 1:
		return abSpine
	case sq((p[0]-20)/11)+sq((p[1]-40)/11) < 1:
		return abAorta
	case sq((p[0]+75)/60)+sq((p[1]+5)/55)+sq(p[2]/110) < 1:
		return abLiver
	case sq((p[0]-70)/24)+sq((p[1]-50)/30)+sq((p[2]+30)/55) < 1, sq((p[0]+70)/24)+sq((p[1]-50)/30)+sq((p[2]+40)/55) < 1:
		return abKidney
	case sq(p[0]/140)+sq(p[1]/95) > 1:
		return abMuscle
	}
	return abFat // visceral fat
}

// pancreasPath is the pancreas centre line, head (patient's right) to tail (left).
var pancreasPath = [][3]float64{{-45, 10, -15}, {-15, 15, -5}, {15, 20, 0}, {45, 30, 5}, {70, 40, 8}}

// genPANTHER writes PANTHER task 1 (T1 contrast-enhanced arterial MRI, ids
// <patient>_0001, images <id>_0000.mha) or task 2 (T2 MR-Linac, ids <patient>, images
// <id>_0000.mha): train/images, train/labels/<id>.mha (1 tumour, 2 pancreas), test/images,
// private/test/labels. Task 1 also has train_unlabeled/images with scans of other
// sequences.
func genPANTHER(d *dataset, task int) error {
	dims, fov := [3]int{40, 40, 16}, [3]float64{340, 340, 160}
	if d.opt.Real {
		dims, fov = [3]int{320, 320, 72}, [3]float64{384, 384, 180}
		if task == 2 {
			dims, fov = [3]int{288, 288, 80}, [3]float64{403, 403, 200}
		}
	}
	g := newGrid(dims, fov, [3]float64{})
	// Mean signal per class: air, fat, muscle, liver, kidney, spine, aorta, pancreas,
	// tumour. Arterial T1: enhancing pancreas, hypo-enhancing tumour, bright aorta.
	// T2: bright kidneys, mildly bright tumour.
	mean := [...]float64{0, 620, 260, 420, 700, 380, 950, 560, 240}
	if task == 2 {
		mean = [...]float64{0, 520, 180, 210, 480, 260, 120, 300, 430}
	}
	d.answerHeader = []string{"image_id", "image_path", "label_path"}
	d.leaderboard = true
	unlabeled := 0
	for i := range d.n() {
		patient := 10000 + 3*i
		if task == 2 {
			patient = 10303 + 2*i
		}
		id := fmt.Sprintf("%05d", patient)
		if task == 1 {
			id += "_0001"
		}
		rng := d.rng(i)
		img, lab, err := pantherCase(g, rng, mean[:])
		if err != nil {
			return err
		}
		sp := d.caseSplit(i)
		if err := writeImage(d.pub, sp+"/images/"+id+"_0000.mha", img); err != nil {
			return err
		}
		if !d.isTest[i] {
			if err := writeImage(d.pub, "train/labels/"+id+".mha", lab); err != nil {
				return err
			}
		} else {
			if err := writeImage(d.priv, "test/labels/"+id+".mha", lab); err != nil {
				return err
			}
			d.answer(id, "test/images/"+id+"_0000.mha", "test/labels/"+id+".mha")
		}
		// Task 1: every fifth patient also has an unlabelled scan of another sequence
		// (the T2 contrast of task 2).
		if task == 1 && i%5 == 0 {
			t2 := [...]float64{0, 520, 180, 210, 480, 260, 120, 300, 430}
			u, _, err := pantherCase(g, rng, t2[:])
			if err != nil {
				return err
			}
			if err := writeImage(d.pub, fmt.Sprintf("train_unlabeled/images/%05d_0002_0000.mha", patient), u); err != nil {
				return err
			}
			unlabeled++
		}
	}
	if unlabeled == 0 && task == 1 {
		return fmt.Errorf("no unlabelled scan written")
	}
	return nil
}

// pantherCase draws one abdomen with its pancreas and tumour: the image (int16) and the
// label map (uint8: 1 tumour, 2 pancreas).
func pantherCase(g grid, rng *rand.Rand, mean []float64) (*volume.Volume, *volume.Volume, error) {
	img, err := g.volume(volume.Int16)
	if err != nil {
		return nil, nil, err
	}
	lab, err := g.volume(volume.Uint8)
	if err != nil {
		return nil, nil, err
	}
	cls := make([]uint8, g.n())
	g.each(func(k int, p [3]float64) { cls[k] = uint8(abdomen(p)) })
	// The pancreas: a tube along its centre line, shifted and thickened per case.
	shift := [3]float64{uniform(rng, -10, 10), uniform(rng, -8, 8), uniform(rng, -10, 10)}
	pts := make([][3]float64, len(pancreasPath))
	for k, q := range pancreasPath {
		pts[k] = [3]float64{q[0] + shift[0], q[1] + shift[1], q[2] + shift[2]}
	}
	r := math.Max(uniform(rng, 11, 15), 1.2*g.maxSpacing())
	l := lab.Data.([]uint8)
	g.tube(pts, r, func(k int) {
		if cls[k] != abAir {
			cls[k], l[k] = abPancreas, 2
		}
	})
	// The tumour: a lumpy blob centred on the pancreas, mostly in its head.
	c := pts[rng.IntN(3)]
	tr := math.Max(uniform(rng, 9, 18), g.maxSpacing())
	g.blob(c, tr, 2, rng, func(k int) {
		if cls[k] != abAir {
			cls[k], l[k] = abTumor, 1
		}
	})
	gain := uniform(rng, 0.85, 1.15)
	for k, c := range cls {
		img.SetIndex(k, gain*mean[c])
	}
	addNoise(img, 25, true, rng)
	return img, lab, nil
}
