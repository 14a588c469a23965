package sr

import (
	"fmt"
	"strings"

	"amid/viewer/dicom/dataset"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// Document is a parsed structured report: its identity, the instances its evidence
// lists, and its content tree.
type Document struct {
	SOPClassUID       string
	SOPInstanceUID    string
	SeriesInstanceUID string
	StudyInstanceUID  string
	// Evidence are the instances of the Current Requested Procedure Evidence Sequence, by
	// series.
	Evidence map[string][]Ref
	Root     *Item
}

// Ref is a referenced instance (and frame, 0 when none).
type Ref struct {
	SOPClassUID    string
	SOPInstanceUID string
	Frame          int
}

// Item is one content item.
type Item struct {
	Relationship string // "" for the root
	ValueType    string // CONTAINER, CODE, NUM, TEXT, UIDREF, IMAGE, SCOORD, SCOORD3D, …
	Concept      Code   // the concept name (zero when the item has none)
	Template     string // Template Identifier (CONTAINER)
	Code         Code   // CODE
	Text         string // TEXT, and DATETIME, DATE, TIME, PNAME as written
	UID          string // UIDREF
	Number       float64
	HasNumber    bool
	Units        Code      // NUM
	GraphicType  string    // SCOORD, SCOORD3D
	Points       []float64 // SCOORD: column, row pairs; SCOORD3D: x, y, z triplets (mm)
	FrameOfRef   string    // SCOORD3D
	Refs         []Ref     // IMAGE, COMPOSITE
	Children     []*Item
}

// Read reads the structured report at path. Errors name the file.
func Read(path string) (*Document, error) { return dataset.ReadAs(path, FromDataSet) }

// Decode parses the bytes of a structured report file.
func Decode(b []byte) (*Document, error) { return dataset.DecodeAs(b, FromDataSet) }

// FromDataSet reads a structured report from a parsed file.
func FromDataSet(f *dataset.File) (*Document, error) {
	ds := f.DataSet
	if ds.String(tag.Modality) != "SR" && !strings.HasPrefix(ds.String(tag.SOPClassUID), "1.2.840.10008.5.1.4.1.1.88.") {
		return nil, fmt.Errorf("%w: not a structured report (SOP Class %s, modality %q)", volume.ErrFormat, ds.String(tag.SOPClassUID), ds.String(tag.Modality))
	}
	if ds.String(tag.ValueType) != "CONTAINER" {
		return nil, fmt.Errorf("%w: the report's root content item is %q, not a CONTAINER", volume.ErrFormat, ds.String(tag.ValueType))
	}
	d := &Document{
		SOPClassUID:       ds.String(tag.SOPClassUID),
		SOPInstanceUID:    ds.String(tag.SOPInstanceUID),
		SeriesInstanceUID: ds.String(tag.SeriesInstanceUID),
		StudyInstanceUID:  ds.String(tag.StudyInstanceUID),
		Evidence:          map[string][]Ref{},
		Root:              item(ds),
	}
	for _, st := range ds.Items(tag.CurrentRequestedProcedureEvidenceSequence) {
		for _, se := range st.Items(tag.ReferencedSeriesSequence) {
			uid := se.String(tag.SeriesInstanceUID)
			d.Evidence[uid] = append(d.Evidence[uid], refs(se.Items(tag.ReferencedSOPSequence))...)
		}
	}
	return d, nil
}

// item reads a content item and, depth first, its children (the parser has bounded the
// nesting).
func item(ds *dataset.DataSet) *Item {
	it := &Item{
		Relationship: ds.String(tag.RelationshipType),
		ValueType:    ds.String(tag.ValueType),
		Text:         ds.String(tag.TextValue),
		UID:          ds.String(tag.UID),
		GraphicType:  ds.String(tag.GraphicType),
		Points:       ds.Floats(tag.GraphicData),
		FrameOfRef:   ds.String(tag.ReferencedFrameOfReferenceUID),
		Refs:         refs(ds.Items(tag.ReferencedSOPSequence)),
		Template:     ds.Item(tag.ContentTemplateSequence).String(tag.TemplateIdentifier),
	}
	if ds.Has(tag.ConceptNameCodeSequence) {
		it.Concept = dataset.CodeOf(ds.Item(tag.ConceptNameCodeSequence))
	}
	if ds.Has(tag.ConceptCodeSequence) {
		it.Code = dataset.CodeOf(ds.Item(tag.ConceptCodeSequence))
	}
	for _, k := range []tag.Tag{tag.DateTime, tag.Date, tag.Time, tag.PersonName} {
		if it.Text == "" {
			it.Text = ds.String(k)
		}
	}
	if mv := ds.Item(tag.MeasuredValueSequence); mv.Has(tag.NumericValue) {
		if f, ok := mv.Float(tag.FloatingPointValue); ok {
			it.Number, it.HasNumber = f, true
		} else if f, ok := mv.Float(tag.NumericValue); ok {
			it.Number, it.HasNumber = f, true
		}
		it.Units = dataset.CodeOf(mv.Item(tag.MeasurementUnitsCodeSequence))
	}
	for _, c := range ds.Items(tag.ContentSequence) {
		if c != nil {
			it.Children = append(it.Children, item(c))
		}
	}
	return it
}

func refs(items []*dataset.DataSet) []Ref {
	var out []Ref
	for _, r := range items {
		if r == nil {
			continue
		}
		ref := Ref{SOPClassUID: r.String(tag.ReferencedSOPClassUID), SOPInstanceUID: r.String(tag.ReferencedSOPInstanceUID)}
		ref.Frame, _ = r.Int(tag.ReferencedFrameNumber)
		out = append(out, ref)
	}
	return out
}

// Find returns the children of it whose concept name is c (by scheme and value).
func (it *Item) Find(c Code) []*Item {
	var out []*Item
	for _, k := range it.Children {
		if k.Concept.Value == c.Value && k.Concept.Scheme == c.Scheme {
			out = append(out, k)
		}
	}
	return out
}

// First returns the first child of it whose concept name is c, nil when none.
func (it *Item) First(c Code) *Item {
	if f := it.Find(c); len(f) > 0 {
		return f[0]
	}
	return nil
}

// Groups returns the Measurement Groups of the report's Imaging Measurements.
func (d *Document) Groups() []*Item {
	im := d.Root.First(ImagingMeasurements)
	if im == nil {
		return nil
	}
	return im.Find(MeasurementGroup)
}
