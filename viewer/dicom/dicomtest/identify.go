package dicomtest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"amid/viewer/dicom/dataset"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// Person is the identity written into the files.
type Person struct {
	Name      string // e.g. DOE^JANE
	ID        string // Patient ID, e.g. MRN-4417-22
	BirthDate string // YYYYMMDD
}

// Identify copies the DICOM files of src into dst (created) with p's identity and returns
// the values that identify p or the files: the name and each of its parts of six or more
// characters, the IDs, the
// birth date, the accession number, institution, physician, the private value, and the
// study, series, frame of reference and instance UIDs.
func Identify(t testing.TB, src, dst string, p Person) []string {
	t.Helper()
	accession := "ACC" + strings.ReplaceAll(p.ID, "-", "")
	other := "OTHER-" + p.ID
	private := "PRIVATE-NOTE-" + p.ID
	institution := "SAINT ELSEWHERE " + p.ID
	physician := "HOUSE^GREGORY^" + p.ID
	study := dataset.UIDFrom("deidtest study", p.ID)
	series := dataset.UIDFrom("deidtest series", p.ID)
	frame := dataset.UIDFrom("deidtest frame", p.ID)
	secrets := []string{p.Name, p.ID, p.BirthDate, accession, other, private, institution, physician, study, series, frame}
	for _, part := range strings.Split(p.Name, "^") {
		// Short parts would match by chance in megabytes of pixel data or zip streams.
		if len(part) >= 6 {
			secrets = append(secrets, part)
		}
	}
	Copy(t, src, dst, func(ds *dataset.DataSet) {
		sop := dataset.UIDFrom("deidtest instance", p.ID, ds.String(tag.SOPInstanceUID))
		secrets = append(secrets, sop)
		for _, el := range []*dataset.Element{
			dataset.Text(tag.PatientName, "PN", p.Name),
			dataset.Text(tag.PatientID, "LO", p.ID),
			dataset.Text(tag.PatientBirthDate, "DA", p.BirthDate),
			dataset.Text(tag.OtherPatientIDs, "LO", other),
			dataset.Text(tag.AccessionNumber, "SH", accession),
			dataset.Text(tag.InstitutionName, "LO", institution),
			dataset.Text(tag.ReferringPhysicianName, "PN", physician),
			dataset.Text(tag.StudyInstanceUID, "UI", study),
			dataset.Text(tag.SeriesInstanceUID, "UI", series),
			dataset.Text(tag.FrameOfReferenceUID, "UI", frame),
			dataset.Text(tag.SOPInstanceUID, "UI", sop),
			{Tag: tag.Tag{Group: 0x0009, Element: 0x0010}, VR: "LO", Value: []byte("AMID TEST PRIVATE")},
			{Tag: tag.Tag{Group: 0x0009, Element: 0x1001}, VR: "LO", Value: []byte(private)},
		} {
			ds.Put(el)
		}
	})
	return secrets
}

// Leaks returns the secrets found in b (bytes.Contains for each: its vectorised search
// keeps a race-enabled test fast).
func Leaks(b []byte, secrets []string) []string {
	var out []string
	for _, s := range secrets {
		if s != "" && bytes.Contains(b, []byte(s)) {
			out = append(out, s)
		}
	}
	return out
}

// LeaksInTree returns, per file under root, the secrets its bytes or its path hold. Links
// are not followed: their names are checked, what they point to is not (a de-identified
// run keeps its mapping to the data as links). Files for which skip returns true are not
// read (nil: none is skipped).
func LeaksInTree(t testing.TB, root string, secrets []string, skip func(path string) bool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(root, p); len(Leaks([]byte(rel), secrets)) > 0 {
			out[p] = append(out[p], Leaks([]byte(rel), secrets)...)
		}
		if d.IsDir() || d.Type()&os.ModeSymlink != 0 || skip != nil && skip(p) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if l := Leaks(b, secrets); len(l) > 0 {
			out[p] = append(out[p], l...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
