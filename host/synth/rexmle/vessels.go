package rexmle

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"amid/viewer/volume"
)

func init() {
	for _, mr := range []bool{false, true} {
		track := 1
		if mr {
			track = 2
		}
		register(fmt.Sprintf("topbrain-track%d", track), func(d *dataset) error { return genVessels(d, mr, vesselBrain) })
		register(fmt.Sprintf("topcow-track%d-task1", track), func(d *dataset) error { return genVessels(d, mr, vesselCoWSeg) })
		register(fmt.Sprintf("topcow-track%d-task2", track), func(d *dataset) error { return genVessels(d, mr, vesselCoWBox) })
		register(fmt.Sprintf("topcow-track%d-task3", track), func(d *dataset) error { return genVessels(d, mr, vesselCoWEdges) })
	}
}

// vessel is one piece of a brain vessel tree: its TopBrain label, centre line (mm, LPS,
// the Circle of Willis centred on the origin), radius (mm) and the Circle of Willis edge
// whose absence removes it ("" when always present).
type vessel struct {
	label int
	pts   [][3]float64
	r     float64
	edge  string
	vein  bool
}

// The right half and the midline of the arterial tree, in TopBrain labels (right side at
// negative x; the left side is its mirror image). Pieces of one label that an absent edge
// removes on their own (P1 of the PCA, A1 of the ACA) are separate entries.
var arteries = []vessel{
	{1, [][3]float64{{0, 20, -30}, {0, 15, 0}}, 1.5, "", false},                         // BA
	{23, [][3]float64{{-8, 25, -60}, {-4, 22, -40}, {0, 20, -30}}, 1.6, "", false},      // R-VA
	{29, [][3]float64{{-5, 23, -45}, {-15, 35, -50}, {-20, 45, -45}}, 0.7, "", false},   // R-PICA
	{27, [][3]float64{{0, 19, -20}, {-12, 25, -22}, {-22, 30, -25}}, 0.6, "", false},    // R-AICA
	{25, [][3]float64{{0, 16, -5}, {-12, 22, -6}, {-22, 32, -8}}, 0.7, "", false},       // R-SCA
	{2, [][3]float64{{0, 15, 0}, {-8, 15, 1}}, 1.1, "R-P1", false},                      // R-P1P2, P1
	{2, [][3]float64{{-8, 15, 1}, {-20, 30, 4}}, 1.1, "", false},                        // R-P1P2, P2
	{21, [][3]float64{{-20, 30, 4}, {-30, 50, 8}, {-25, 70, 15}}, 0.9, "", false},       // R-P3P4
	{4, [][3]float64{{-15, 0, -40}, {-16, -2, -20}, {-15, -5, 2}}, 2.0, "", false},      // R-ICA
	{5, [][3]float64{{-15, -5, 2}, {-35, -5, 5}}, 1.4, "", false},                       // R-M1
	{17, [][3]float64{{-35, -5, 5}, {-45, 0, 15}, {-50, 5, 30}}, 1.0, "", false},        // R-M2
	{18, [][3]float64{{-50, 5, 30}, {-55, 15, 45}}, 0.8, "", false},                     // R-M3
	{8, [][3]float64{{-15, -3, -2}, {-8, 15, 1}}, 0.7, "R-Pcom", false},                 // R-Pcom
	{31, [][3]float64{{-15, -3, 0}, {-22, 5, 2}, {-25, 15, 5}}, 0.5, "", false},         // R-AChA
	{33, [][3]float64{{-15, -4, -5}, {-20, -25, -5}, {-25, -45, -3}}, 0.7, "", false},   // R-OA
	{11, [][3]float64{{-15, -5, 2}, {-3, -20, 4}}, 1.1, "R-A1", false},                  // R-A1A2, A1
	{11, [][3]float64{{-3, -20, 4}, {-3, -32, 18}}, 1.1, "", false},                     // R-A1A2, A2
	{13, [][3]float64{{-3, -32, 18}, {-3, -30, 40}, {-3, -10, 55}}, 0.9, "", false},     // R-A3
	{10, [][3]float64{{-3, -20, 4}, {3, -20, 4}}, 0.8, "Acom", false},                   // Acom
	{15, [][3]float64{{0, -20, 4}, {0, -32, 22}}, 0.8, "3rd-A2", false},                 // 3rd-A2
	{16, [][3]float64{{0, -32, 22}, {0, -28, 42}}, 0.7, "3rd-A2", false},                // 3rd-A3
	{35, [][3]float64{{-20, -5, -62}, {-28, -10, -45}}, 1.5, "mr", false},               // R-ECA (MR)
	{37, [][3]float64{{-28, -10, -45}, {-45, -5, -20}, {-55, 0, 10}}, 0.9, "mr", false}, // R-STA (MR)
	{39, [][3]float64{{-28, -10, -45}, {-35, -30, -50}}, 1.0, "mr", false},              // R-MaxA (MR)
	{41, [][3]float64{{-30, -15, -46}, {-40, -10, -25}, {-45, 5, 0}}, 0.8, "mr", false}, // R-MMA (MR)
	{37, [][3]float64{{0, 0, 20}, {0, 35, 22}}, 1.2, "ct", true},                        // ICVs (CT)
	{35, [][3]float64{{0, 35, 22}, {0, 42, 25}}, 2.0, "ct", true},                       // VoG (CT)
	{36, [][3]float64{{0, 42, 25}, {0, 60, 45}, {0, 75, 35}}, 2.5, "ct", true},          // StS (CT)
	{40, [][3]float64{{0, -60, 60}, {0, 0, 80}, {0, 70, 55}}, 3.0, "ct", true},          // SSS (CT)
	{38, [][3]float64{{-20, 10, 5}, {-12, 30, 15}, {0, 35, 22}}, 1.2, "ct", true},       // R-BVR (CT)
}

// Left labels of the right-sided TopBrain labels, common to CT and MR, then per modality.
var (
	mirrorCommon = map[int]int{2: 3, 4: 6, 5: 7, 8: 9, 11: 12, 13: 14, 17: 19, 18: 20, 21: 22, 23: 24, 25: 26, 27: 28, 29: 30, 31: 32, 33: 34}
	mirrorCT     = map[int]int{38: 39}
	mirrorMR     = map[int]int{35: 36, 37: 38, 39: 40, 41: 42}
)

// topcowOf maps a TopBrain label to the TopCoW label of the same vessel (0: not a Circle of
// Willis vessel).
var topcowOf = map[int]uint8{1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9, 10: 10, 11: 11, 12: 12, 15: 15}

// The Circle of Willis edges of TopCoW's classification, in the graders' order.
var (
	cowAnterior  = []string{"L-A1", "Acom", "3rd-A2", "R-A1"}
	cowPosterior = []string{"L-Pcom", "L-P1", "R-P1", "R-Pcom"}
)

// cowEdges draws a Circle of Willis variant: each edge present or absent with its
// population frequency, an absent P1 or A1 always compensated by its Pcom or the Acom.
func cowEdges(rng *rand.Rand) map[string]bool {
	e := map[string]bool{}
	p := map[string]float64{"L-A1": 0.92, "R-A1": 0.92, "Acom": 0.8, "3rd-A2": 0.15, "L-Pcom": 0.45, "R-Pcom": 0.45, "L-P1": 0.88, "R-P1": 0.88}
	for _, k := range append(append([]string{}, cowAnterior...), cowPosterior...) {
		e[k] = rng.Float64() < p[k]
	}
	for _, s := range []string{"L-", "R-"} {
		if !e[s+"P1"] {
			e[s+"Pcom"] = true
		}
		if !e[s+"A1"] {
			e["Acom"] = true
		}
	}
	return e
}

// vesselTree returns the case's vessels for the modality: the template mirrored to the
// left, without the pieces of absent edges, moved by a small random rotation, scaling and
// shift, with jittered centre lines.
func vesselTree(rng *rand.Rand, mr bool, edges map[string]bool) []vessel {
	theta := uniform(rng, -8, 8) * math.Pi / 180
	scale := uniform(rng, 0.92, 1.08)
	shift := [3]float64{uniform(rng, -5, 5), uniform(rng, -5, 5), uniform(rng, -5, 5)}
	move := func(p [3]float64) [3]float64 {
		c, s := math.Cos(theta), math.Sin(theta)
		return [3]float64{scale*(c*p[0]-s*p[1]) + shift[0], scale*(s*p[0]+c*p[1]) + shift[1], scale*p[2] + shift[2]}
	}
	mirror := mirrorCT
	if mr {
		mirror = mirrorMR
	}
	var out []vessel
	add := func(v vessel) {
		if v.edge != "" && v.edge != "ct" && v.edge != "mr" && !edges[v.edge] {
			return
		}
		pts := make([][3]float64, len(v.pts))
		for k, p := range v.pts {
			if k > 0 && k < len(v.pts)-1 {
				for a := range 3 {
					p[a] += uniform(rng, -1.5, 1.5)
				}
			}
			pts[k] = move(p)
		}
		v.pts = pts
		out = append(out, v)
	}
	for _, v := range arteries {
		if (v.edge == "ct" && mr) || (v.edge == "mr" && !mr) {
			continue
		}
		add(v)
		left, ok := mirrorCommon[v.label]
		if !ok {
			left, ok = mirror[v.label]
		}
		if !ok {
			continue
		}
		m := vessel{label: left, r: v.r, edge: strings.Replace(v.edge, "R-", "L-", 1), vein: v.vein}
		for _, p := range v.pts {
			m.pts = append(m.pts, [3]float64{-p[0], p[1], p[2]})
		}
		add(m)
	}
	return out
}

// headCTA returns the HU of a point of a contrast CT angiogram's head without vessels
// (head centred at (0, 10, 20) mm from the Circle of Willis).
func headCTA(p [3]float64) float64 {
	c := [3]float64{0, 10, 20}
	switch r := ellipsoidR(p, c, [3]float64{76, 96, 78}); {
	case r > 1:
		return -1000
	case r > 0.95:
		return 40
	case r > 0.89:
		return 1100
	}
	for _, s := range []float64{-1, 1} {
		if ellipsoidR(p, [3]float64{s * 9, 5, 25}, [3]float64{6, 24, 10}) < 1 {
			return 5
		}
	}
	return 34
}

// headTOF is the signal of a time-of-flight MR angiogram's head without vessels: stationary
// tissue suppressed, fat bright.
func headTOF(p [3]float64) float64 {
	c := [3]float64{0, 10, 20}
	switch r := ellipsoidR(p, c, [3]float64{76, 96, 78}); {
	case r > 1:
		return 0
	case r > 0.95:
		return 260
	case r > 0.89:
		return 25
	}
	for _, s := range []float64{-1, 1} {
		if ellipsoidR(p, [3]float64{s * 9, 5, 25}, [3]float64{6, 24, 10}) < 1 {
			return 40
		}
	}
	return 110
}

// vesselCase draws one head angiogram: the image (int16; CT in HU, MR in TOF signal) and
// its TopBrain label map on the same grid.
func vesselCase(g grid, rng *rand.Rand, mr bool, edges map[string]bool) (*volume.Volume, []uint8, error) {
	img, err := g.volume(volume.Int16)
	if err != nil {
		return nil, nil, err
	}
	head := headCTA
	artery, vein, sigma := uniform(rng, 300, 420), uniform(rng, 180, 240), 12.0
	if mr {
		head = headTOF
		artery, vein, sigma = uniform(rng, 560, 720), 0, 15
	}
	g.each(func(k int, p [3]float64) { img.SetIndex(k, head(p)) })
	lab := make([]uint8, g.n())
	minR := 0.75 * g.maxSpacing()
	for _, v := range vesselTree(rng, mr, edges) {
		val := artery
		if v.vein {
			val = vein
		}
		l := uint8(v.label)
		g.tube(v.pts, math.Max(v.r, minR), func(k int) {
			img.SetIndex(k, val)
			lab[k] = l
		})
	}
	addNoise(img, sigma, mr, rng)
	return img, lab, nil
}

// What a vessel challenge asks for.
const (
	vesselBrain    = iota // TopBrain: every vessel label
	vesselCoWSeg          // TopCoW task 1: Circle of Willis labels
	vesselCoWBox          // TopCoW task 2: the Circle of Willis region
	vesselCoWEdges        // TopCoW task 3: the Circle of Willis edges
)

// genVessels writes a TopBrain or TopCoW challenge: ids 001, 002, …, images
// topcow_<ct|mr>_<id>_0000.nii.gz in train/images and test/images, and per task the labels
// topcow_<ct|mr>_<id>.nii.gz (TopBrain or TopCoW label map), .txt (region of interest) or
// .yml (edges) in train/labels; private/test/labels holds the test labels, the region as
// topcow_<ct|mr>_<id>_bbox.json as ReX's prepare.py converts it.
func genVessels(d *dataset, mr bool, what int) error {
	tag, modality := "ct", "CTA"
	dims, fov := [3]int{48, 48, 48}, [3]float64{150, 150, 150}
	if d.opt.Real {
		dims, fov = [3]int{512, 512, 256}, [3]float64{230, 230, 180}
	}
	if mr {
		tag, modality = "mr", "MRA"
		if d.opt.Real {
			dims, fov = [3]int{576, 576, 160}, [3]float64{200, 200, 96}
		}
	}
	g := newGrid(dims, fov, [3]float64{0, 5, 10})
	d.answerHeader = []string{"image_id", "image_path", "label_path", "modality"}
	d.leaderboard = true
	for i := range d.n() {
		id := fmt.Sprintf("%03d", i+1)
		base := "topcow_" + tag + "_" + id
		rng := d.rng(i)
		edges := cowEdges(rng)
		img, lab, err := vesselCase(g, rng, mr, edges)
		if err != nil {
			return err
		}
		sp := d.caseSplit(i)
		if err := writeImage(d.pub, sp+"/images/"+base+"_0000.nii.gz", img); err != nil {
			return err
		}
		root, dir := d.pub, "train/labels/"
		if d.isTest[i] {
			root, dir = d.priv, "test/labels/"
		}
		var labelRel string
		switch what {
		case vesselBrain, vesselCoWSeg:
			v, err := g.volume(volume.Uint8)
			if err != nil {
				return err
			}
			out := v.Data.([]uint8)
			for k, l := range lab {
				if what == vesselBrain {
					out[k] = l
				} else {
					out[k] = topcowOf[int(l)]
				}
			}
			labelRel = dir + base + ".nii.gz"
			if err := writeImage(root, labelRel, v); err != nil {
				return err
			}
		case vesselCoWBox:
			size, loc := cowBox(g, lab)
			if d.isTest[i] {
				labelRel = dir + base + "_bbox.json"
				err = writeJSON(root, labelRel, map[string][]int{"size": size[:], "location": loc[:]})
			} else {
				labelRel = dir + base + ".txt"
				err = writeFile(root, labelRel, []byte(fmt.Sprintf("--- ROI Meta Data ---\nSize (Voxels): %d %d %d\nLocation (Voxels): %d %d %d\n",
					size[0], size[1], size[2], loc[0], loc[1], loc[2])))
			}
			if err != nil {
				return err
			}
		case vesselCoWEdges:
			labelRel = dir + base + ".yml"
			if err := writeFile(root, labelRel, []byte(edgesYAML(edges))); err != nil {
				return err
			}
		}
		if d.isTest[i] {
			d.answer(id, "test/images/"+base+"_0000.nii.gz", labelRel, modality)
		}
	}
	return nil
}

// cowBox is the Circle of Willis region: the bounding box of the TopCoW-labelled voxels
// grown by 2 voxels a side and kept inside the image, as size and 0-based minimum corner.
func cowBox(g grid, lab []uint8) (size, loc [3]int) {
	lo := g.dims
	hi := [3]int{-1, -1, -1}
	i := 0
	for z := 0; z < g.dims[2]; z++ {
		for y := 0; y < g.dims[1]; y++ {
			for x := 0; x < g.dims[0]; x++ {
				if topcowOf[int(lab[i])] != 0 {
					c := [3]int{x, y, z}
					for a := range 3 {
						lo[a], hi[a] = min(lo[a], c[a]), max(hi[a], c[a])
					}
				}
				i++
			}
		}
	}
	for a := range 3 {
		if hi[a] < 0 { // no Circle of Willis voxel: the whole image
			lo[a], hi[a] = 0, g.dims[a]-1
		}
		lo[a], hi[a] = max(0, lo[a]-2), min(g.dims[a]-1, hi[a]+2)
		loc[a], size[a] = lo[a], hi[a]-lo[a]+1
	}
	return size, loc
}

// edgesYAML writes the edge list as TopCoW's antpos_edges files do.
func edgesYAML(e map[string]bool) string {
	var b strings.Builder
	for _, part := range []struct {
		name string
		keys []string
	}{{"anterior", cowAnterior}, {"posterior", cowPosterior}} {
		b.WriteString(part.name + ":\n")
		for _, k := range part.keys {
			v := 0
			if e[k] {
				v = 1
			}
			fmt.Fprintf(&b, "    %-8s %d\n", k+":", v)
		}
	}
	return b.String()
}
