package ingest

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"amid/host/yamldoc"
	"amid/plugins/taskspec"
)

// parseROI reads a TopCoW ROI text file: a line "Size (Voxels): x y z" and a line
// "Location (Voxels): x y z", location being the 0-based minimum corner, as the grader
// reads them.
func parseROI(b []byte) (*taskspec.Box3D, error) {
	var size, loc []int
	for n, line := range strings.Split(string(b), "\n") {
		key, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		var dst *[]int
		switch {
		case strings.HasPrefix(key, "size"):
			dst = &size
		case strings.HasPrefix(key, "location"):
			dst = &loc
		default:
			continue
		}
		if *dst != nil {
			return nil, fmt.Errorf("line %d repeats %q", n+1, key)
		}
		f := strings.FieldsFunc(rest, func(r rune) bool {
			return r == ' ' || r == '\t' || r == ',' || r == '\r' || r == '[' || r == ']' || r == '(' || r == ')'
		})
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d holds %d values, want 3 voxel counts", n+1, len(f))
		}
		*dst = make([]int, 3)
		for k, s := range f {
			v, err := strconv.Atoi(s)
			if err != nil || v < 0 || v > math.MaxInt32 {
				return nil, fmt.Errorf("line %d: %q is not a voxel count", n+1, s)
			}
			(*dst)[k] = v
		}
	}
	if size == nil || loc == nil {
		return nil, fmt.Errorf(`it lacks the "Size (Voxels):" or the "Location (Voxels):" line`)
	}
	box := &taskspec.Box3D{}
	for k := range 3 {
		if size[k] == 0 {
			return nil, fmt.Errorf("the box size %v is empty along axis %d", size, k)
		}
		box.Min[k], box.Size[k] = loc[k], size[k]
	}
	return box, nil
}

// parseEdges reads a TopCoW edge list (YAML mapping of regions to edge→0/1 mappings) into
// class indices of the task's attributes: attribute a is the edge a.Name of region
// a.Group (any region when the group is empty). A value names a class by its text (class
// "1" for value 1) or, when the classes are not numbers, by its index.
func parseEdges(b []byte, attrs []taskspec.Attribute) (map[string]int, error) {
	var doc map[string]map[string]any
	if err := yamldoc.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not an edge-list YAML mapping: %s", strings.Join(strings.Fields(err.Error()), " "))
	}
	out := make(map[string]int, len(attrs))
	for _, a := range attrs {
		v, found := edgeValue(doc, a)
		if !found {
			where := "any region"
			if a.Group != "" {
				where = "region " + a.Group
			}
			return nil, fmt.Errorf("%s has no edge %q", where, a.Name)
		}
		c, ok := classIndex(v, a.Classes)
		if !ok {
			return nil, fmt.Errorf("edge %q is %v, not one of the classes %v", a.Name, v, a.Classes)
		}
		out[a.Name] = c
	}
	return out, nil
}

func edgeValue(doc map[string]map[string]any, a taskspec.Attribute) (any, bool) {
	if a.Group != "" {
		v, ok := doc[a.Group][a.Name]
		return v, ok
	}
	for _, region := range doc {
		if v, ok := region[a.Name]; ok {
			return v, true
		}
	}
	return nil, false
}

// classIndex maps a YAML value (0/1, true/false, "0"/"1") to a class index.
func classIndex(v any, classes []string) (int, bool) {
	var n int64
	switch x := v.(type) {
	case bool:
		if x {
			n = 1
		}
	case uint64:
		if x > math.MaxInt32 {
			return 0, false
		}
		n = int64(x)
	case int64:
		n = x
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > math.MaxInt32 {
			return 0, false
		}
		n = int64(x)
	case string:
		for i, c := range classes {
			if c == x {
				return i, true
			}
		}
		return 0, false
	default:
		return 0, false
	}
	s := strconv.FormatInt(n, 10)
	numeric := false
	for i, c := range classes {
		if c == s {
			return i, true
		}
		if _, err := strconv.Atoi(c); err == nil {
			numeric = true
		}
	}
	if numeric || n < 0 || n >= int64(len(classes)) {
		return 0, false
	}
	return int(n), true
}
