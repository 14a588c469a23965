package submit

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"path/filepath"
	"strconv"

	"amid/plugins/taskspec"
	"amid/viewer/imageio"
)

// vocAnnotation is a Pascal VOC annotation as LabelImg writes it, with each object's
// score.
type vocAnnotation struct {
	XMLName  xml.Name    `xml:"annotation"`
	Filename string      `xml:"filename"`
	Size     vocSize     `xml:"size"`
	Objects  []vocObject `xml:"object"`
}

type vocSize struct {
	Width  int `xml:"width"`
	Height int `xml:"height"`
	Depth  int `xml:"depth"`
}

type vocObject struct {
	Name      string  `xml:"name"`
	Pose      string  `xml:"pose"`
	Truncated int     `xml:"truncated"`
	Difficult int     `xml:"difficult"`
	Box       vocBox  `xml:"bndbox"`
	Score     float64 `xml:"score"`
}

type vocBox struct {
	XMin int `xml:"xmin"`
	YMin int `xml:"ymin"`
	XMax int `xml:"xmax"`
	YMax int `xml:"ymax"`
}

// boxFile writes a's boxes as a YOLO .txt or a Pascal VOC XML on the grid of the case's
// first image: each box clipped to the image (one wholly outside it is left out), its
// class the task's box attribute's.
func (w *writer) boxFile(p Prediction, a *taskspec.Annotation) ([]byte, error) {
	if len(p.Images) == 0 {
		return nil, fmt.Errorf("the case has no input image to take the boxes' frame from")
	}
	img, err := imageio.Read(p.Images[0])
	if err != nil {
		return nil, fmt.Errorf("input image: %w", err)
	}
	iw, ih := float64(img.Dims[0]), float64(img.Dims[1])
	attr, ids, err := w.t.BoxAttribute()
	if err != nil {
		return nil, err
	}
	yolo := make(map[int]int, len(ids)) // the attribute's class → its first YOLO id
	for id, k := range ids {
		if _, ok := yolo[k]; !ok {
			yolo[k] = id
		}
	}
	var txt bytes.Buffer
	doc := vocAnnotation{Filename: filepath.Base(p.Images[0]), Size: vocSize{Width: img.Dims[0], Height: img.Dims[1], Depth: max(img.Dims[3], 1)}, Objects: []vocObject{}}
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for i, b := range a.Boxes {
		k, ok := b.Attrs[attr.Name]
		if !ok {
			return nil, fmt.Errorf("box %d has no %s", i, attr.Name)
		}
		x0, y0 := math.Max(b.X, 0), math.Max(b.Y, 0)
		x1, y1 := math.Min(b.X+b.W, iw), math.Min(b.Y+b.H, ih)
		if w.format == FormatYOLO {
			if !(x1 > x0 && y1 > y0) {
				continue
			}
			id, ok := yolo[k]
			if !ok {
				return nil, fmt.Errorf("box %d is a %s, which the YOLO class list does not hold", i, attr.Classes[k])
			}
			fmt.Fprintf(&txt, "%d %s %s %s %s %s\n", id, g((x0+x1)/2/iw), g((y0+y1)/2/ih), g((x1-x0)/iw), g((y1-y0)/ih), g(b.Score))
			continue
		}
		bx := vocBox{XMin: int(math.Round(x0)), YMin: int(math.Round(y0)), XMax: int(math.Round(x1)), YMax: int(math.Round(y1))}
		if bx.XMax <= bx.XMin || bx.YMax <= bx.YMin {
			continue
		}
		doc.Objects = append(doc.Objects, vocObject{Name: attr.Classes[k], Pose: "Unspecified", Box: bx, Score: b.Score})
	}
	if w.format == FormatYOLO {
		return txt.Bytes(), nil
	}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}
