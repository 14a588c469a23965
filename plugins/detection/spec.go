package main

import (
	"errors"
	"fmt"
	"math"

	"amid/plugins/protocol"
	"amid/plugins/taskspec"
)

// Modes of detection, chosen from the task's spec.
const (
	modeBoxes  = "boxes"  // 2D boxes, each with the spec's attributes
	modePoints = "points" // 2D points of the spec's classes
	modeBox3D  = "box3d"  // one 3D box per volume
)

// ErrInput marks training or prediction input that cannot be used: a missing, corrupt or
// empty label file, or an object outside its image.
var ErrInput = errors.New("unusable detection input")

// taskSpec parses the spec of a detection task and returns it with its mode.
func taskSpec(t protocol.Task) (*taskspec.Spec, string, error) {
	if t.Kind != taskspec.Detection {
		return nil, "", fmt.Errorf("the detection plugin handles detection tasks only, not %q", t.Kind)
	}
	if len(t.Spec) == 0 {
		return nil, "", fmt.Errorf("detection task without a spec: the task's attributes, point classes or box3d must be given")
	}
	s, err := taskspec.Parse(t.Spec)
	if err != nil {
		return nil, "", fmt.Errorf("detection task spec: %w", err)
	}
	if s.Kind != taskspec.Detection {
		return nil, "", fmt.Errorf("detection task spec: kind %q", s.Kind)
	}
	if s.PointRadius < 0 || math.IsNaN(s.PointRadius) || math.IsInf(s.PointRadius, 0) {
		return nil, "", fmt.Errorf("detection task spec: point radius %v", s.PointRadius)
	}
	switch {
	case s.Box3D:
		if s.Dims != 3 {
			return nil, "", fmt.Errorf("detection task spec: box3d needs a 3-D task, not %d-D", s.Dims)
		}
		return s, modeBox3D, nil
	case len(s.Points) > 0:
		if s.Dims != 2 {
			return nil, "", fmt.Errorf("detection task spec: points are detected in 2-D images, not %d-D", s.Dims)
		}
		seen := map[string]bool{}
		for _, p := range s.Points {
			if p == "" || seen[p] {
				return nil, "", fmt.Errorf("detection task spec: point class %q is empty or repeated", p)
			}
			seen[p] = true
		}
		return s, modePoints, nil
	}
	if s.Dims != 2 {
		return nil, "", fmt.Errorf("detection task spec: boxes with attributes are 2-D, the task is %d-D (set box3d for one 3-D box)", s.Dims)
	}
	return s, modeBoxes, nil
}

// laneMode is the mode a lane trains.
func laneMode(lane string) string {
	switch lane {
	case laneBoxes, laneTransfer:
		return modeBoxes
	case lanePoints:
		return modePoints
	}
	return modeBox3D
}

// readLabel reads and checks a case's annotation file for mode: it must hold at least
// one object of the mode.
func readLabel(id, path string, s *taskspec.Spec, mode string) (*taskspec.Annotation, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: case %s has no label file", ErrInput, id)
	}
	a, err := taskspec.ReadAnnotation(path, s)
	if err != nil {
		return nil, fmt.Errorf("%w: case %s: %w", ErrInput, id, err)
	}
	switch {
	case mode == modeBoxes && len(a.Boxes) == 0:
		return nil, fmt.Errorf("%w: case %s: label %s lists no boxes", ErrInput, id, path)
	case mode == modePoints && len(a.Points) == 0:
		return nil, fmt.Errorf("%w: case %s: label %s lists no points", ErrInput, id, path)
	case mode == modeBox3D && a.Box3D == nil:
		return nil, fmt.Errorf("%w: case %s: label %s has no box3d", ErrInput, id, path)
	}
	if mode == modeBoxes {
		for i, b := range a.Boxes {
			for _, at := range s.Attributes {
				if _, ok := b.Attrs[at.Name]; !ok {
					return nil, fmt.Errorf("%w: case %s: label %s: box %d lacks attribute %s", ErrInput, id, path, i, at.Name)
				}
			}
		}
	}
	return a, nil
}

// edgeTol is how far (pixels or voxels) an object may reach past the image's edge before
// it is refused; annotation tools often end a box on the last pixel's far edge.
const edgeTol = 1

// checkInside refuses objects of a that lie outside an image of dims (X, Y, Z) voxels.
func checkInside(id, path string, a *taskspec.Annotation, dims [3]int) error {
	W, H := float64(dims[0]), float64(dims[1])
	for i, b := range a.Boxes {
		if b.X < -edgeTol || b.Y < -edgeTol || b.X+b.W > W+edgeTol || b.Y+b.H > H+edgeTol {
			return fmt.Errorf("%w: case %s: label %s: box %d (%g, %g, %g×%g) lies outside the %g×%g image", ErrInput, id, path, i, b.X, b.Y, b.W, b.H, W, H)
		}
	}
	for i, p := range a.Points {
		if p.X < -edgeTol || p.Y < -edgeTol || p.X > W+edgeTol || p.Y > H+edgeTol {
			return fmt.Errorf("%w: case %s: label %s: point %d (%g, %g) lies outside the %g×%g image", ErrInput, id, path, i, p.X, p.Y, W, H)
		}
	}
	if b := a.Box3D; b != nil {
		for k := range 3 {
			if b.Min[k]+b.Size[k] > dims[k] {
				return fmt.Errorf("%w: case %s: label %s: 3D box min %v size %v reaches past the image's %v voxels", ErrInput, id, path, b.Min, b.Size, dims)
			}
		}
	}
	return nil
}
