// Package predictions compares two computations of a task's prediction files (a model
// package's and its re-run's, or a GPU's and a CPU's) under the tolerances of package
// compute: the one comparison the host's verification and the plugins' cross-device tests
// share.
package predictions

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"amid/plugins/compute"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
)

// Compare compares one prediction file (orig) with another's computation of it (rerun)
// under ag's tolerances: an annotation (.json) field by field (scores against the spec's
// score range; classes and 3D boxes equal; boxes and points as located objects); an image
// as a label map, or, for an enhancement task, as an image.
func Compare(ag *compute.Agreement, spec *taskspec.Spec, name, orig, rerun string) error {
	if strings.HasSuffix(orig, ".json") {
		a, err := taskspec.ReadAnnotation(orig, spec)
		if err != nil {
			return err
		}
		b, err := taskspec.ReadAnnotation(rerun, spec)
		if err != nil {
			return fmt.Errorf("the re-run's file: %w", err)
		}
		annotations(ag, spec, name, a, b)
		return nil
	}
	a, err := imageio.Read(orig)
	if err != nil {
		return err
	}
	b, err := imageio.Read(rerun)
	if err != nil {
		return fmt.Errorf("the re-run's file: %w", err)
	}
	if a.Dims != b.Dims {
		ag.Fail("%s: the re-run's image has dims %v, the original %v", name, b.Dims, a.Dims)
		return nil
	}
	n := a.Len()
	if spec.Kind == taskspec.Enhancement {
		x, y := make([]float64, n), make([]float64, n)
		for i := range n {
			x[i], y[i] = a.AtIndex(i), b.AtIndex(i)
		}
		ag.Image(name, x, y)
		return nil
	}
	x, y := make([]int32, n), make([]int32, n)
	for i := range n {
		x[i], y[i] = int32(a.AtIndex(i)), int32(b.AtIndex(i))
	}
	ag.Labels(name, x, y)
	return nil
}

func annotations(ag *compute.Agreement, spec *taskspec.Spec, name string, a, b *taskspec.Annotation) {
	if a.Score != nil || b.Score != nil {
		switch {
		case a.Score == nil || b.Score == nil:
			ag.Categorical(name, false, "a score in only one of the original and the re-run")
		case spec.Score == nil:
			ag.Categorical(name, *a.Score == *b.Score, fmt.Sprintf("score %g in the original, %g in the re-run, and the task names no score range", *a.Score, *b.Score))
		default:
			ag.Score(name, *a.Score, *b.Score, spec.Score.Max-spec.Score.Min)
		}
	}
	if len(a.Classes) > 0 || len(b.Classes) > 0 {
		ag.Categorical(name, maps.Equal(a.Classes, b.Classes), fmt.Sprintf("classes %v in the original, %v in the re-run", a.Classes, b.Classes))
	}
	if a.Box3D != nil || b.Box3D != nil {
		eq := a.Box3D != nil && b.Box3D != nil && *a.Box3D == *b.Box3D
		ag.Categorical(name, eq, fmt.Sprintf("3D box %v in the original, %v in the re-run", a.Box3D, b.Box3D))
	}
	if len(a.Boxes) > 0 || len(b.Boxes) > 0 {
		ag.Objects(name+" boxes", boxes(a.Boxes), boxes(b.Boxes))
	}
	if len(a.Points) > 0 || len(b.Points) > 0 {
		ag.Objects(name+" points", points(a.Points), points(b.Points))
	}
}

func boxes(bs []taskspec.Box) []compute.Located {
	out := make([]compute.Located, len(bs))
	for i, b := range bs {
		var key strings.Builder
		for _, k := range slices.Sorted(maps.Keys(b.Attrs)) {
			fmt.Fprintf(&key, "%s=%d;", k, b.Attrs[k])
		}
		out[i] = compute.Located{Coords: []float64{b.X, b.Y, b.W, b.H}, Score: b.Score, Key: key.String()}
	}
	return out
}

func points(ps []taskspec.Point) []compute.Located {
	out := make([]compute.Located, len(ps))
	for i, p := range ps {
		out[i] = compute.Located{Coords: []float64{p.X, p.Y}, Score: p.Score, Key: p.Class}
	}
	return out
}
