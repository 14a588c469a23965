package dataset_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"amid/viewer/dicom/dataset"

	dcm "github.com/suyashkumar/dicom"
)

// TestBesideLibrary measures why this package parses and writes data sets itself rather
// than through github.com/suyashkumar/dicom (the package doc quotes it): every real file
// of the cache (realFiles) is read and written back by each, and what comes back is
// compared element by element, sequences item by item, with the original as this package
// parses it. Ours must give every element back; the library, on the same files, refuses
// to parse some, refuses to write others, and changes values. Should a later version of
// the library keep every element, this test fails, and the package doc's reason is gone.
func TestBesideLibrary(t *testing.T) {
	var ours, lib int
	var libLost []string
	files := realFiles(t)
	for _, p := range files {
		orig, err := dataset.ReadFile(p, dataset.Options{})
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		b, err := dataset.Encode(orig)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		back, err := dataset.Parse(b, dataset.Options{})
		if err != nil {
			t.Errorf("%s: reparse: %v", p, err)
			continue
		}
		if d := differ(orig.DataSet, back.DataSet, ""); len(d) > 0 {
			t.Errorf("%s: written back, %d elements differ, e.g. %s", filepath.Base(p), len(d), d[0])
		} else {
			ours++
		}
		why := throughLibrary(p, orig)
		if why == "" {
			lib++
			continue
		}
		libLost = append(libLost, filepath.Base(p)+": "+why)
	}
	t.Logf("%d real files: this package gives every element back on %d, suyashkumar/dicom on %d", len(files), ours, lib)
	for _, s := range libLost {
		t.Logf("  library: %.160s", s)
	}
	if len(libLost) == 0 {
		t.Error("suyashkumar/dicom gave every element of every file back: the package doc's reason for a parser of our own no longer holds")
	}
}

// throughLibrary parses the file at p with suyashkumar/dicom, writes it back with it, and
// says in a few words what differs from orig ("" when nothing does).
func throughLibrary(p string, orig *dataset.File) (why string) {
	defer func() {
		if r := recover(); r != nil {
			why = fmt.Sprint("panics: ", r)
		}
	}()
	ds, err := dcm.ParseFile(p, nil)
	if err != nil {
		return "parse: " + err.Error()
	}
	var buf bytes.Buffer
	if err := dcm.Write(&buf, ds, dcm.SkipVRVerification()); err != nil {
		return "write: " + err.Error()
	}
	back, err := dataset.Parse(buf.Bytes(), dataset.Options{})
	if err != nil {
		return "its output does not parse: " + err.Error()
	}
	if d := differ(orig.DataSet, back.DataSet, ""); len(d) > 0 {
		return fmt.Sprintf("%d elements differ, e.g. %s", len(d), d[0])
	}
	return ""
}

// differ lists the elements of a that b lacks or holds otherwise, and those b adds: group
// lengths aside, values compared without their trailing padding (a space or a zero byte,
// which a writer may choose), sequences item by item, encapsulated pixel data fragment by
// fragment after the Basic Offset Table (which a writer may compute again or leave
// empty). A VR of UN on one side matches any (a writer may name what it could not).
func differ(a, b *dataset.DataSet, path string) []string {
	var out []string
	index := func(d *dataset.DataSet) map[uint32]*dataset.Element {
		m := map[uint32]*dataset.Element{}
		for _, e := range d.Elements {
			if e.Tag.Element != 0 {
				m[uint32(e.Tag.Group)<<16|uint32(e.Tag.Element)] = e
			}
		}
		return m
	}
	ma, mb := index(a), index(b)
	for _, ea := range a.Elements {
		eb, ok := mb[uint32(ea.Tag.Group)<<16|uint32(ea.Tag.Element)]
		switch {
		case ea.Tag.Element == 0:
		case !ok:
			out = append(out, fmt.Sprintf("%s%v lost", path, ea.Tag))
		case ea.VR != eb.VR && ea.VR != "UN" && eb.VR != "UN":
			out = append(out, fmt.Sprintf("%s%v VR %s became %s", path, ea.Tag, ea.VR, eb.VR))
		case len(ea.Items) != len(eb.Items):
			out = append(out, fmt.Sprintf("%s%v %d items became %d", path, ea.Tag, len(ea.Items), len(eb.Items)))
		case len(ea.Items) > 0:
			for i := range ea.Items {
				out = append(out, differ(ea.Items[i], eb.Items[i], fmt.Sprintf("%s%v[%d]/", path, ea.Tag, i))...)
			}
		case ea.Encapsulated != eb.Encapsulated || len(ea.Fragments) != len(eb.Fragments):
			out = append(out, fmt.Sprintf("%s%v %d fragments became %d", path, ea.Tag, len(ea.Fragments), len(eb.Fragments)))
		case !bytes.Equal(bytes.TrimRight(ea.Value, " \x00"), bytes.TrimRight(eb.Value, " \x00")):
			out = append(out, fmt.Sprintf("%s%v value of %d bytes became %d", path, ea.Tag, len(ea.Value), len(eb.Value)))
		default:
			for i := 1; i < len(ea.Fragments); i++ {
				if !bytes.Equal(ea.Fragments[i], eb.Fragments[i]) {
					out = append(out, fmt.Sprintf("%s%v fragment %d differs", path, ea.Tag, i))
					break
				}
			}
		}
	}
	for _, eb := range b.Elements {
		if _, ok := ma[uint32(eb.Tag.Group)<<16|uint32(eb.Tag.Element)]; !ok && eb.Tag.Element != 0 {
			out = append(out, fmt.Sprintf("%s%v added", path, eb.Tag))
		}
	}
	return out
}
