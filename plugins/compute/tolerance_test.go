package compute

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestIdentityDiff(t *testing.T) {
	a := Identity{Engine: "0.2.0", Device: "cpu", BLAS: "openblas 0.3.21", Core: "SkylakeX", Workers: 2}
	b := a
	b.Core = "Haswell"
	if got := Diff(a, b); got != "SkylakeX vs Haswell" {
		t.Errorf("Diff = %q", got)
	}
	b.Workers = 16
	if got := Diff(a, b); got != "SkylakeX vs Haswell, 2 vs 16 workers" {
		t.Errorf("Diff = %q", got)
	}
	if Diff(a, a) != "" || a.IsZero() || !(Identity{}).IsZero() {
		t.Error("equal identities differ, or zero is not zero")
	}
	if got := a.String(); got != "engine 0.2.0, cpu, openblas 0.3.21 SkylakeX, 2 workers" {
		t.Errorf("String = %q", got)
	}
}

// labelMap is a 100-voxel map with label 1 on voxels [0,40) and label 2 on [40,60).
func labelMap() []int32 {
	m := make([]int32, 100)
	for i := range 60 {
		m[i] = 1
		if i >= 40 {
			m[i] = 2
		}
	}
	return m
}

func TestLabels(t *testing.T) {
	a := NewAgreement(Table)
	a.Labels("same", labelMap(), labelMap())
	if !a.OK() || a.Worst[LabelDice].Value != 1 {
		t.Fatalf("identical maps: %v, worst %+v", a.Problems, a.Worst)
	}
	// One voxel of label 2 (20 voxels) flipped to background: Dice 2·19/(20+19) = 0.974,
	// far below 0.999, so the comparison must fail and name the label.
	r := labelMap()
	r[59] = 0
	a.Labels("case7", labelMap(), r)
	if a.OK() || !strings.Contains(a.Problems[0], "case7, label 2") {
		t.Fatalf("flipped voxel: %v", a.Problems)
	}
	if w := a.Worst[LabelDice]; math.Abs(w.Value-38.0/39) > 1e-12 || w.Where != "case7, label 2" {
		t.Errorf("worst %+v", w)
	}
	// A label absent from both counts as equal; a label only in the re-run is Dice 0.
	b := NewAgreement(Table)
	b.Labels("bg", make([]int32, 10), make([]int32, 10))
	if !b.OK() {
		t.Errorf("background-only maps: %v", b.Problems)
	}
	extra := make([]int32, 10)
	extra[3] = 5
	b.Labels("extra", make([]int32, 10), extra)
	if b.OK() || b.Worst[LabelDice].Value != 0 {
		t.Errorf("a label only in the re-run must fail: %v %+v", b.Problems, b.Worst)
	}
	b.Labels("size", make([]int32, 10), make([]int32, 11))
	if len(b.Problems) != 2 {
		t.Errorf("a size mismatch must fail: %v", b.Problems)
	}
}

// TestLabelsLargeVolume: on a 10⁶-voxel label with a handful of boundary flips, as float
// re-association produces, Dice stays above 0.999: 500 flips of 10⁶ give 0.9995.
func TestLabelsLargeVolume(t *testing.T) {
	o := make([]int32, 2_000_000)
	for i := range 1_000_000 {
		o[i] = 1
	}
	r := append([]int32(nil), o...)
	for i := range 500 {
		r[999_999-i] = 0
	}
	a := NewAgreement(Table)
	a.Labels("big", o, r)
	if !a.OK() {
		t.Fatalf("500 flips in 10⁶ voxels: %v", a.Problems)
	}
}

func TestImage(t *testing.T) {
	o := []float64{0, 100, 50, 25}
	a := NewAgreement(Table)
	a.Image("ok", o, []float64{0.05, 100, 50, 25}) // 0.05 of a range of 100: 5e-4 ≤ 1e-3
	if !a.OK() {
		t.Fatalf("within tolerance: %v", a.Problems)
	}
	a.Image("far", o, []float64{0, 100, 50.2, 25}) // 2e-3 of the range
	if a.OK() || !strings.Contains(a.Problems[0], "far") {
		t.Fatalf("beyond tolerance: %v", a.Problems)
	}
	c := NewAgreement(Table)
	c.Image("nan", o, []float64{0, 100, math.NaN(), 25})
	c.Image("const", []float64{0, 0}, []float64{0, 1e-9})
	if len(c.Problems) != 2 {
		t.Fatalf("NaN and a change of a zero image must fail: %v", c.Problems)
	}
}

func TestScoreAndObjects(t *testing.T) {
	a := NewAgreement(Table)
	a.Score("s1", 3.2, 3.2002, 4) // 5e-5 of a range of 4
	if !a.OK() {
		t.Fatal(a.Problems)
	}
	a.Score("s2", 3.2, 3.201, 4) // 2.5e-4
	if a.OK() {
		t.Fatal("score beyond tolerance passed")
	}
	b := NewAgreement(Table)
	orig := []Located{{[]float64{10, 10, 5, 5}, 0.9, "q1"}, {[]float64{30, 30, 5, 5}, 0.90001, "q1"}}
	swapped := []Located{{[]float64{30.001, 30, 5, 5}, 0.90001, "q1"}, {[]float64{10, 10, 5, 5}, 0.9, "q1"}}
	b.Objects("boxes", orig, swapped)
	if !b.OK() {
		t.Fatalf("a swap of near-equal scores is not a difference: %v", b.Problems)
	}
	b.Objects("moved", orig, []Located{{[]float64{10, 10.5, 5, 5}, 0.9, "q1"}, orig[1]})
	b.Objects("class", orig, []Located{{[]float64{10, 10, 5, 5}, 0.9, "q2"}, orig[1]})
	b.Objects("count", orig, orig[:1])
	for _, where := range []string{"moved", "class", "count"} {
		if !slices.ContainsFunc(b.Problems, func(p string) bool { return strings.HasPrefix(p, where+":") || strings.HasPrefix(p, where+",") }) {
			t.Errorf("%s: no problem reported: %v", where, b.Problems)
		}
	}
	c := NewAgreement(Table)
	c.Categorical("cls", true, "")
	c.Categorical("cls2", false, "class 1 in the original, 2 in the re-run")
	if c.OK() || c.Worst[Categories].Value != 1 {
		t.Fatalf("%v %+v", c.Problems, c.Worst)
	}
	if s := c.Summary(); !strings.Contains(s, "categorical outputs that differ: 1") {
		t.Errorf("summary %q", s)
	}
}
