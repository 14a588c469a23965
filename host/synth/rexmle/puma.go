package rexmle

import (
	"fmt"
	"math"
	"math/rand/v2"

	"amid/viewer/volume"
)

func init() {
	register("puma-track1-task1", func(d *dataset) error { return genPUMA(d, pumaTissue, 1) })
	register("puma-track2-task1", func(d *dataset) error { return genPUMA(d, pumaTissue, 2) })
	register("puma-track1-task2", func(d *dataset) error { return genPUMA(d, pumaNuclei, 1) })
	register("puma-track2-task2", func(d *dataset) error { return genPUMA(d, pumaNuclei, 2) })
}

// What a PUMA challenge asks for.
const (
	pumaTissue = iota
	pumaNuclei
)

// PUMA tissue classes: the value each has in a tissue mask (white background is 0),
// the raw GeoJSON name and the H&E colour of the region.
var pumaTissues = []struct {
	value uint8
	name  string
	rgb   [3]float64
}{
	{0, "tissue_white_background", [3]float64{244, 242, 246}},
	{1, "tissue_stroma", [3]float64{236, 168, 200}},
	{2, "tissue_blood_vessel", [3]float64{222, 88, 104}},
	{3, "tissue_tumor", [3]float64{212, 158, 206}},
	{4, "tissue_epidermis", [3]float64{204, 138, 188}},
	{5, "tissue_necrosis", [3]float64{240, 206, 222}},
}

// Indexes into pumaTissues.
const (
	tWhite = iota
	tStroma
	tVessel
	tTumor
	tEpidermis
	tNecrosis
)

// PUMA nucleus classes: raw GeoJSON name, semi-axes in pixels at 40×, haematoxylin colour,
// and the track 1 and track 2 names ReX's prepare.py gives them in the private answers.
var pumaNucleiClasses = []struct {
	name   string
	rx, ry float64
	rgb    [3]float64
	t1, t2 string
}{
	{"nuclei_tumor", 7, 6, [3]float64{122, 72, 152}, "tumor", "tumor"},
	{"nuclei_lymphocyte", 4, 4, [3]float64{58, 28, 92}, "TILs", "lymphocytes"},
	{"nuclei_plasma_cell", 5, 4, [3]float64{92, 50, 124}, "TILs", "plasma_cells"},
	{"nuclei_histiocyte", 6, 5, [3]float64{156, 116, 176}, "other", "histiocytes"},
	{"nuclei_melanophage", 6, 6, [3]float64{112, 76, 40}, "other", "melanophages"},
	{"nuclei_neutrophil", 4, 3.5, [3]float64{80, 40, 112}, "other", "neutrophils"},
	{"nuclei_stroma", 7, 2.5, [3]float64{100, 60, 132}, "other", "stromal_cells"},
	{"nuclei_epithelium", 5, 4.5, [3]float64{110, 66, 142}, "other", "epithelium"},
	{"nuclei_endothelium", 6, 2, [3]float64{96, 56, 126}, "other", "endothelium"},
	{"nuclei_apoptosis", 3, 3, [3]float64{70, 22, 62}, "other", "apoptotic_cells"},
}

// pumaMix is, per tissue index, the density of nuclei (per 1000 px²) and the weight of
// each nucleus class (pumaNucleiClasses order).
var pumaMix = [][11]float64{
	tWhite:     {0},
	tStroma:    {1.6, 0, 0.25, 0.1, 0.1, 0.08, 0.04, 0.35, 0, 0.08, 0},
	tVessel:    {2, 0, 0.15, 0, 0, 0, 0.15, 0, 0, 0.7, 0},
	tTumor:     {4, 0.8, 0.08, 0.03, 0.04, 0.03, 0.02, 0, 0, 0, 0},
	tEpidermis: {5, 0, 0.1, 0, 0, 0, 0, 0, 0.9, 0, 0},
	tNecrosis:  {2.5, 0.1, 0, 0, 0, 0, 0.3, 0, 0, 0, 0.6},
}

// geoFeature is a GeoJSON feature as the PUMA annotation files (QuPath exports) hold them.
type geoFeature struct {
	Type       string      `json:"type"`
	ID         string      `json:"id"`
	Geometry   geoGeometry `json:"geometry"`
	Properties geoProps    `json:"properties"`
}

type geoGeometry struct {
	Type        string         `json:"type"`
	Coordinates [][][2]float64 `json:"coordinates"`
}

type geoProps struct {
	ObjectType     string   `json:"objectType"`
	Classification geoClass `json:"classification"`
}

type geoClass struct {
	Name  string `json:"name"`
	Color [3]int `json:"color"`
}

type geoCollection struct {
	Type     string       `json:"type"`
	Features []geoFeature `json:"features"`
}

// pumaPolygon is one entry of the private nuclei answers.
type pumaPolygon struct {
	Name       string       `json:"name"`
	PathPoints [][2]float64 `json:"path_points"`
	Score      float64      `json:"score"`
}

func feature(rng *rand.Rand, name string, rgb [3]float64, ring [][2]float64) geoFeature {
	closed := make([][2]float64, 0, len(ring)+1)
	for _, q := range ring {
		closed = append(closed, [2]float64{math.Round(q[0]*10) / 10, math.Round(q[1]*10) / 10})
	}
	closed = append(closed, closed[0])
	return geoFeature{
		Type:       "Feature",
		ID:         fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<12), rng.IntN(1<<12), rng.Uint64()&(1<<48-1)),
		Geometry:   geoGeometry{Type: "Polygon", Coordinates: [][][2]float64{closed}},
		Properties: geoProps{ObjectType: "annotation", Classification: geoClass{Name: name, Color: [3]int{int(rgb[0]), int(rgb[1]), int(rgb[2])}}},
	}
}

// genPUMA writes a PUMA challenge: H&E tiles train/images/<id>.tif (RGBA) with
// train/labels/<id>_tissue.geojson or <id>_nuclei.geojson, test/images, and the private
// answers as ReX's prepare.py converts them: tissue masks test/labels/<id>.tif (values
// 0–5) or nucleus lists test/labels/<id>_nuclei.json with the track's class names. Ids are
// training_set_primary_roi_NNN and training_set_metastatic_roi_NNN.
func genPUMA(d *dataset, what, track int) error {
	w := 128
	if d.opt.Real {
		w = 1024
	}
	d.answerHeader = []string{"case_id", "image_path", "label_path"}
	for i := range d.n() {
		kind := "primary"
		if i%2 == 1 {
			kind = "metastatic"
		}
		id := fmt.Sprintf("training_set_%s_roi_%03d", kind, i/2+1)
		rng := d.rng(i)
		tile, err := pumaCase(rng, w, kind == "primary")
		if err != nil {
			return err
		}
		sp := d.caseSplit(i)
		if err := writeImage(d.pub, sp+"/images/"+id+".tif", tile.img); err != nil {
			return err
		}
		if !d.isTest[i] {
			switch what {
			case pumaTissue:
				err = writeJSON(d.pub, "train/labels/"+id+"_tissue.geojson", geoCollection{"FeatureCollection", tile.tissue})
			case pumaNuclei:
				err = writeJSON(d.pub, "train/labels/"+id+"_nuclei.geojson", geoCollection{"FeatureCollection", tile.nuclei})
			}
			if err != nil {
				return err
			}
			continue
		}
		var rel string
		switch what {
		case pumaTissue:
			rel = "test/labels/" + id + ".tif"
			m, err := fromPlanes(volume.Uint8, tile.mask)
			if err != nil {
				return err
			}
			err = writeImage(d.priv, rel, m)
			if err != nil {
				return err
			}
		case pumaNuclei:
			rel = "test/labels/" + id + "_nuclei.json"
			polys := make([]pumaPolygon, 0, len(tile.nuclei))
			for k, f := range tile.nuclei {
				name := pumaNucleiClasses[tile.nucleusClass[k]].t1
				if track == 2 {
					name = pumaNucleiClasses[tile.nucleusClass[k]].t2
				}
				polys = append(polys, pumaPolygon{Name: name, PathPoints: f.Geometry.Coordinates[0], Score: 1})
			}
			if err := writeJSON(d.priv, rel, map[string][]pumaPolygon{"polygons": polys}); err != nil {
				return err
			}
		}
		d.answer(id, "test/images/"+id+".tif", rel)
	}
	return nil
}

// pumaTile is one generated H&E tile with its annotations.
type pumaTile struct {
	img          *volume.Volume
	mask         *plane       // tissue mask values 0–5
	tissue       []geoFeature // tissue polygons, in drawing order
	nuclei       []geoFeature // nucleus polygons
	nucleusClass []int        // per nucleus, its pumaNucleiClasses index
}

// pumaCase draws a w×w tile: tissue regions as polygons (stroma everywhere, then white
// background, epidermis on primary tumours, tumour nests, necrosis inside a nest, blood
// vessels), rasterised in file order as ReX rasterises them, coloured as H&E, then nuclei
// whose class follows the region and whose size and colour follow the class.
func pumaCase(rng *rand.Rand, w int, primary bool) (*pumaTile, error) {
	W := float64(w)
	t := &pumaTile{mask: newPlane(w, w, 0)}
	region := make([]int, w*w) // tissue index per pixel
	add := func(ti int, ring [][2]float64) {
		t.tissue = append(t.tissue, feature(rng, pumaTissues[ti].name, pumaTissues[ti].rgb, ring))
		fillPolygon(w, w, ring, func(k int) { region[k] = ti })
	}
	add(tStroma, [][2]float64{{0, 0}, {W, 0}, {W, W}, {0, W}})
	if rng.Float64() < 0.3 {
		c := [2]float64{W * float64(rng.IntN(2)), W * float64(rng.IntN(2))}
		add(tWhite, ellipsePoly(c[0], c[1], uniform(rng, 0.2, 0.4)*W, uniform(rng, 0.2, 0.4)*W, 0, 0.15, 16, rng))
	}
	if primary && rng.Float64() < 0.7 {
		var ring [][2]float64
		ph := uniform(rng, 0, 2*math.Pi)
		for k := 0; k <= 16; k++ {
			x := W * float64(k) / 16
			ring = append(ring, [2]float64{x, W * (0.14 + 0.05*math.Sin(ph+6*x/W))})
		}
		ring = append(ring, [2]float64{W, 0}, [2]float64{0, 0})
		add(tEpidermis, ring)
	}
	var nests [][2]float64
	for k := 0; k < 1+rng.IntN(2); k++ {
		c := [2]float64{uniform(rng, 0.3, 0.7) * W, uniform(rng, 0.35, 0.75) * W}
		nests = append(nests, c)
		add(tTumor, ellipsePoly(c[0], c[1], uniform(rng, 0.18, 0.32)*W, uniform(rng, 0.15, 0.3)*W, uniform(rng, 0, math.Pi), 0.2, 18, rng))
	}
	if rng.Float64() < 0.4 {
		c := nests[0]
		add(tNecrosis, ellipsePoly(c[0], c[1], uniform(rng, 0.06, 0.1)*W, uniform(rng, 0.06, 0.1)*W, 0, 0.2, 12, rng))
	}
	for k := 0; k < 1+rng.IntN(3); k++ {
		add(tVessel, ellipsePoly(uniform(rng, 0.1, 0.9)*W, uniform(rng, 0.1, 0.9)*W, uniform(rng, 0.04, 0.07)*W, uniform(rng, 0.03, 0.05)*W, uniform(rng, 0, math.Pi), 0.1, 12, rng))
	}
	// Colour the regions with a smooth stain variation.
	ch := [3]*plane{newPlane(w, w, 0), newPlane(w, w, 0), newPlane(w, w, 0)}
	stain := newPlane(w, w, 0)
	for k := range stain.pix {
		stain.pix[k] = rng.NormFloat64()
	}
	stain.blur(3)
	for k, ti := range region {
		t.mask.pix[k] = float64(pumaTissues[ti].value)
		for c := range 3 {
			ch[c].pix[k] = pumaTissues[ti].rgb[c] + 60*stain.pix[k]
		}
	}
	// Nuclei, away from each other, classes drawn from the region's mix.
	type disc struct{ x, y, r float64 }
	var placed []disc
	tries := int(W * W / 1000 * 6) // expected nuclei: density × area / 1000 before overlaps
	for range tries {
		x, y := uniform(rng, 2, W-2), uniform(rng, 2, W-2)
		ti := region[int(y)*w+int(x)]
		mix := pumaMix[ti]
		if rng.Float64()*6 >= mix[0] {
			continue
		}
		u := rng.Float64()
		cls := 0
		for k := 1; k < len(mix); k++ {
			if u -= mix[k]; u < 0 {
				cls = k - 1
				break
			}
		}
		nc := pumaNucleiClasses[cls]
		free := true
		for _, q := range placed {
			if math.Hypot(q.x-x, q.y-y) < q.r+nc.rx {
				free = false
				break
			}
		}
		if !free {
			continue
		}
		placed = append(placed, disc{x, y, nc.rx})
		ring := ellipsePoly(x, y, nc.rx, nc.ry, uniform(rng, 0, math.Pi), 0.12, 10, rng)
		t.nuclei = append(t.nuclei, feature(rng, nc.name, nc.rgb, ring))
		t.nucleusClass = append(t.nucleusClass, cls)
		fillPolygon(w, w, ring, func(k int) {
			for c := range 3 {
				ch[c].pix[k] = 0.15*ch[c].pix[k] + 0.85*nc.rgb[c]
			}
		})
	}
	alpha := newPlane(w, w, 255)
	for c := range 3 {
		ch[c].blur(0.6)
		for k := range ch[c].pix {
			ch[c].pix[k] += 4 * rng.NormFloat64()
		}
	}
	img, err := fromPlanes(volume.Uint8, ch[0], ch[1], ch[2], alpha)
	if err != nil {
		return nil, err
	}
	t.img = img
	return t, nil
}
