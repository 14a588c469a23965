package dicomtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/assets/ci"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/seg"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// recorder is a testing.TB that records how a helper ended the test instead of ending
// it: its Fatal and Skip return, so a helper given one must return after them.
type recorder struct {
	testing.TB
	failed, fatal, skipped bool
	msgs                   []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.fatal = true
}
func (r *recorder) Skip(args ...any) {
	r.skipped = true
	r.msgs = append(r.msgs, fmt.Sprint(args...))
}

// dciodvfyOn runs Dciodvfy on path with a recorder and returns it.
func dciodvfyOn(t *testing.T, path string) *recorder {
	t.Helper()
	r := &recorder{TB: t}
	out := Dciodvfy(r, path)
	t.Logf("%s: failed %v; %s\ndciodvfy: %s", filepath.Base(path), r.failed, strings.Join(r.msgs, "; "), out)
	return r
}

// TestDciodvfyUnreadable: a file dciodvfy cannot read fails the check. Before, the check
// ignored dciodvfy's exit status and passed whenever no line started with "Error"; on a
// one-byte file (or an empty one) dicom3tools 1.00~20220618 prints "Error - Information
// Object Not found" and exits 1, and on a missing file it prints only "Abort - File open
// for read failed" and exits 1, which passed.
func TestDciodvfyUnreadable(t *testing.T) {
	Tool(t, "dciodvfy", "dicom3tools")
	dir := t.TempDir()
	for name, b := range map[string][]byte{"one-byte.dcm": {'x'}, "empty.dcm": {}} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"one-byte.dcm", "empty.dcm", "missing.dcm"} {
		if r := dciodvfyOn(t, filepath.Join(dir, name)); !r.failed {
			t.Errorf("%s passed dciodvfy", name)
		}
	}
}

// TestDciodvfySEG: the project's writer's segmentation passes dciodvfy (which warns about
// the private coding scheme 99AMID, and warnings do not fail), and the same object
// broken fails it.
func TestDciodvfySEG(t *testing.T) {
	Tool(t, "dciodvfy", "dicom3tools")
	v, src, _ := Volume(t)
	lab := LabelMap(t, v)
	d := lab.Data.([]uint8)
	nx, ny := v.Dims[0], v.Dims[1]
	for y := 20; y < 40; y++ { // a 20×20 square on slice 5 (Series has 20 slices of 256²)
		for x := 20; x < 40; x++ {
			d[(5*ny+y)*nx+x] = 1
		}
	}
	labels := []seg.Label{{Value: 1, Name: "square"}}
	encode := func() *dataset.File {
		f, err := seg.Encode(lab, src, labels, seg.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	dir := t.TempDir()
	write := func(name string, f *dataset.File) string {
		p := filepath.Join(dir, name)
		if err := dataset.WriteFile(p, f); err != nil {
			t.Fatal(err)
		}
		return p
	}
	valid := write("valid.dcm", encode())
	if r := dciodvfyOn(t, valid); r.failed {
		t.Fatalf("the writer's segmentation fails dciodvfy: %s", strings.Join(r.msgs, "; "))
	}

	// Segmentation Type (0062,0001) is Type 1 in the Segmentation Image Module (PS3.3
	// C.8.20.2): dciodvfy reports "Error - Missing attribute Type 1 Required
	// Element=<SegmentationType>".
	f := encode()
	f.DataSet.Delete(tag.SegmentationType)
	if r := dciodvfyOn(t, write("no-segmentation-type.dcm", f)); !r.failed || !strings.Contains(strings.Join(r.msgs, "\n"), "SegmentationType") {
		t.Errorf("a segmentation without Segmentation Type: failed %v, %q", r.failed, r.msgs)
	}

	// Pixel Data is the last element, and the one frame (a 256² slice at 1 bit per
	// pixel) is 8192 bytes: cutting 4096 off the end leaves half of it, and dciodvfy
	// reports "Error - Seek failed - while reading unencapsulated Pixel Data".
	b, err := os.ReadFile(valid)
	if err != nil {
		t.Fatal(err)
	}
	trunc := filepath.Join(dir, "truncated.dcm")
	if err := os.WriteFile(trunc, b[:len(b)-4096], 0o644); err != nil {
		t.Fatal(err)
	}
	if r := dciodvfyOn(t, trunc); !r.failed {
		t.Error("a segmentation cut in the middle of its pixel data passed dciodvfy")
	}
}

// TestDciodvfyMissing: without dciodvfy on the PATH the check skips, or fails in CI
// (ci.Missing); before, in CI it only failed when $CI was set at all.
func TestDciodvfyMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // an empty folder: no dciodvfy
	for _, tc := range []struct {
		ci             string
		fatal, skipped bool
	}{{"true", true, false}, {"1", true, false}, {"", false, true}, {"false", false, true}} {
		t.Setenv(ci.Env, tc.ci)
		r := &recorder{TB: t}
		Dciodvfy(r, "seg.dcm")
		if r.fatal != tc.fatal || r.skipped != tc.skipped {
			t.Errorf("CI=%q: fatal %v, skipped %v (%q); want %v, %v", tc.ci, r.fatal, r.skipped, r.msgs, tc.fatal, tc.skipped)
		}
	}
}

// TestVerify runs Verify on stand-in dciodvfy scripts, for the outcomes the installed
// version may not produce: the issue saw a dciodvfy that prints nothing and exits 1 on a
// one-byte file, which the check passed. A real dciodvfy names the IOD ("Segmentation")
// first, then one line per warning ("Warning - ...") or error ("Error - ...").
func TestVerify(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, script string
		pass         bool
	}{
		{"silent-exit-1", "exit 1", false},
		{"silent-exit-0", "exit 0", false},
		{"error-exit-0", "echo Segmentation; echo 'Error - Missing attribute'", false},
		{"error-exit-1", "echo Segmentation; echo 'Error - Missing attribute'; exit 1", false},
		{"warnings-exit-1", "echo Segmentation; echo 'Warning - Unrecognized defined term'; exit 1", false},
		{"warnings", "echo Segmentation; echo 'Warning - Unrecognized defined term' >&2", true},
	} {
		bin := filepath.Join(dir, tc.name)
		if err := os.WriteFile(bin, []byte("#!/bin/sh\n"+tc.script+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := Verify(bin, "seg.dcm")
		if (err == nil) != tc.pass {
			t.Errorf("%s: %v (output %q); want pass %v", tc.name, err, out, tc.pass)
		}
	}
	if _, err := Verify(filepath.Join(dir, "none"), "seg.dcm"); err == nil {
		t.Error("a dciodvfy that does not exist passed")
	}
}
