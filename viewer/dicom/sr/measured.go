package sr

import (
	"fmt"
	"strings"

	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/source"
	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// A reader's measurements (Report.Measured) are Measurement Groups of TID 1501 each: its
// Tracking Identifier and Tracking Unique Identifier, then a NUM per value (TID 300: the
// value in its UCUM units) with the region it was measured on as an INFERRED FROM child:
// an SCOORD on the source instance of its slice (with SELECTED FROM IMAGE) when it was
// drawn on the series' own image plane, else an SCOORD3D in the series' frame of
// reference (patient millimetres), with the source series named in the group.
//
// A report made by a reader names the reader (Options.Reader) as its observer: Observer
// Type Person and Person Observer Name (TID 1002, 1003), instead of the device.

// The concepts of a reader's measurements (SNOMED CT, as DICOM's CID 7470, 7472 and 7464
// list them; UCUM units).
var (
	PersonObserver     = Code{Value: "121006", Scheme: "DCM", Meaning: "Person"}
	PersonObserverName = Code{Value: "121008", Scheme: "DCM", Meaning: "Person Observer Name"}
	LengthCode         = Code{Value: "410668003", Scheme: "SCT", Meaning: "Length"}
	LongAxis           = Code{Value: "103339001", Scheme: "SCT", Meaning: "Long Axis"}
	ShortAxis          = Code{Value: "103340004", Scheme: "SCT", Meaning: "Short Axis"}
	AreaCode           = Code{Value: "42798000", Scheme: "SCT", Meaning: "Area"}
	MeanCode           = Code{Value: "373098007", Scheme: "SCT", Meaning: "Mean"}
	StandardDeviation  = Code{Value: "386136009", Scheme: "SCT", Meaning: "Standard Deviation"}
	MaximumCode        = Code{Value: "56851009", Scheme: "SCT", Meaning: "Maximum"}
	AngleCode          = Code{Value: "1483009", Scheme: "SCT", Meaning: "Angle"}
	AttenuationCoeff   = Code{Value: "112031", Scheme: "DCM", Meaning: "Attenuation Coefficient"}
	Millimeter         = Code{Value: "mm", Scheme: "UCUM", Meaning: "millimeter"}
	SquareMillimeter   = Code{Value: "mm2", Scheme: "UCUM", Meaning: "square millimeter"}
	Degree             = Code{Value: "deg", Scheme: "UCUM", Meaning: "degree"}
	HounsfieldUnit     = Code{Value: "[hnsf'U]", Scheme: "UCUM", Meaning: "Hounsfield unit"}
	NoUnits            = Code{Value: "1", Scheme: "UCUM", Meaning: "no units"}
)

// Measured is one of a reader's measurements: its values, each measured on a region.
type Measured struct {
	Label  string          `json:"label"` // its Tracking Identifier ("measurement 1")
	Values []MeasuredValue `json:"values"`
}

// MeasuredValue is one value of a measurement and the region it was measured on.
type MeasuredValue struct {
	Name   Code    `json:"name"`
	Value  float64 `json:"value"`
	Units  Code    `json:"units"`
	Region Region  `json:"region"`
}

// Region is where a value was measured: on slice Slice of the grid (its third axis, the
// series' own image plane) at Points, SCOORD's column and row of the image; or, with World
// set, in patient space (mm, the series' frame of reference). Graphic is SCOORD's (POINT,
// POLYLINE, ELLIPSE) or SCOORD3D's (POINT, POLYLINE, POLYGON, ELLIPSE).
type Region struct {
	Graphic string       `json:"graphic"`
	Slice   int          `json:"slice,omitempty"`
	Points  [][2]float64 `json:"points,omitempty"`
	World   [][3]float64 `json:"world,omitempty"`
}

// count of points each graphic type takes (0: two or more).
var graphicPoints = map[string]int{"POINT": 1, "POLYLINE": 0, "ELLIPSE": 4, "POLYGON": 0}

// measuredGroups are the Measurement Groups of r's reader measurements; track gives each
// group its tracking items.
func measuredGroups(r *Report, grid *volume.Volume, slices []source.Instance, src *source.Series, track func(string) []*dataset.DataSet) ([]*dataset.DataSet, error) {
	var groups []*dataset.DataSet
	for i, m := range r.Measured {
		if len(m.Values) == 0 {
			return nil, fmt.Errorf("measurement %d (%s) has no value", i+1, m.Label)
		}
		label := m.Label
		if label == "" {
			label = fmt.Sprintf("measurement %d", i+1)
		}
		kids := track(label)
		in3D := false
		for k, v := range m.Values {
			num, err := numItem("CONTAINS", v.Name, v.Value, v.Units)
			if err != nil {
				return nil, fmt.Errorf("measurement %d (%s) value %d: %w", i+1, label, k+1, err)
			}
			region, err := measuredRegion(v.Region, grid, slices, src)
			if err != nil {
				return nil, fmt.Errorf("measurement %d (%s) value %d: %w", i+1, label, k+1, err)
			}
			in3D = in3D || v.Region.World != nil
			num.Put(dataset.Seq(tag.ContentSequence, region))
			kids = append(kids, num)
		}
		if in3D {
			kids = append(kids, uidItem("CONTAINS", SourceSeries, src.SeriesInstanceUID))
		}
		groups = append(groups, container("CONTAINS", MeasurementGroup, "", kids...))
	}
	return groups, nil
}

// measuredRegion is a value's region as the INFERRED FROM child of its NUM.
func measuredRegion(g Region, grid *volume.Volume, slices []source.Instance, src *source.Series) (*dataset.DataSet, error) {
	want, ok := graphicPoints[g.Graphic]
	n := len(g.Points)
	if g.World != nil {
		n = len(g.World)
	}
	switch {
	case !ok || g.World == nil && g.Graphic == "POLYGON":
		return nil, fmt.Errorf("the graphic type %q is not one a region takes", g.Graphic)
	case want > 0 && n != want || want == 0 && n < 2:
		return nil, fmt.Errorf("a %s of %d points", g.Graphic, n)
	}
	if g.World != nil {
		if src.FrameOfReferenceUID == "" {
			return nil, fmt.Errorf("the source series %s has no Frame of Reference UID", src.SeriesInstanceUID)
		}
		pts := make([]float32, 0, 3*n)
		for _, p := range g.World {
			if !finite(p[0], p[1], p[2]) {
				return nil, fmt.Errorf("its coordinates are not finite")
			}
			pts = append(pts, float32(p[0]), float32(p[1]), float32(p[2]))
		}
		return contentItem("INFERRED FROM", "SCOORD3D", nil,
			dataset.Text(tag.GraphicType, "CS", g.Graphic),
			dataset.FL(tag.GraphicData, pts...),
			dataset.Text(tag.ReferencedFrameOfReferenceUID, "UI", src.FrameOfReferenceUID)), nil
	}
	if g.Slice < 0 || g.Slice >= len(slices) {
		return nil, fmt.Errorf("slice %d is outside the image's %d", g.Slice, len(slices))
	}
	pts := make([]float32, 0, 2*n)
	for _, p := range g.Points {
		if !finite(p[0], p[1]) {
			return nil, fmt.Errorf("its coordinates are not finite")
		}
		if p[0] < 0 || p[1] < 0 || p[0] > float64(grid.Dims[0]) || p[1] > float64(grid.Dims[1]) {
			return nil, fmt.Errorf("the point (%g, %g) is off the %d×%d image", p[0], p[1], grid.Dims[0], grid.Dims[1])
		}
		pts = append(pts, float32(p[0]), float32(p[1]))
	}
	return contentItem("INFERRED FROM", "SCOORD", nil,
		dataset.Text(tag.GraphicType, "CS", g.Graphic),
		dataset.FL(tag.GraphicData, pts...),
		dataset.Seq(tag.ContentSequence, imageItem("SELECTED FROM", slices[g.Slice]))), nil
}

// measuredOnSlices reports whether a reader's measurement lies on a slice.
func measuredOnSlices(r *Report) bool {
	for _, m := range r.Measured {
		for _, v := range m.Values {
			if v.Region.World == nil {
				return true
			}
		}
	}
	return false
}

// observer is the root's observer context: the reader when the report names one, else
// the model as device.
func observer(o Options) []*dataset.DataSet {
	if o.Reader != "" {
		return []*dataset.DataSet{
			codeItem("HAS OBS CONTEXT", ObserverType, PersonObserver),
			contentItem("HAS OBS CONTEXT", "PNAME", &PersonObserverName, dataset.Text(tag.PersonName, "PN", personName(o.Reader))),
		}
	}
	return []*dataset.DataSet{
		codeItem("HAS OBS CONTEXT", ObserverType, Device),
		uidItem("HAS OBS CONTEXT", DeviceObserverUID, o.DeviceUID),
		textItem("HAS OBS CONTEXT", DeviceObserverName, o.DeviceName),
		textItem("HAS OBS CONTEXT", DeviceObserverManufacturer, "AMID"),
		textItem("HAS OBS CONTEXT", DeviceObserverModelName, o.DeviceModel),
	}
}

// personName is a reader's name as DICOM writes a person's: its last word the family
// name, the words before it the given names ("Ann Lee" is Lee^Ann; a login name alone,
// "root", the family name root^).
func personName(name string) string {
	w := strings.Fields(strings.ReplaceAll(name, "^", " "))
	switch len(w) {
	case 0:
		return ""
	case 1:
		return dataset.Clip(w[0], 63) + "^" // a family name alone, its delimiter kept
	}
	return dataset.Clip(w[len(w)-1]+"^"+strings.Join(w[:len(w)-1], " "), 64)
}
