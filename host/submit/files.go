package submit

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// image writes an image prediction to dst on the grid of the case's first input image.
func (w *writer) image(p Prediction, dst string) error {
	if len(p.Images) == 0 {
		return fail("case %s has no input image to take the geometry from", p.CaseID)
	}
	v, err := imageio.Read(p.File)
	if err != nil {
		return fail("case %s: the prediction cannot be read: %v", p.CaseID, err)
	}
	ref, err := imageio.Read(p.Images[0])
	if err != nil {
		return fmt.Errorf("submit: case %s: input image: %w", p.CaseID, err)
	}
	if v.Dims[0] != ref.Dims[0] || v.Dims[1] != ref.Dims[1] || v.Dims[2] != ref.Dims[2] {
		return fail("case %s: the prediction %s is %s but the input image %s is %s",
			p.CaseID, p.File, dimText(v.Dims), p.Images[0], dimText(ref.Dims))
	}
	v.Spacing, v.Origin, v.Direction = ref.Spacing, ref.Origin, ref.Direction
	low := strings.ToLower(dst)
	raster8 := strings.HasSuffix(low, ".png") || strings.HasSuffix(low, ".bmp")
	if w.t.Kind == taskspec.Segmentation {
		if v, err = w.labels(p, v, raster8); err != nil {
			return err
		}
	} else if raster8 {
		if t := v.DType(); t != volume.Uint8 && t != volume.Uint16 {
			v = toUint8(v)
		}
	}
	if err := imageio.Write(dst, v); err != nil {
		return fmt.Errorf("submit: case %s: %w", p.CaseID, err)
	}
	return nil
}

func dimText(d [4]int) string {
	if d[2] == 1 {
		return fmt.Sprintf("%d×%d", d[0], d[1])
	}
	return fmt.Sprintf("%d×%d×%d", d[0], d[1], d[2])
}

// labels checks a segmentation and stores it in the smallest integer type that holds it
// (unsigned for PNG).
func (w *writer) labels(p Prediction, v *volume.Volume, unsigned bool) (*volume.Volume, error) {
	if v.Dims[3] != 1 {
		return nil, fail("case %s: the prediction %s has %d channels; a label image has one", p.CaseID, p.File, v.Dims[3])
	}
	allowed := map[int64]bool{}
	for _, l := range w.t.Labels {
		allowed[int64(l.Value)] = true
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, f := range distinct(v) {
		switch {
		case f != math.Trunc(f) || math.IsInf(f, 0):
			return nil, fail("case %s: the prediction %s holds %g; labels are integers", p.CaseID, p.File, f)
		case w.t.Instances && f < 0:
			return nil, fail("case %s: the prediction %s holds %g; instance ids are not negative", p.CaseID, p.File, f)
		case !w.t.Instances && !allowed[int64(f)]:
			return nil, fail("case %s: the prediction %s holds %g, which is not among the task's labels", p.CaseID, p.File, f)
		}
		lo, hi = math.Min(lo, f), math.Max(hi, f)
	}
	var t volume.DType
	switch {
	case lo >= 0 && hi <= math.MaxUint8:
		t = volume.Uint8
	case lo >= 0 && hi <= math.MaxUint16:
		t = volume.Uint16
	case unsigned:
		return nil, fail("case %s: the prediction holds values from %g to %g, which an 8- or 16-bit image cannot", p.CaseID, lo, hi)
	case lo >= math.MinInt16 && hi <= math.MaxInt16:
		t = volume.Int16
	case lo >= math.MinInt32 && hi <= math.MaxInt32:
		t = volume.Int32
	default:
		return nil, fail("case %s: the prediction holds values from %g to %g, beyond 32-bit labels", p.CaseID, lo, hi)
	}
	if v.DType() == t {
		return v, nil
	}
	out := &volume.Volume{Dims: v.Dims, Spacing: v.Spacing, Origin: v.Origin, Direction: v.Direction, Data: volume.MakeData(t, v.Len())}
	for i, n := 0, v.Len(); i < n; i++ {
		out.SetIndex(i, v.AtIndex(i))
	}
	return out, nil
}

// distinct lists the distinct values of v: counted densely for 8- and 16-bit data,
// through a set (skipping runs of one value) otherwise.
func distinct(v *volume.Volume) []float64 {
	if counts, ok := v.Labels(1 << 16); ok {
		out := make([]float64, len(counts))
		for i, c := range counts {
			out[i] = float64(c.Value)
		}
		return out
	}
	set := map[float64]bool{}
	var out []float64
	last := math.NaN()
	for i, n := 0, v.Len(); i < n; i++ {
		f := v.AtIndex(i)
		if math.IsNaN(f) {
			return append(out, f)
		}
		if f == last || set[f] {
			continue
		}
		last = f
		set[f] = true
		out = append(out, f)
	}
	return out
}

// toUint8 rounds and clamps an image to 0–255, for 8-bit formats.
func toUint8(v *volume.Volume) *volume.Volume {
	out := &volume.Volume{Dims: v.Dims, Spacing: v.Spacing, Origin: v.Origin, Direction: v.Direction, Data: make([]uint8, v.Len())}
	for i, n := 0, v.Len(); i < n; i++ {
		out.SetIndex(i, v.AtIndex(i))
	}
	return out
}

// annotation writes an annotation prediction in AMID's annotation JSON or the challenge's.
func (w *writer) annotation(p Prediction, dst string) error {
	a, err := taskspec.ReadAnnotation(p.File, w.spec)
	if err != nil {
		return fail("case %s: %v", p.CaseID, err)
	}
	if w.format == FormatAnnotation {
		b, err := a.Marshal()
		if err != nil {
			return fail("case %s: %v", p.CaseID, err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return fmt.Errorf("submit: %w", err)
		}
		return nil
	}
	if w.format == FormatYOLO || w.format == FormatVOC {
		b, err := w.boxFile(p, a)
		if err != nil {
			return fail("case %s: %s: %v", p.CaseID, p.File, err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return fmt.Errorf("submit: %w", err)
		}
		return nil
	}
	var doc any
	switch w.format {
	case FormatDENTEX:
		doc, err = w.dentex(p.CaseID, a)
	case FormatPUMA:
		doc = puma(a)
	case FormatTopCoWBox:
		if a.Box3D == nil {
			return fail("case %s: %s has no 3D box", p.CaseID, p.File)
		}
		doc = map[string][3]int{"size": a.Box3D.Size, "location": a.Box3D.Min}
	case FormatTopCoWEdge:
		doc, err = w.edges(a)
	}
	if err != nil {
		return fail("case %s: %s: %v", p.CaseID, p.File, err)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fail("case %s: %v", p.CaseID, err)
	}
	if err := os.WriteFile(dst, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("submit: %w", err)
	}
	return nil
}

// dentexDet is one detection as the DENTEX grader reads it.
type dentexDet struct {
	ImageID string     `json:"image_id"`
	BBox    [4]float64 `json:"bbox"`
	Cat1    int        `json:"category_id_1"`
	Cat2    int        `json:"category_id_2"`
	Cat3    int        `json:"category_id_3"`
	Score   float64    `json:"score"`
}

// dentex lists the boxes of image id. The attributes are the task's three in order
// (category_id_1, _2, _3), each written as its class index. Boxes are clipped to the
// image's non-negative quadrant, and a box the grader would take for [x1, y1, x2, y2] (its
// width above x and height above y, one of them by more than 50) is written in that form,
// so that the grader's conversion gives it back.
func (w *writer) dentex(id string, a *taskspec.Annotation) ([]dentexDet, error) {
	if len(w.t.Attributes) != 3 {
		return nil, fmt.Errorf("the task has %d box attributes; DENTEX has 3", len(w.t.Attributes))
	}
	out := []dentexDet{}
	for i, b := range a.Boxes {
		var cat [3]int
		for k, at := range w.t.Attributes {
			c, ok := b.Attrs[at.Name]
			if !ok {
				return nil, fmt.Errorf("box %d has no %s", i, at.Name)
			}
			cat[k] = c
		}
		x, y := math.Max(b.X, 0), math.Max(b.Y, 0)
		bw, bh := b.X+b.W-x, b.Y+b.H-y
		if bw <= 0 || bh <= 0 {
			continue // wholly outside the image
		}
		box := [4]float64{x, y, bw, bh}
		if bw > x && bh > y && (bw > x+50 || bh > y+50) {
			box = [4]float64{x, y, x + bw, y + bh}
		}
		out = append(out, dentexDet{ImageID: id, BBox: box, Cat1: cat[0], Cat2: cat[1], Cat3: cat[2], Score: b.Score})
	}
	w.detections += len(out)
	return out, nil
}

// pumaNucleus is one detection as the PUMA graders read it.
type pumaNucleus struct {
	Centroid   [2]float64 `json:"centroid"`
	Class      string     `json:"class"`
	Confidence float64    `json:"confidence"`
}

func puma(a *taskspec.Annotation) map[string][]pumaNucleus {
	out := make([]pumaNucleus, len(a.Points))
	for i, p := range a.Points {
		out[i] = pumaNucleus{Centroid: [2]float64{p.X, p.Y}, Class: p.Class, Confidence: p.Score}
	}
	return map[string][]pumaNucleus{"nuclei": out}
}

// edges groups the classes by the attributes' groups (anterior, posterior), each class
// written as its value: the class name when it is a number ("0", "1"), else its index.
func (w *writer) edges(a *taskspec.Annotation) (map[string]map[string]int, error) {
	out := map[string]map[string]int{}
	for _, at := range w.t.Attributes {
		if at.Group == "" {
			return nil, fmt.Errorf("attribute %s has no group (anterior or posterior)", at.Name)
		}
		c, ok := a.Classes[at.Name]
		if !ok {
			return nil, fmt.Errorf("it has no class for %s", at.Name)
		}
		v := c
		if n, err := strconv.Atoi(at.Classes[c]); err == nil {
			v = n
		}
		if out[at.Group] == nil {
			out[at.Group] = map[string]int{}
		}
		out[at.Group][at.Name] = v
	}
	return out, nil
}
