package widget

import (
	"math"
	"slices"

	"amid/viewer/volume"
)

// Preset is a named display window.
type Preset struct {
	Name   string
	Window Window
}

// CTPresets are the usual CT windows in Hounsfield units (width/level).
var CTPresets = []Preset{
	{"brain", Window{80, 40}},
	{"soft tissue", Window{400, 40}},
	{"lung", Window{1500, -600}},
	{"bone", Window{2500, 480}},
	{"liver", Window{150, 90}},
}

// PercentileWindow is the window spanning the 0.5th to 99.5th percentile of channel 0 of v
// (NaNs ignored), from at most 1<<18 voxels sampled at an even stride.
func PercentileWindow(v *volume.Volume) Window {
	n := v.NumVoxels()
	if n == 0 || volume.DataLen(v.Data) != v.Len() {
		return Window{1, 0.5}
	}
	step := max(1, n/(1<<18))
	vals := make([]float64, 0, n/step+1)
	for i := 0; i < n; i += step {
		if f := v.AtIndex(i * v.Dims[3]); !math.IsNaN(f) && !math.IsInf(f, 0) {
			vals = append(vals, f)
		}
	}
	if len(vals) == 0 {
		return Window{1, 0.5}
	}
	slices.Sort(vals)
	q := func(p float64) float64 { return vals[int(p*float64(len(vals)-1)+0.5)] }
	lo, hi := q(0.005), q(0.995)
	if hi <= lo {
		hi = lo + 1
	}
	return Window{hi - lo, (hi + lo) / 2}
}

// LooksCT reports whether v looks like a CT in Hounsfield units: a single-channel image whose
// 0.5th percentile is near air (at or below −900 HU).
func LooksCT(v *volume.Volume, w Window) bool {
	return v.Dims[3] == 1 && w.Level-w.Width/2 <= -900
}

// RGBWindow shows uint8 colour values as stored.
var RGBWindow = Window{255, 127.5}

// DefaultPresets returns the presets for number keys 1..5: the CT presets for a CT, the
// stored colours for an RGB image (IsRGB), else the percentile window alone.
func DefaultPresets(v *volume.Volume) []Preset {
	if IsRGB(v) {
		return []Preset{{"colour", RGBWindow}}
	}
	w := PercentileWindow(v)
	if LooksCT(v, w) {
		return CTPresets
	}
	return []Preset{{"auto", w}}
}
