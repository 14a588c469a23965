package ingest

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"amid/assets/fileio"
	"amid/host/task"
	"amid/plugins/taskspec"
)

// yoloSlack is how far past the image's edge a YOLO box may reach and still be inside it:
// YOLO files print 6 decimals, so an edge (a centre less half a size) is off by up to 1e-6.
const yoloSlack = 1e-6

// parseYOLO reads a YOLO label file: a line a box, "class cx cy w h" with the centre and
// size normalised to the image's width w and height h, class an index into classes (the
// class list; each entry the attribute's class). Blank lines are passed over. Each box
// must lie inside the image.
func parseYOLO(b []byte, w, h int, attr taskspec.Attribute, classes []int) ([]taskspec.Box, error) {
	boxes := []taskspec.Box{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), MaxFileBytes)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 5 {
			return nil, fmt.Errorf("line %d has %d fields; a YOLO box is class cx cy w h", line, len(f))
		}
		k, err := strconv.Atoi(f[0])
		if err != nil || k < 0 || k >= len(classes) {
			return nil, fmt.Errorf("line %d: class %q is not an index of the %d classes", line, f[0], len(classes))
		}
		var v [4]float64
		for i, s := range f[1:] {
			if v[i], err = strconv.ParseFloat(s, 64); err != nil || math.IsNaN(v[i]) || math.IsInf(v[i], 0) {
				return nil, fmt.Errorf("line %d: %q is not a number", line, s)
			}
		}
		cx, cy, bw, bh := v[0], v[1], v[2], v[3]
		if !(bw > 0 && bh > 0) {
			return nil, fmt.Errorf("line %d: the box's size %g × %g is not positive", line, bw, bh)
		}
		if cx-bw/2 < -yoloSlack || cy-bh/2 < -yoloSlack || cx+bw/2 > 1+yoloSlack || cy+bh/2 > 1+yoloSlack {
			return nil, fmt.Errorf("line %d: the box (centre %g, %g, size %g × %g, normalised) reaches outside the image", line, cx, cy, bw, bh)
		}
		x0, y0 := max(cx-bw/2, 0)*float64(w), max(cy-bh/2, 0)*float64(h)
		x1, y1 := min(cx+bw/2, 1)*float64(w), min(cy+bh/2, 1)*float64(h)
		boxes = append(boxes, taskspec.Box{X: x0, Y: y0, W: x1 - x0, H: y1 - y0, Score: 1, Attrs: map[string]int{attr.Name: classes[k]}})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return boxes, nil
}

// vocDoc is a Pascal VOC annotation as LabelImg and CVAT write it.
type vocDoc struct {
	XMLName  xml.Name `xml:"annotation"`
	Folder   string   `xml:"folder,omitempty"`
	Filename string   `xml:"filename,omitempty"`
	Size     *vocSize `xml:"size"`
	Objects  []vocObj `xml:"object"`
}

type vocSize struct {
	Width  float64 `xml:"width"`
	Height float64 `xml:"height"`
	Depth  int     `xml:"depth"`
}

type vocObj struct {
	Name      string   `xml:"name"`
	Pose      string   `xml:"pose,omitempty"`
	Truncated int      `xml:"truncated"`
	Difficult int      `xml:"difficult"`
	Box       *vocBox  `xml:"bndbox"`
	Score     *float64 `xml:"score,omitempty"`
}

type vocBox struct {
	XMin float64 `xml:"xmin"`
	YMin float64 `xml:"ymin"`
	XMax float64 `xml:"xmax"`
	YMax float64 `xml:"ymax"`
}

// parseVOC reads a Pascal VOC annotation: each object's name (a class of attr, without
// regard to case) and bndbox, xmin ymin xmax ymax in pixels (x = xmin, w = xmax − xmin,
// as albumentations' pascal_voc). Its size, when given, must be the image's, and every
// box must lie inside the image.
func parseVOC(b []byte, w, h int, attr taskspec.Attribute) ([]taskspec.Box, error) {
	var doc vocDoc
	if err := xml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not a Pascal VOC annotation: %w", err)
	}
	if s := doc.Size; s != nil && (s.Width != 0 || s.Height != 0) && (s.Width != float64(w) || s.Height != float64(h)) {
		return nil, fmt.Errorf("its size is %g×%g, but the image is %d×%d", s.Width, s.Height, w, h)
	}
	boxes := []taskspec.Box{}
	for i, o := range doc.Objects {
		k := slices.IndexFunc(attr.Classes, func(c string) bool { return strings.EqualFold(c, strings.TrimSpace(o.Name)) })
		if k < 0 {
			return nil, fmt.Errorf("object %d: %q is not one of %s's classes %s", i+1, o.Name, attr.Name, strings.Join(attr.Classes, ", "))
		}
		bb := o.Box
		if bb == nil {
			return nil, fmt.Errorf("object %d (%s) has no bndbox", i+1, o.Name)
		}
		if !(bb.XMax > bb.XMin && bb.YMax > bb.YMin) || math.IsInf(bb.XMax-bb.XMin, 0) || math.IsInf(bb.YMax-bb.YMin, 0) {
			return nil, fmt.Errorf("object %d (%s): the box %g,%g–%g,%g is empty", i+1, o.Name, bb.XMin, bb.YMin, bb.XMax, bb.YMax)
		}
		if bb.XMin < 0 || bb.YMin < 0 || bb.XMax > float64(w) || bb.YMax > float64(h) {
			return nil, fmt.Errorf("object %d (%s): the box %g,%g–%g,%g reaches outside the %d×%d image", i+1, o.Name, bb.XMin, bb.YMin, bb.XMax, bb.YMax, w, h)
		}
		boxes = append(boxes, taskspec.Box{X: bb.XMin, Y: bb.YMin, W: bb.XMax - bb.XMin, H: bb.YMax - bb.YMin, Score: 1, Attrs: map[string]int{attr.Name: k}})
	}
	return boxes, nil
}

// boxes converts a case's YOLO or VOC file into an annotation of boxes, on the grid of
// its first image.
func (c *converter) boxes(cs task.Case, format string) (string, error) {
	raw, sum, err := c.source(cs.Label, format)
	if err != nil {
		return "", err
	}
	if len(cs.Images) == 0 {
		return "", fmt.Errorf("ingest: case %s has no image to take the boxes' frame from", cs.ID)
	}
	st, err := os.Stat(cs.Images[0])
	if err != nil {
		return "", fmt.Errorf("ingest: %w", err)
	}
	out := filepath.Join(c.out, cs.ID+".json")
	key := c.key(cs.ID, []byte(format), sum, fmt.Appendf(nil, "%s %d %d", cs.Images[0], st.Size(), st.ModTime().UnixNano()))
	if cached(out, key) {
		return out, nil
	}
	g, err := gridOf(cs.Images[0])
	if err != nil {
		return "", fmt.Errorf("ingest: case %s: %w", cs.ID, err)
	}
	attr, classes, err := c.t.BoxAttribute()
	if err != nil {
		return "", bad(cs.Label, err)
	}
	var bs []taskspec.Box
	if format == task.LabelYOLO {
		bs, err = parseYOLO(raw, g[0], g[1], attr, classes)
	} else {
		bs, err = parseVOC(raw, g[0], g[1], attr)
	}
	if err != nil {
		return "", bad(cs.Label, err)
	}
	a := &taskspec.Annotation{Boxes: bs}
	if err := a.Check(c.spec); err != nil {
		return "", bad(cs.Label, fmt.Errorf("case %s: %w", cs.ID, err))
	}
	b, err := a.Marshal()
	if err != nil {
		return "", fmt.Errorf("ingest: case %s: %w", cs.ID, err)
	}
	return out, save(out, key, func(p string) error { return fileio.Write(p, b) })
}
