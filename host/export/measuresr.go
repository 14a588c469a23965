package export

import (
	"fmt"
	"math"

	"amid/viewer/dicom/sr"
	"amid/viewer/measure"
	"amid/viewer/volume"
)

// MeasuredSR is a reader's measurements on the image grid (the volume they were drawn on,
// as amid/viewer/dicom reads the source series) as a structured report's measurement
// groups (sr.Measured), each value with its UCUM units and the region it was measured
// on: on the series' own image plane (the grid's third axis) in the image's columns and
// rows, on any other plane in patient millimetres. The values are computed again from
// grid (measure.Set.Load), so a measurement that is not on it is an error.
func MeasuredSR(grid *volume.Volume, m *Measurements) ([]sr.Measured, error) {
	set, err := measure.NewSet(grid, m.Unit)
	if err != nil {
		return nil, fmt.Errorf("case %s's measurements: %w", m.Case, err)
	}
	if err := set.Load(m.Measurements); err != nil {
		return nil, fmt.Errorf("case %s's measurements on its image: %w", m.Case, err)
	}
	var out []sr.Measured
	for _, x := range set.List() {
		g, err := measuredOf(grid, x, set.Unit())
		if err != nil {
			return nil, fmt.Errorf("case %s's measurement %d: %w", m.Case, x.ID, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// measuredOf is one measurement as a measurement group.
func measuredOf(grid *volume.Volume, x measure.Measurement, unit string) (sr.Measured, error) {
	label := x.Label
	if label == "" {
		label = fmt.Sprintf("%s %d", x.Kind, x.ID)
	}
	g := sr.Measured{Label: label}
	region := func(graphic string, pts ...[3]float64) sr.Region {
		if x.Axis == 2 {
			r := sr.Region{Graphic: graphic, Slice: x.Slice}
			for _, p := range pts {
				r.Points = append(r.Points, [2]float64{p[0], p[1]})
			}
			return r
		}
		if graphic == "POLYLINE" && len(pts) > 2 && pts[0] == pts[len(pts)-1] {
			graphic = "POLYGON"
		}
		r := sr.Region{Graphic: graphic}
		for _, p := range pts {
			r.World = append(r.World, measure.World(grid, p))
		}
		return r
	}
	add := func(name sr.Code, value string, r sr.Region) error {
		v, ok := x.Value(value)
		if !ok {
			return fmt.Errorf("a %s without its %s", x.Kind, value)
		}
		g.Values = append(g.Values, sr.MeasuredValue{Name: name, Value: v.Value, Units: ucum(v.Unit), Region: r})
		return nil
	}
	p := x.Points
	var err error
	switch x.Kind {
	case measure.Length:
		err = add(sr.LengthCode, "length", region("POLYLINE", p[0], p[1]))
	case measure.Bidirectional:
		err = add(sr.LongAxis, "long axis", region("POLYLINE", p[0], p[1]))
		if err == nil {
			err = add(sr.ShortAxis, "short axis", region("POLYLINE", p[2], p[3]))
		}
	case measure.Ellipse, measure.Freehand:
		var r sr.Region
		if x.Kind == measure.Ellipse {
			r = region("ELLIPSE", ellipseAxes(grid, x)...)
		} else {
			r = region("POLYLINE", append(append([][3]float64(nil), p...), p[0])...)
		}
		for _, s := range []struct {
			code sr.Code
			name string
		}{{sr.AreaCode, "area"}, {sr.MeanCode, "mean"}, {sr.StandardDeviation, "sd"}, {sr.Minimum, "min"}, {sr.MaximumCode, "max"}} {
			if err = add(s.code, s.name, r); err != nil {
				break
			}
		}
	case measure.Probe:
		name := sr.OwnCode("image value", "Image value")
		if unit == measure.UnitHU {
			name = sr.AttenuationCoeff
		}
		err = add(name, "value", region("POINT", p[0]))
	case measure.Angle:
		err = add(sr.AngleCode, "angle", region("POLYLINE", p[0], p[1], p[2]))
	default:
		err = fmt.Errorf("a measurement of kind %q", x.Kind)
	}
	return g, err
}

// ellipseAxes are the ends of the major axis, then of the minor axis, of the ellipse
// that fills the box of x's two points on its plane (the longer in the world first).
func ellipseAxes(grid *volume.Volume, x measure.Measurement) [][3]float64 {
	a, b := (x.Axis+1)%3, (x.Axis+2)%3
	p, q := x.Points[0], x.Points[1]
	c := [3]float64{(p[0] + q[0]) / 2, (p[1] + q[1]) / 2, (p[2] + q[2]) / 2}
	end := func(k int, s float64) [3]float64 {
		e := c
		e[k] += s * math.Abs(q[k]-p[k]) / 2
		return e
	}
	ua, ub := [][3]float64{end(a, -1), end(a, 1)}, [][3]float64{end(b, -1), end(b, 1)}
	la := dist(measure.World(grid, ua[0]), measure.World(grid, ua[1]))
	lb := dist(measure.World(grid, ub[0]), measure.World(grid, ub[1]))
	if lb > la {
		ua, ub = ub, ua
	}
	return append(ua, ub...)
}

func dist(p, q [3]float64) float64 {
	return math.Sqrt((p[0]-q[0])*(p[0]-q[0]) + (p[1]-q[1])*(p[1]-q[1]) + (p[2]-q[2])*(p[2]-q[2]))
}

// ucum is a UCUM unit as a code.
func ucum(u string) sr.Code {
	switch u {
	case measure.UnitMM:
		return sr.Millimeter
	case measure.UnitMM2:
		return sr.SquareMillimeter
	case measure.UnitDeg:
		return sr.Degree
	case measure.UnitHU:
		return sr.HounsfieldUnit
	case measure.UnitNone, "":
		return sr.NoUnits
	}
	return sr.Code{Value: u, Scheme: "UCUM", Meaning: u}
}
