package dicom

import (
	"amid/viewer/dicom/internal/encoding"

	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"amid/viewer/volume"

	dcm "github.com/suyashkumar/dicom"
	"github.com/suyashkumar/dicom/pkg/tag"
)

// geometry is where one frame lies in patient space.
type geometry struct {
	ipp        [3]float64 // Image Position (Patient), mm, LPS
	iop        [6]float64 // Image Orientation (Patient): row then column direction cosines
	spacing    [2]float64 // Pixel Spacing: between rows (Y), then between columns (X), mm
	hasIPP     bool
	hasIOP     bool
	hasSpacing bool
}

// rescale is the modality LUT of one frame: value = slope·stored + intercept.
type rescale struct {
	slope, intercept float64
}

// frameInfo is what the per-frame functional groups of an enhanced multi-frame file say
// about one frame.
type frameInfo struct {
	geometry
	rescale
}

// header holds the values of the data elements this package uses, and nothing else: no
// identifying element other than the Series Instance UID (used to split series) is copied.
type header struct {
	rows, cols, spp, frames int
	bitsAlloc, bitsStored   int
	signed                  bool
	planar                  int
	photometric             string
	rescale                 rescale
	hasRescale              bool
	window                  [2]float64 // centre, width; width 0 when absent
	geometry
	thickness, between float64 // Slice Thickness, Spacing Between Slices (0 when absent)
	instance           int     // Instance Number, for ordering slices without positions
	modality           string
	manufacturer       string
	description        string
	seriesUID          string
	seriesNumber       int
	sopClass           string   // SOP Class UID: what kind of object the file is
	imageType          []string // Image Type values (ORIGINAL\PRIMARY\AXIAL, …\LOCALIZER)
	padding            float64  // Pixel Padding Value, rescaled; valid when hasPadding
	hasPadding         bool
	perFrame           []frameInfo // len frames when the file has per-frame functional groups
}

// elements indexes data elements by tag.
type elements map[tag.Tag]*dcm.Element

// parseHeader decodes the header (everything before the pixel data) with the DICOM
// library and copies out the values this package needs.
func parseHeader(l *layout) (h *header, err error) {
	defer func() {
		// The library panics on some malformed values (MustGetStrings on a Specific
		// Character Set that is not a string); that is bad input, not a bug here.
		if r := recover(); r != nil {
			h, err = nil, fmt.Errorf("%w: parsing the header: %v", volume.ErrFormat, r)
		}
	}()
	el, err := parseElements(l)
	if err != nil {
		return nil, err
	}
	h = &header{
		rows:        el.int(tag.Rows, 0),
		cols:        el.int(tag.Columns, 0),
		spp:         el.int(tag.SamplesPerPixel, 1),
		frames:      el.int(tag.NumberOfFrames, 1),
		bitsAlloc:   el.int(tag.BitsAllocated, 0),
		planar:      el.int(tag.PlanarConfiguration, 0),
		signed:      el.int(tag.PixelRepresentation, 0) == 1,
		photometric: el.str(tag.PhotometricInterpretation),
		instance:    el.int(tag.InstanceNumber, 0),
		modality:    el.str(tag.Modality),
		// Manufacturer and Series Description are descriptive, not identifying.
		manufacturer: el.str(tag.Manufacturer),
		description:  el.str(tag.SeriesDescription),
		seriesUID:    el.str(tag.SeriesInstanceUID),
		seriesNumber: el.int(tag.SeriesNumber, 0),
		sopClass:     el.str(tag.SOPClassUID),
		imageType:    el.strs(tag.ImageType),
		thickness:    el.float(tag.SliceThickness, 0),
		between:      el.float(tag.SpacingBetweenSlices, 0),
	}
	h.bitsStored = el.int(tag.BitsStored, h.bitsAlloc)
	h.rescale, h.hasRescale = el.rescale()
	h.window = el.window()
	h.geometry = el.geometry()
	if !h.hasSpacing {
		// Projection radiographs give the spacing at the detector.
		if s := el.floats(tag.ImagerPixelSpacing); len(s) == 2 {
			h.spacing, h.hasSpacing = [2]float64{s[0], s[1]}, true
		}
	}
	if err := h.functionalGroups(el); err != nil {
		return nil, err
	}
	if p := el.floats(tag.PixelPaddingValue); len(p) > 0 {
		v := p[0]
		if h.signed && v > math.MaxInt16 && h.bitsAlloc == 16 {
			// Written as US in a signed image: the same 16 bits, read as signed.
			v = float64(int16(uint16(v)))
		}
		h.padding, h.hasPadding = v*h.rescale.slope+h.rescale.intercept, true
	}
	return h, nil
}

// parseElements decodes the elements the scan kept (l.header) with the DICOM library. It
// may panic on malformed values; callers recover.
func parseElements(l *layout) (elements, error) {
	b := withMeta(l.header, encoding.Syntax(l.bo, l.implicit))
	p, err := dcm.NewParser(bytes.NewReader(b), int64(len(b)), nil, dcm.SkipPixelData(), dcm.AllowUnknownSpecificCharacterSet())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", volume.ErrFormat, err)
	}
	el := elements{}
	for {
		e, err := p.Next()
		if errors.Is(err, dcm.ErrorEndOfDICOM) {
			return el, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: parsing the header: %v", volume.ErrFormat, err)
		}
		el[e.Tag] = e
	}
}

// functionalGroups fills the per-frame geometry and rescale of an enhanced multi-frame
// file: a per-frame item wins over the shared item, which wins over the top level.
func (h *header) functionalGroups(el elements) error {
	shared := el.items(tag.SharedFunctionalGroupsSequence)
	perFrame := el.items(tag.PerFrameFunctionalGroupsSequence)
	if len(shared) == 0 && len(perFrame) == 0 {
		return nil
	}
	base := frameInfo{geometry: h.geometry, rescale: h.rescale}
	if len(shared) > 0 {
		base = groupInfo(shared[0], base)
		// The shared groups also give what the top level lacks.
		h.geometry = base.geometry
		if r, ok := shared[0].sub(tag.PixelValueTransformationSequence).rescale(); ok && !h.hasRescale {
			h.rescale, h.hasRescale = r, true
		}
		if w := shared[0].sub(tag.FrameVOILUTSequence).window(); w[1] > 0 && h.window[1] == 0 {
			h.window = w
		}
		if t := shared[0].sub(tag.PixelMeasuresSequence).float(tag.SliceThickness, 0); t > 0 && h.thickness == 0 {
			h.thickness = t
		}
	}
	if len(perFrame) == 0 {
		return nil
	}
	if len(perFrame) < h.frames {
		return fmt.Errorf("%w: %d per-frame functional group items for %d frames", volume.ErrFormat, len(perFrame), h.frames)
	}
	// Extra items (files cut down to fewer frames) are ignored, as pydicom does.
	h.perFrame = make([]frameInfo, h.frames)
	for i, item := range perFrame[:h.frames] {
		h.perFrame[i] = groupInfo(item, base)
	}
	return nil
}

// groupInfo applies one functional groups item to base.
func groupInfo(item elements, base frameInfo) frameInfo {
	f := base
	if pos := item.sub(tag.PlanePositionSequence).floats(tag.ImagePositionPatient); len(pos) == 3 {
		f.ipp, f.hasIPP = [3]float64{pos[0], pos[1], pos[2]}, true
	}
	if o := item.sub(tag.PlaneOrientationSequence).floats(tag.ImageOrientationPatient); len(o) == 6 {
		copy(f.iop[:], o)
		f.hasIOP = true
	}
	if s := item.sub(tag.PixelMeasuresSequence).floats(tag.PixelSpacing); len(s) == 2 {
		f.spacing, f.hasSpacing = [2]float64{s[0], s[1]}, true
	}
	if r, ok := item.sub(tag.PixelValueTransformationSequence).rescale(); ok {
		f.rescale = r
	}
	return f
}

func (el elements) geometry() geometry {
	var g geometry
	if p := el.floats(tag.ImagePositionPatient); len(p) == 3 {
		g.ipp, g.hasIPP = [3]float64{p[0], p[1], p[2]}, true
	}
	if o := el.floats(tag.ImageOrientationPatient); len(o) == 6 {
		copy(g.iop[:], o)
		g.hasIOP = true
	}
	if s := el.floats(tag.PixelSpacing); len(s) == 2 {
		g.spacing, g.hasSpacing = [2]float64{s[0], s[1]}, true
	}
	return g
}

func (el elements) rescale() (rescale, bool) {
	s, i := el.floats(tag.RescaleSlope), el.floats(tag.RescaleIntercept)
	r := rescale{1, 0}
	if len(s) > 0 && s[0] != 0 {
		r.slope = s[0]
	}
	if len(i) > 0 {
		r.intercept = i[0]
	}
	return r, len(s) > 0 || len(i) > 0
}

func (el elements) window() [2]float64 {
	c, w := el.floats(tag.WindowCenter), el.floats(tag.WindowWidth)
	if len(c) > 0 && len(w) > 0 && w[0] > 0 {
		return [2]float64{c[0], w[0]}
	}
	return [2]float64{}
}

func (el elements) str(t tag.Tag) string {
	s := el.strs(t)
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// strs returns the values of a string element, each trimmed.
func (el elements) strs(t tag.Tag) []string {
	s, _ := el.value(t).([]string)
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strings.TrimSpace(v)
	}
	return out
}

// value returns the value of element t ([]string, []int, []float64, …), nil when absent.
// An element written with VR UN is decoded with the VR of the data dictionary when that is
// a string, US or SS, as pydicom does.
func (el elements) value(t tag.Tag) any {
	e := el[t]
	if e == nil || e.Value == nil {
		return nil
	}
	v := e.Value.GetValue()
	b, ok := v.([]byte)
	if !ok || e.RawValueRepresentation != "UN" {
		return v
	}
	info, err := tag.Find(t)
	if err != nil || len(info.VRs) == 0 {
		return v
	}
	switch info.VRs[0] {
	case "AE", "AS", "CS", "DA", "DS", "DT", "IS", "LO", "SH", "TM", "UI":
		return strings.Split(trimString(b), "\\")
	case "US", "SS":
		out := make([]int, len(b)/2)
		for i := range out {
			u := binary.LittleEndian.Uint16(b[2*i:])
			if info.VRs[0] == "SS" {
				out[i] = int(int16(u))
			} else {
				out[i] = int(u)
			}
		}
		return out
	}
	return v
}

// floats reads a DS, IS, FL or FD value; nil when absent or unreadable (or not finite).
func (el elements) floats(t tag.Tag) []float64 {
	var out []float64
	switch v := el.value(t).(type) {
	case []string:
		for _, s := range v {
			f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return nil
			}
			out = append(out, f)
		}
	case []float64:
		out = append(out, v...)
	case []int:
		for _, i := range v {
			out = append(out, float64(i))
		}
	}
	for _, f := range out {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
	}
	return out
}

func (el elements) float(t tag.Tag, def float64) float64 {
	if f := el.floats(t); len(f) > 0 {
		return f[0]
	}
	return def
}

// int reads a US, UL, SS, SL or IS value.
func (el elements) int(t tag.Tag, def int) int {
	f := el.floats(t)
	if len(f) == 0 || f[0] != math.Trunc(f[0]) || math.Abs(f[0]) > 1<<31 {
		return def
	}
	return int(f[0])
}

// items returns the items of a sequence element, each as an index of its elements.
func (el elements) items(t tag.Tag) []elements {
	e := el[t]
	if e == nil || e.Value == nil || e.Value.ValueType() != dcm.Sequences {
		return nil
	}
	seq, _ := e.Value.GetValue().([]*dcm.SequenceItemValue)
	out := make([]elements, 0, len(seq))
	for _, it := range seq {
		m := elements{}
		items, _ := it.GetValue().([]*dcm.Element)
		for _, x := range items {
			m[x.Tag] = x
		}
		out = append(out, m)
	}
	return out
}

// sub returns the first item of a sequence, or an empty index.
func (el elements) sub(t tag.Tag) elements {
	if it := el.items(t); len(it) > 0 {
		return it[0]
	}
	return elements{}
}

// withMeta puts a minimal file meta information group (preamble, DICM, group length and
// the transfer syntax of the data set as it is now: inflated, pixel data cut off) before
// the data set, so that the library reads the data set with the encoding the scanner found
// instead of guessing it.
func withMeta(body []byte, ts string) []byte {
	if len(ts)%2 == 1 {
		ts += "\x00"
	}
	el := 8 + len(ts)
	out := make([]byte, 132, 132+12+el+len(body))
	copy(out[128:], "DICM")
	out = append(out, 2, 0, 0, 0, 'U', 'L', 4, 0)
	out = binary.LittleEndian.AppendUint32(out, uint32(el))
	out = append(out, 2, 0, 0x10, 0, 'U', 'I')
	out = binary.LittleEndian.AppendUint16(out, uint16(len(ts)))
	out = append(out, ts...)
	return append(out, body...)
}
