package rexmle

import (
	"fmt"
	"math/rand/v2"

	"amid/viewer/volume"
)

func init() { register("isles22", genISLES) }

// Brain MR tissue classes of headMR.
const (
	mrAir = iota
	mrScalp
	mrSkull
	mrBrain
	mrCSF
	mrLesion
)

// headMR classifies a point (mm, head centred on 0) of an adult head: semi-axes about
// 70×85×65 mm, skull, brain, two lateral ventricles.
func headMR(p [3]float64) int {
	zero := [3]float64{}
	switch {
	case ellipsoidR(p, zero, [3]float64{70, 85, 65}) > 1:
		return mrAir
	case ellipsoidR(p, zero, [3]float64{66, 81, 61}) > 1:
		return mrScalp
	case ellipsoidR(p, zero, [3]float64{61, 76, 56}) > 1:
		return mrSkull
	}
	for _, s := range []float64{-1, 1} {
		if ellipsoidR(p, [3]float64{s * 9, -5, 8}, [3]float64{6, 24, 10}) < 1 {
			return mrCSF
		}
	}
	if ellipsoidR(p, zero, [3]float64{59, 74, 54}) > 1 {
		return mrCSF // the subarachnoid space
	}
	return mrBrain
}

// genISLES writes ISLES'22: sub-strokecaseNNNN_{dwi,adc,flair,msk}.nii.gz in train/ and
// test/ (no mask), masks of the test cases in private/test/. DWI, ADC and the mask share a
// grid of 2 mm voxels (112×112×73 at real size); FLAIR has its own, finer one. Each case
// holds one to three lumpy infarcts, bright on DWI, dark on ADC and mildly bright on FLAIR.
func genISLES(d *dataset) error {
	fov := [3]float64{224, 224, 146}
	dwiDims, flairDims := [3]int{32, 32, 20}, [3]int{40, 40, 16}
	if d.opt.Real {
		dwiDims, flairDims = [3]int{112, 112, 73}, [3]int{256, 256, 48}
	}
	dg, fg := newGrid(dwiDims, fov, [3]float64{}), newGrid(flairDims, fov, [3]float64{})
	d.answerHeader = []string{"case_id", "dwi_path", "adc_path", "flair_path", "mask_path"}
	for i := range d.n() {
		id := fmt.Sprintf("sub-strokecase%04d", i+1)
		rng := d.rng(i)
		// Lesions: 1–3 blobs of 8–22 mm inside the brain.
		type lesion struct {
			c    [3]float64
			r    float64
			seed uint64 // the same lumps on both grids
		}
		var les []lesion
		for len(les) < 1+rng.IntN(3) {
			c := [3]float64{uniform(rng, -45, 45), uniform(rng, -55, 55), uniform(rng, -35, 40)}
			if headMR(c) != mrBrain {
				continue
			}
			les = append(les, lesion{c, uniform(rng, 8, 22), rng.Uint64()})
		}
		tissue := func(g grid) []uint8 {
			t := make([]uint8, g.n())
			g.each(func(k int, p [3]float64) { t[k] = uint8(headMR(p)) })
			for _, l := range les {
				lr := rand.New(rand.NewPCG(l.seed, 1))
				g.blob(l.c, l.r, 3, lr, func(k int) {
					if t[k] == mrBrain {
						t[k] = mrLesion
					}
				})
			}
			return t
		}
		dt, ft := tissue(dg), tissue(fg)
		gain := uniform(rng, 0.8, 1.2)
		// Mean signal per tissue class: air, scalp, skull, brain, CSF, lesion.
		dwiMean := [...]float64{0, 90, 20, 300, 50, 760}
		adcMean := [...]float64{0, 1000, 100, 800, 3000, 430}
		flairMean := [...]float64{0, 380, 30, 300, 60, 470}
		mk := func(g grid, t []uint8, mean [6]float64, sigma float64) (*volume.Volume, error) {
			v, err := g.volume(volume.Int16)
			if err != nil {
				return nil, err
			}
			for k, c := range t {
				v.SetIndex(k, gain*mean[c])
			}
			addNoise(v, sigma, true, rng)
			return v, nil
		}
		dwi, err := mk(dg, dt, dwiMean, 18)
		if err != nil {
			return err
		}
		adc, err := mk(dg, dt, adcMean, 60)
		if err != nil {
			return err
		}
		flair, err := mk(fg, ft, flairMean, 15)
		if err != nil {
			return err
		}
		msk, err := dg.volume(volume.Uint8)
		if err != nil {
			return err
		}
		m := msk.Data.([]uint8)
		for k, c := range dt {
			if c == mrLesion {
				m[k] = 1
			}
		}
		sp := d.caseSplit(i)
		for name, v := range map[string]*volume.Volume{"dwi": dwi, "adc": adc, "flair": flair} {
			if err := writeImage(d.pub, sp+"/"+id+"_"+name+".nii.gz", v); err != nil {
				return err
			}
		}
		if !d.isTest[i] {
			if err := writeImage(d.pub, "train/"+id+"_msk.nii.gz", msk); err != nil {
				return err
			}
			continue
		}
		if err := writeImage(d.priv, "test/"+id+"_msk.nii.gz", msk); err != nil {
			return err
		}
		d.answer(id, "test/"+id+"_dwi.nii.gz", "test/"+id+"_adc.nii.gz", "test/"+id+"_flair.nii.gz", "test/"+id+"_msk.nii.gz")
	}
	return nil
}
