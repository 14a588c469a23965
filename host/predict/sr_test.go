package predict

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"amid/assets/fileio"
	"amid/host/export"
	"amid/host/synth"
	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/dicom/dicomtest"
	"amid/viewer/dicom/source"
	"amid/viewer/dicom/sr"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// Tasks of each kind SR and Derived write, as a task file gives them. The detection is
// DENTEX's (its attributes) with one coded label, so that a box's finding is that label.
var (
	detection = &task.Task{ID: "teeth", Kind: taskspec.Detection, Dims: 2,
		Attributes: []taskspec.Attribute{{Name: "quadrant", Classes: []string{"1", "2", "3", "4"}}, {Name: "diagnosis", Classes: []string{"Impacted", "Caries"}}},
		Labels: []taskspec.Label{{Value: 0, Name: "background"}, {Value: 1, Name: "abnormal tooth",
			Code: taskspec.Code{Scheme: "SCT", Value: "710582000", Meaning: "Abnormal tooth"}}}}
	classification = &task.Task{ID: "cow", Kind: taskspec.Classification, Dims: 3,
		Attributes: []taskspec.Attribute{{Name: "Acom", Classes: []string{"0", "1"}}, {Name: "R-P1", Classes: []string{"0", "1"}}},
		// A class named as a coded label takes the label's code.
		Labels: []taskspec.Label{{Value: 1, Name: "1", Code: taskspec.Code{Scheme: "SCT", Value: "52101004", Meaning: "Present"}}}}
	quality     = &task.Task{ID: "ldct", Kind: taskspec.IQA, Dims: 2, Score: &taskspec.ScoreRange{Min: 0, Max: 4, Step: 0.2}}
	enhancement = &task.Task{ID: "enhance", Kind: taskspec.Enhancement, Dims: 2}
)

// TestSRReport: each kind's prediction becomes the report's findings, coded answers and
// numbers, codes taken from the task's labels where it has them.
func TestSRReport(t *testing.T) {
	score := 2.4
	conf := 0.75
	a := &taskspec.Annotation{
		Boxes:  []taskspec.Box{{X: 1, Y: 2, W: 3, H: 4, Score: 0.5, Attrs: map[string]int{"quadrant": 1, "diagnosis": 1}}},
		Points: []taskspec.Point{{X: 5, Y: 6, Class: "1", Score: 0.25}},
	}
	r, err := SRReport(detection, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	tooth := sr.Code{Value: "710582000", Scheme: "SCT", Meaning: "Abnormal tooth"}
	if len(r.Findings) != 2 || r.Findings[0].Type != tooth || *r.Findings[0].Rect != (sr.Rect{X: 1, Y: 2, W: 3, H: 4}) || *r.Findings[0].Score != 0.5 {
		t.Fatalf("findings %+v", r.Findings)
	}
	wantAttrs := []sr.Evaluation{
		{Name: OwnAttribute("quadrant"), Value: OwnAttributeClass("quadrant", "2")},
		{Name: OwnAttribute("diagnosis"), Value: OwnAttributeClass("diagnosis", "Caries")},
	}
	if !slices.Equal(r.Findings[0].Attributes, wantAttrs) {
		t.Errorf("attributes %+v, want %+v", r.Findings[0].Attributes, wantAttrs)
	}
	if p := r.Findings[1]; *p.Point != [2]float64{5, 6} || p.Type != OwnClass("1") || *p.Score != 0.25 {
		t.Errorf("point %+v", p)
	}
	box3d := &taskspec.Annotation{Box3D: &taskspec.Box3D{Min: [3]int{1, 2, 3}, Size: [3]int{4, 5, 6}}}
	if r, err := SRReport(detection, box3d, &conf); err != nil || *r.Findings[0].Box != (sr.Box{Min: [3]int{1, 2, 3}, Size: [3]int{4, 5, 6}}) || r.Findings[0].Score != &conf {
		t.Errorf("3D box: %+v, %v", r, err)
	}

	one := &task.Task{Kind: taskspec.Classification, Attributes: classification.Attributes[:1]}
	r, err = SRReport(one, &taskspec.Annotation{Classes: map[string]int{"Acom": 0}}, &conf)
	if err != nil || len(r.Evaluations) != 1 || r.Evaluations[0].Certainty != &conf || len(r.Measurements) != 0 {
		t.Errorf("one head: %+v, %v", r, err)
	}
	r, err = SRReport(classification, &taskspec.Annotation{Classes: map[string]int{"Acom": 1, "R-P1": 0}}, &conf)
	present := sr.Code{Value: "52101004", Scheme: "SCT", Meaning: "Present"}
	if err != nil || len(r.Evaluations) != 2 || r.Evaluations[0].Value != present || r.Evaluations[1].Value != OwnAttributeClass("R-P1", "0") {
		t.Fatalf("two heads: %+v, %v", r, err)
	}
	// The plugin's confidence is the least of its heads': a certainty derived as their
	// minimum, in percent.
	if m := r.Measurements; len(m) != 1 || m[0].Name != sr.CertaintyOfFinding || m[0].Value != 75 || m[0].Derivation != sr.Minimum {
		t.Errorf("two heads' certainty %+v", m)
	}
	r, err = SRReport(quality, &taskspec.Annotation{Score: &score}, nil)
	if err != nil || len(r.Measurements) != 1 || r.Measurements[0] != (sr.Measurement{Name: sr.ImageQualityRating, Value: 2.4, Units: sr.ScoreUnits}) {
		t.Errorf("quality: %+v, %v", r, err)
	}
	if _, err := SRReport(quality, &taskspec.Annotation{}, nil); err == nil {
		t.Error("a quality prediction without a score is reported")
	}
	if _, err := SRReport(enhancement, &taskspec.Annotation{}, nil); err == nil {
		t.Error("an enhancement is reported")
	}
}

// series writes a generated head CT of nz slices (host/synth's demo CT, cut to its first
// nz slices) as a DICOM series and returns its folder and volume.
func series(t *testing.T, nz int) (string, *volume.Volume) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "study")
	ct, _, err := synth.HeadSeries(dir, nz)
	if err != nil {
		t.Fatal(err)
	}
	return dir, ct
}

// sender records what it is asked to store, and refuses it when refuse is set.
type sender struct {
	stored [][]string
	refuse bool
}

func (s *sender) Store(_ context.Context, files []string) error {
	s.stored = append(s.stored, files)
	if s.refuse {
		return errors.New("503 Service Unavailable")
	}
	return nil
}

// TestApplyDICOM: Apply's DICOM step writes, for DICOM input, a structured report at
// dicom/ID.dcm for a detection, a classification and an image-quality score and a derived
// series in dicom/ID/ for an enhancement; records each file's sha256 among the case's
// outputs (as the SEG's "seg": "sr", "derived1", …); hands them to the PACS sender; and a
// refusal fails the case with its files kept. dciodvfy passes every object written.
func TestApplyDICOM(t *testing.T) {
	slice, ct2 := series(t, 1)
	volumeDir, _ := series(t, 6) // 6 slices: a volume for the 3D classification
	score, conf := 3.2, 0.9
	enhanced := ct2.Clone()
	for i := range enhanced.Len() {
		enhanced.SetIndex(i, enhanced.AtIndex(i)+10) // any change: the enhanced image
	}
	for _, c := range []struct {
		t      *task.Task
		image  string
		pred   any // an annotation, or the enhanced image
		key    string
		what   string // CaseResult.DICOM
		groups int    // the report's measurement groups
	}{
		{detection, slice, &taskspec.Annotation{Boxes: []taskspec.Box{{X: 4, Y: 4, W: 10, H: 8, Score: 0.5}, {X: 20, Y: 20, W: 5, H: 5, Score: 0.125}}}, "sr", "DICOM SR", 2},
		{classification, volumeDir, &taskspec.Annotation{Classes: map[string]int{"Acom": 1, "R-P1": 0}}, "sr", "DICOM SR", 3},
		{quality, slice, &taskspec.Annotation{Score: &score}, "sr", "DICOM SR", 1},
		{enhancement, slice, enhanced, "derived", "derived DICOM series", 0},
	} {
		t.Run(c.t.Kind, func(t *testing.T) {
			out := t.TempDir()
			var pred string
			if err := os.MkdirAll(filepath.Join(out, "predictions"), 0o755); err != nil {
				t.Fatal(err)
			}
			switch p := c.pred.(type) {
			case *taskspec.Annotation:
				pred = filepath.Join(out, "predictions", "case1.json")
				b, _ := p.Marshal()
				if err := os.WriteFile(pred, b, 0o644); err != nil {
					t.Fatal(err)
				}
			case *volume.Volume:
				// The enhancement plugin writes a CT's int16 values as TIFF.
				pred = filepath.Join(out, "predictions", "case1.tif")
				if err := imageio.Write(pred, p); err != nil {
					t.Fatal(err)
				}
			}
			cs := task.Case{ID: "case1", Images: []string{c.image}}
			if !SRable(c.t, cs) && !Derivable(c.t, cs) || SEGable(c.t, cs) {
				t.Fatalf("SRable %v, Derivable %v, SEGable %v", SRable(c.t, cs), Derivable(c.t, cs), SEGable(c.t, cs))
			}
			send := &sender{}
			a := &applied{pk: &Package{Task: c.t, Manifest: export.Manifest{Lane: "lane1"}}, out: out,
				o: Options{Version: "test", Send: send}, res: &Result{ManifestSHA256: "00"}}
			cr := CaseResult{ID: "case1", Confidence: &conf}
			outs := map[string]string{}
			if stage, err := a.dicom(context.Background(), cs, pred, time.Unix(0, 0), &cr, outs); err != nil {
				t.Fatalf("%s: %v", stage, err)
			}
			var files []string
			if c.key == "sr" {
				files = []string{filepath.Join(out, "dicom", "case1.dcm")}
				if cr.SR != filepath.Join("dicom", "case1.dcm") || cr.DICOM() != c.what {
					t.Errorf("case result %+v", cr)
				}
			} else {
				files = []string{filepath.Join(out, "dicom", "case1", "IM0001.dcm")}
				if cr.Derived != filepath.Join("dicom", "case1") || cr.DICOM() != c.what {
					t.Errorf("case result %+v", cr)
				}
			}
			if len(outs) != len(files) {
				t.Errorf("outputs %v, want %d", outs, len(files))
			}
			for i, f := range files {
				key := c.key
				if key == "derived" {
					key = fmt.Sprintf("derived%d", i+1)
				}
				sum, err := fileio.PathSHA256(f)
				if err != nil || outs[key] != sum {
					t.Errorf("output %s: %s, the file's sha256 %s (%v)", key, outs[key], sum, err)
				}
				t.Logf("dciodvfy %s: %s", filepath.Base(f), dicomtest.Dciodvfy(t, f))
			}
			if !cr.Sent || len(send.stored) != 1 || !slices.Equal(send.stored[0], files) {
				t.Errorf("sent %v: %v, want %v", cr.Sent, send.stored, files)
			}
			if c.key == "sr" {
				d, err := sr.Read(files[0])
				if err != nil {
					t.Fatal(err)
				}
				if len(d.Groups()) != c.groups {
					t.Errorf("%d measurement groups, want %d", len(d.Groups()), c.groups)
				}
			} else {
				back, _, err := source.Image(filepath.Dir(files[0]))
				if err != nil {
					t.Fatal(err)
				}
				for i := range back.Len() {
					if back.AtIndex(i) != enhanced.AtIndex(i) {
						t.Fatalf("the derived series' value %d is %g, the enhanced image's %g", i, back.AtIndex(i), enhanced.AtIndex(i))
					}
				}
			}

			// The PACS refuses: the case fails, its files kept.
			again := t.TempDir()
			a.out, a.o.Send = again, &sender{refuse: true}
			cr = CaseResult{ID: "case1"}
			if _, err := a.dicom(context.Background(), cs, pred, time.Unix(0, 0), &cr, map[string]string{}); err != nil {
				t.Fatal(err)
			}
			if cr.Sent || !strings.Contains(cr.Error, "the "+c.what+" was not stored in the PACS: 503") {
				t.Errorf("refused: sent %v, error %q", cr.Sent, cr.Error)
			}
			if _, err := os.Stat(filepath.Join(again, strings.TrimPrefix(files[0], out))); err != nil {
				t.Errorf("the refused files are gone: %v", err)
			}
		})
	}
}

// TestNotDICOM: a case whose image is not DICOM gets no DICOM object, of any kind.
func TestNotDICOM(t *testing.T) {
	cs := task.Case{ID: "x", Images: []string{"scan.nii.gz"}}
	for _, tk := range []*task.Task{detection, classification, quality, enhancement} {
		if SRable(tk, cs) || Derivable(tk, cs) {
			t.Errorf("%s of a NIfTI image: SRable %v, Derivable %v", tk.Kind, SRable(tk, cs), Derivable(tk, cs))
		}
	}
	seg := &task.Task{Kind: taskspec.Segmentation}
	dcm := task.Case{ID: "x", Images: []string{"study/IM1.dcm"}}
	if SRable(seg, dcm) || Derivable(seg, dcm) {
		t.Error("a segmentation of DICOM input is SRable or Derivable")
	}
}
