package imageplugin

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// TestMedianDims: the median per axis over the cases that give it (the upper middle of an
// even count), zero for an axis no case gives and for input that is not a fingerprint.
func TestMedianDims(t *testing.T) {
	fp := `{"cases":[{"dims":[20,64,64]},{"dims":[24,0,80]},{"dims":[30,80,80]},{"dims":[1,2]}]}`
	if got, want := MedianDims([]byte(fp)), [3]int{24, 80, 80}; got != want {
		t.Errorf("median %v, want %v", got, want)
	}
	if got := MedianDims([]byte("not json")); got != [3]int{} {
		t.Errorf("median of no fingerprint %v", got)
	}
}

// TestPlanned: the grid shrinks to images smaller than it, never below 2 on an axis the
// images have more than one voxel of, and not on an axis they leave unknown.
func TestPlanned(t *testing.T) {
	if n := Planned(3, [3]int{24, 64, 0}, 7); n.Grid != [3]int{24, 48, 48} || n.Steps != 7 || n.Batch != 4 {
		t.Errorf("3D: %+v", n)
	}
	if n := Planned(2, [3]int{1, 100, 1}, 7); n.Grid != [3]int{1, 100, 2} || n.Widths[0] != 16 || n.Batch != 16 {
		t.Errorf("2D: %+v", n)
	}
}

// TestSpec: the kind is checked first, a task without a spec gets none's, check runs
// before the dimensions are compared.
func TestSpec(t *testing.T) {
	none := func() (*taskspec.Spec, error) { return nil, errors.New("none") }
	bad := func(*taskspec.Spec) error { return errors.New("check") }
	sp := []byte(`{"kind":"iqa","dims":2}`)
	for _, tc := range []struct {
		task  protocol.Task
		check func(*taskspec.Spec) error
		want  string
	}{
		{protocol.Task{Kind: "classification", Spec: sp}, nil, `handles iqa tasks only, not "classification"`},
		{protocol.Task{Kind: "iqa"}, nil, "none"},
		{protocol.Task{Kind: "iqa", Dims: 3, Spec: sp}, bad, "check"},
		{protocol.Task{Kind: "iqa", Dims: 3, Spec: sp}, nil, "the spec has 2 dimensions, the task 3"},
	} {
		if _, err := Spec(tc.task, "iqa", none, tc.check); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error containing %q", tc.task, err, tc.want)
		}
	}
	if s, err := Spec(protocol.Task{Kind: "iqa", Dims: 2, Spec: sp}, "iqa", none, nil); err != nil || s.Dims != 2 {
		t.Errorf("valid spec: %+v, %v", s, err)
	}
}

// TestOutPath: a plain id names <id>.json in the folder; anything else is refused.
func TestOutPath(t *testing.T) {
	if p, err := OutPath("out", "case1"); err != nil || p != filepath.Join("out", "case1.json") {
		t.Errorf("case1: %q, %v", p, err)
	}
	for _, id := range []string{"", ".", "..", "a/b", "../x"} {
		if _, err := OutPath("out", id); err == nil {
			t.Errorf("id %q accepted", id)
		}
	}
}
