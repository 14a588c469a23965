package seg

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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

// labelsOn makes a label map on v's grid from its intensities: label 1 where the image is
// bright, 2 in a box (overlapping label 1), 3 on one slice only; slices 0 and 19 stay
// empty.
func labelsOn(t testing.TB, v *volume.Volume) *volume.Volume {
	lab := dicomtest.LabelMap(t, v)
	d := lab.Data.([]uint8)
	nx, ny := v.Dims[0], v.Dims[1]
	for z := 1; z < v.Dims[2]-1; z++ {
		for y := range ny {
			for x := range nx {
				i := (z*ny+y)*nx + x
				switch {
				case z == 10 && x > 20 && x < 40 && y > 20 && y < 30:
					d[i] = 3
				case x > 100 && x < 150 && y > 90 && y < 160 && z > 5 && z < 15:
					d[i] = 2
				case v.AtIndex(i) > 400:
					d[i] = 1
				}
			}
		}
	}
	return lab
}

var testLabels = []Label{
	{Value: 1, Name: "bright", Type: Code{Value: "12738006", Scheme: "SCT", Meaning: "Brain"}, Category: Code{Value: "123037004", Scheme: "SCT", Meaning: "Anatomical Structure"}},
	{Value: 2, Name: "box"},
	{Value: 3, Name: "patch"},
}

// TestRoundTrip: a label map written as a segmentation on a real series reads back to the
// identical label map, placed by the frames' source images and by their positions alone.
func TestRoundTrip(t *testing.T) {
	v, src, _ := dicomtest.Volume(t)
	lab := labelsOn(t, v)
	path := filepath.Join(t.TempDir(), "seg.dcm")
	if err := Write(path, lab, src, testLabels, Options{Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	s, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Segments) != 3 || s.Segments[0].Label != "bright" || s.Segments[0].Type.Value != "12738006" || s.Segments[1].Type.Scheme != "99AMID" {
		t.Fatalf("segments %+v", s.Segments)
	}
	// 18 slices of label 1 (slices 0 and 19 are empty), 9 of label 2, 1 of label 3.
	if len(s.Frames) != 18+9+1 {
		t.Errorf("%d frames, want one per segment and slice with foreground: 28", len(s.Frames))
	}
	if s.StudyInstanceUID != src.StudyInstanceUID || s.ReferencedSeriesUID != src.SeriesInstanceUID || s.FrameOfReferenceUID != src.FrameOfReferenceUID {
		t.Errorf("references: study %s, series %s, frame of reference %s", s.StudyInstanceUID, s.ReferencedSeriesUID, s.FrameOfReferenceUID)
	}
	ident := map[int]int{1: 1, 2: 2, 3: 3}
	for _, c := range []struct {
		name string
		src  *source.Series
	}{{"by source image", src}, {"by position", nil}} {
		back, err := s.LabelMap(v, c.src, ident)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(back.Data.([]uint8), lab.Data.([]uint8)) {
			t.Errorf("%s: the label map read back differs", c.name)
		}
	}
	// The same inputs give the same bytes.
	again := filepath.Join(t.TempDir(), "seg.dcm")
	if err := Write(again, lab, src, testLabels, Options{Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(path)
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Error("writing the same segmentation twice gives different bytes")
	}
	checkDciodvfy(t, path)
	checkPydicom(t, path, lab, s)
}

// checkDciodvfy runs dicom3tools' validator: it must report no error.
func checkDciodvfy(t *testing.T, path string) {
	t.Helper()
	t.Logf("dciodvfy: %s", dicomtest.Dciodvfy(t, path))
}

// pydicomFrames has pydicom read segmentations and print, per file and frame, the frame's
// segment, position and number of pixels set, read from pydicom's own pixel_array.
const pydicomFrames = `
import sys, json, warnings
warnings.simplefilter("ignore")
import pydicom, numpy as np
files = {}
for path in sys.argv[1:]:
    ds = pydicom.dcmread(path)
    a = ds.pixel_array
    n = int(ds.get("NumberOfFrames", 1))
    a = a.reshape(n, ds.Rows, ds.Columns)
    pf = ds.get("PerFrameFunctionalGroupsSequence")
    out = []
    for i in range(n):
        f = pf[i] if pf else None
        seg = int(f.SegmentIdentificationSequence[0].ReferencedSegmentNumber) if f and "SegmentIdentificationSequence" in f else 0
        pos = [float(x) for x in f.PlanePositionSequence[0].ImagePositionPatient] if f and "PlanePositionSequence" in f else []
        if ds.SegmentationType == "FRACTIONAL":
            on = int((2*a[i].astype(int) >= int(ds.MaximumFractionalValue)).sum())
        else:
            on = int((a[i] != 0).sum())
        out.append({"seg": seg, "pos": pos, "on": on})
    files[path] = out
print(json.dumps(files))
`

type pyFrame struct {
	Seg int       `json:"seg"`
	Pos []float64 `json:"pos"`
	On  int       `json:"on"`
}

// pydicomRead has pydicom read the segmentations at paths, in one process.
func pydicomRead(t *testing.T, paths ...string) map[string][]pyFrame {
	t.Helper()
	out, err := exec.Command(dicomtest.Python(t), append([]string{"-c", pydicomFrames}, paths...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("pydicom cannot read %v: %v\n%s", paths, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var fr map[string][]pyFrame
	if err := json.Unmarshal(out, &fr); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return fr
}

// checkPydicom: pydicom reads the file, and its frames hold the pixels the label map has
// for their segment on their slice.
func checkPydicom(t *testing.T, path string, lab *volume.Volume, s *Segmentation) {
	t.Helper()
	fr := pydicomRead(t, path)[path]
	if len(fr) != len(s.Frames) {
		t.Fatalf("pydicom reads %d frames, we %d", len(fr), len(s.Frames))
	}
	n := lab.Dims[0] * lab.Dims[1]
	for i, f := range fr {
		k, err := source.SliceOf(lab, [3]float64{f.Pos[0], f.Pos[1], f.Pos[2]})
		if err != nil {
			t.Fatalf("pydicom frame %d: %v", i, err)
		}
		want := 0
		for j := range n {
			if int(lab.AtIndex(k*n+j)) == f.Seg {
				want++
			}
		}
		if f.On != want {
			t.Errorf("frame %d (segment %d, slice %d): pydicom reads %d pixels set, the label map has %d", i, f.Seg, k, f.On, want)
		}
	}
}

// TestRealSegmentations reads the real segmentations of the cache and checks every
// frame's pixel count and position against pydicom's reading: pydicom's liver_1frame
// (dcmqi; its CT is absent) in explicit little and big endian, and ami.js's
// dcm.seg.andrei (3D Slicer, 275 frames of 512², a shared Derivation Image Sequence
// listing the whole CT, which is absent too): both are placed on the grid their frames
// give.
func TestRealSegmentations(t *testing.T) {
	cases := []struct {
		path           string
		frames, labelN int
	}{
		{filepath.Join(realdata.Pydicom, "liver_1frame.dcm"), 1, 1},
		{filepath.Join(realdata.Pydicom, "liver_expb_1frame.dcm"), 1, 1},
		{realdata.AMI + "/dicom/dcm.seg.andrei", 275, 1},
	}
	var paths []string
	for _, c := range cases {
		paths = append(paths, realdata.Path(t, c.path))
	}
	pyAll := pydicomRead(t, paths...)
	for _, c := range cases {
		t.Run(filepath.Base(c.path), func(t *testing.T) {
			p := realdata.Path(t, c.path)
			s, err := Read(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Frames) != c.frames || len(s.Segments) != c.labelN {
				t.Fatalf("%d frames and %d segments", len(s.Frames), len(s.Segments))
			}
			grid, err := s.Grid()
			if err != nil {
				t.Fatal(err)
			}
			lab, err := s.LabelMap(grid, nil, s.Labels())
			if err != nil {
				t.Fatal(err)
			}
			py := pyAll[p]
			n := grid.Dims[0] * grid.Dims[1]
			d := lab.Data.([]uint8)
			total, pyTotal := 0, 0
			for i, f := range py {
				k := 0
				if len(f.Pos) == 3 {
					if k, err = source.SliceOf(grid, [3]float64{f.Pos[0], f.Pos[1], f.Pos[2]}); err != nil {
						t.Fatalf("frame %d: %v", i, err)
					}
				}
				on := 0
				for _, x := range d[k*n : (k+1)*n] {
					if x != 0 {
						on++
					}
				}
				if on != f.On {
					t.Errorf("frame %d on slice %d: %d pixels set, pydicom reads %d", i, k, on, f.On)
				}
				pyTotal += f.On
			}
			for _, x := range d {
				if x != 0 {
					total++
				}
			}
			if total != pyTotal || total == 0 {
				t.Errorf("%d voxels labelled, pydicom's frames hold %d", total, pyTotal)
			}
			t.Logf("%s: %d segment(s) (%s), %d frames on a %v grid, %d voxels labelled, as pydicom reads them",
				filepath.Base(p), len(s.Segments), s.Segments[0].Type, len(s.Frames), grid.Dims, total)
		})
	}
}

// TestFractional reads a fractional segmentation (probabilities 0…200): a voxel is in the
// segment at 100 and above, as pydicom's pixel values say.
func TestFractional(t *testing.T) {
	v, src, _ := dicomtest.Volume(t)
	lab := labelsOn(t, v)
	f, err := Encode(lab, src, testLabels, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ds := f.DataSet
	frames, _ := ds.Int(tag.NumberOfFrames)
	n := v.Dims[0] * v.Dims[1]
	old := ds.Get(tag.PixelData).Value
	px := make([]byte, frames*n)
	for i := range px {
		if old[i>>3]>>(i&7)&1 != 0 {
			px[i] = byte(100 + i%101) // 100…200: in
		} else {
			px[i] = byte(i % 100) // 0…99: out
		}
	}
	ds.Put(&dataset.Element{Tag: tag.PixelData, VR: "OB", Value: px})
	ds.Put(dataset.Text(tag.SegmentationType, "CS", "FRACTIONAL"))
	ds.Put(dataset.Text(tag.SegmentationFractionalType, "CS", "PROBABILITY"))
	ds.Put(dataset.US(tag.MaximumFractionalValue, 200))
	for _, t8 := range []tag.Tag{tag.BitsAllocated, tag.BitsStored} {
		ds.Put(dataset.US(t8, 8))
	}
	ds.Put(dataset.US(tag.HighBit, 7))
	path := filepath.Join(t.TempDir(), "fractional.dcm")
	if err := dataset.WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	s, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	back, err := s.LabelMap(v, src, map[int]int{1: 1, 2: 2, 3: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Data.([]uint8), lab.Data.([]uint8)) {
		t.Error("the fractional segmentation read back differs from the label map")
	}
	checkPydicom(t, path, lab, s)
}

// TestMisfit: a segmentation placed on another grid is an error that says how it differs.
func TestMisfit(t *testing.T) {
	v, src, _ := dicomtest.Volume(t)
	lab := labelsOn(t, v)
	f, err := Encode(lab, src, testLabels, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := dataset.Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	other := *v
	other.Spacing[0] *= 2
	if _, err := s.LabelMap(&other, nil, s.Labels()); !errors.Is(err, ErrGrid) || !strings.Contains(err.Error(), "pixel spacing") {
		t.Errorf("other spacing: %v", err)
	}
	shifted := *v
	shifted.Origin[2] += 3 // half a slice
	if _, err := s.LabelMap(&shifted, nil, s.Labels()); !errors.Is(err, source.ErrPlacement) {
		t.Errorf("shifted by half a slice: %v", err)
	}
	// A label value the segments do not describe is refused when writing.
	lab.Data.([]uint8)[0] = 9
	if _, err := Encode(lab, src, testLabels, Options{}); err == nil || !strings.Contains(err.Error(), "value 9") {
		t.Errorf("unknown label value: %v", err)
	}
}

// TestEmpty: a label map without foreground gives one empty frame, which reads back as
// an empty label map.
func TestEmpty(t *testing.T) {
	v, src, _ := dicomtest.Volume(t)
	lab := dicomtest.LabelMap(t, v)
	path := filepath.Join(t.TempDir(), "empty.dcm")
	if err := Write(path, lab, src, testLabels, Options{}); err != nil {
		t.Fatal(err)
	}
	s, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	back, err := s.LabelMap(v, src, s.Labels())
	if err != nil || len(s.Frames) != 1 {
		t.Fatalf("%d frames, %v", len(s.Frames), err)
	}
	for _, x := range back.Data.([]uint8) {
		if x != 0 {
			t.Fatal("the empty segmentation reads back with foreground")
		}
	}
	checkDciodvfy(t, path)
}

func FuzzDecode(f *testing.F) {
	// A small segmentation on a made-up 4×3×2 grid.
	lab, _ := volume.New(volume.Uint8, [4]int{4, 3, 2, 1})
	lab.Spacing, lab.Direction = [3]float64{1, 1, 2}, [9]float64{1, 0, 0, 0, 1, 0, 0, 0, 1}
	copy(lab.Data.([]uint8), []uint8{0, 1, 1, 0, 2, 2, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2})
	src := &source.Series{SeriesInstanceUID: "2.25.1", Header: dataset.New(dataset.Text(tag.FrameOfReferenceUID, "UI", "2.25.2"))}
	for k := range 2 {
		src.Instances = append(src.Instances, source.Instance{SOPClassUID: "1.2.840.10008.5.1.4.1.1.2", SOPInstanceUID: "2.25.1" + string(rune('0'+k)),
			Position: [3]float64{0, 0, 2 * float64(k)}, HasPosition: true})
	}
	file, err := Encode(lab, src, []Label{{Value: 1, Name: "a"}, {Value: 2, Name: "b"}}, Options{Created: time.Unix(0, 0)})
	if err != nil {
		f.Fatal(err)
	}
	b, err := dataset.Encode(file)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil {
			return
		}
		if g, err := s.Grid(); err == nil && g.NumVoxels() <= 1<<22 {
			_, _ = s.LabelMap(g, src, s.Labels())
		}
		_, _ = s.LabelMap(lab, src, s.Labels())
	})
}
