package run

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"amid/host/audit"
	"amid/host/synth"
	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/dicom/source"
	"amid/viewer/dicom/sr"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// TestDICOMOfEveryKind: a run whose test images are DICOM writes its test predictions as
// DICOM objects of every kind, as `amid predict` does (predict.Objects): a structured
// report of a detection, a classification and an image-quality score, and a derived series
// of an enhancement, each referencing its source series, and records them in the audit
// log. Before, a run wrote a segmentation's SEG alone, and only `amid predict` wrote the
// others. (The SEG is TestDICOMEndToEnd's.)
func TestDICOMOfEveryKind(t *testing.T) {
	series := func(nz int) (string, *volume.Volume) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "study")
		ct, _, err := synth.HeadSeries(dir, nz)
		if err != nil {
			t.Fatal(err)
		}
		return dir, ct
	}
	slice, ct := series(1)
	volumeDir, _ := series(6) // 6 slices: a volume for the 3D classification
	score := 3.2
	enhanced := ct.Clone()
	for i := range enhanced.Len() {
		enhanced.SetIndex(i, enhanced.AtIndex(i)+10)
	}
	attrs := []taskspec.Attribute{{Name: "Acom", Classes: []string{"0", "1"}}, {Name: "R-P1", Classes: []string{"0", "1"}}}
	for _, c := range []struct {
		t      *task.Task
		image  string
		pred   any // an annotation, or the enhanced image
		kind   string
		groups int // the report's measurement groups
	}{
		{&task.Task{ID: "boxes", Kind: taskspec.Detection, Dims: 2}, slice,
			&taskspec.Annotation{Boxes: []taskspec.Box{{X: 4, Y: 4, W: 10, H: 8, Score: 0.5}, {X: 20, Y: 20, W: 5, H: 5, Score: 0.125}}}, "sr", 2},
		{&task.Task{ID: "cow", Kind: taskspec.Classification, Dims: 3, Attributes: attrs}, volumeDir,
			&taskspec.Annotation{Classes: map[string]int{"Acom": 1, "R-P1": 0}}, "sr", 3},
		{&task.Task{ID: "ldct", Kind: taskspec.IQA, Dims: 2, Score: &taskspec.ScoreRange{Min: 0, Max: 4, Step: 0.2}}, slice,
			&taskspec.Annotation{Score: &score}, "sr", 1},
		{&task.Task{ID: "enhance", Kind: taskspec.Enhancement, Dims: 2}, slice, enhanced, "derived", 0},
	} {
		t.Run(c.t.Kind, func(t *testing.T) {
			dir := t.TempDir()
			pred := filepath.Join(dir, "case1.json")
			switch p := c.pred.(type) {
			case *taskspec.Annotation:
				b, _ := p.Marshal()
				if err := os.WriteFile(pred, b, 0o644); err != nil {
					t.Fatal(err)
				}
			case *volume.Volume:
				pred = filepath.Join(dir, "case1.tif")
				if err := imageio.Write(pred, p); err != nil {
					t.Fatal(err)
				}
			}
			lg, err := audit.Open(filepath.Join(dir, "audit.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer lg.Close()
			r := &Runner{dir: dir, task: c.t, audit: lg,
				st:   &State{ID: "run1", Chosen: "lane1", Created: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)},
				data: &task.Dataset{Test: []task.Case{{ID: "case1", Images: []string{c.image}}}}}
			kind := r.dicomTest()
			if kind != c.kind {
				t.Fatalf("the test predictions' DICOM kind %q, want %q", kind, c.kind)
			}
			if err := r.writeDICOM(kind, map[string][]string{"case1": {pred}}, map[string]float64{"case1": 0.9}); err != nil {
				t.Fatal(err)
			}
			_, src, err := source.Image(c.image)
			if err != nil {
				t.Fatal(err)
			}
			if kind == "sr" {
				d, err := sr.Read(filepath.Join(dir, "final", "dicom", "case1.dcm"))
				if err != nil {
					t.Fatal(err)
				}
				if len(d.Groups()) != c.groups {
					t.Errorf("%d measurement groups, want %d", len(d.Groups()), c.groups)
				}
				if d.StudyInstanceUID != src.StudyInstanceUID {
					t.Errorf("the report's study %s, its source's %s", d.StudyInstanceUID, src.StudyInstanceUID)
				}
			} else {
				back, s, err := source.Image(filepath.Join(dir, "final", "dicom", "case1"))
				if err != nil {
					t.Fatal(err)
				}
				if s.StudyInstanceUID != src.StudyInstanceUID || s.SeriesInstanceUID == src.SeriesInstanceUID {
					t.Errorf("the derived series %s of study %s; its source %s of %s", s.SeriesInstanceUID, s.StudyInstanceUID, src.SeriesInstanceUID, src.StudyInstanceUID)
				}
				for i := range back.Len() {
					if back.AtIndex(i) != enhanced.AtIndex(i) {
						t.Fatalf("the derived series' value %d is %g, the enhanced image's %g", i, back.AtIndex(i), enhanced.AtIndex(i))
					}
				}
			}
			ents, err := lg.Entries()
			if err != nil {
				t.Fatal(err)
			}
			last := ents[len(ents)-1]
			var det map[string]any
			_ = json.Unmarshal(last.Details, &det)
			if last.Action != "dicom.written" || det["kind"] != c.kind || det["objects"] != float64(1) {
				t.Errorf("the audit log's last entry: %s %v", last.Action, det)
			}
		})
	}
}
