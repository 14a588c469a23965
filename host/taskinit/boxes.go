package taskinit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"amid/host/task"
	"amid/plugins/taskspec"
)

// maxLabelBytes bounds a label file read to guess a task (an annotation, a YOLO or VOC
// file, a COCO JSON, a class table): far above any real one.
const maxLabelBytes = 256 << 20

// readSmall reads the file at p, refusing one above maxLabelBytes.
func readSmall(p string) ([]byte, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if st.Size() > maxLabelBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", p, maxLabelBytes)
	}
	return os.ReadFile(p)
}

// boxTask is the task of 2D boxes of one attribute: images in img, labels by labPath.
func (l *listing) boxTask(c candidate, img *folder, ext string, label yaml.MapSlice, attr taskspec.Attribute, sub yaml.MapSlice, o Options) candidate {
	train := []string{join(img.rel, "{id}"+ext)}
	d := &def{kind: taskspec.Detection, dims: 2, channels: []string{"image"}, train: train, label: label, metric: "ap_mean", submission: sub}
	if len(attr.Classes) > 0 {
		d.attributes = []taskspec.Attribute{attr}
	}
	c.withTest(l, d, img.rel, "test images", o)
	return c
}

// yoloPairs is the detection of images in img with YOLO .txt boxes in lab.
func (l *listing) yoloPairs(img, lab *folder, ext string, ids []string, o Options) candidate {
	c := candidate{layout: layoutYOLO, kind: taskspec.Detection, what: "YOLO boxes in " + lab.display()}
	top := -1
	for _, id := range ids {
		b, err := readSmall(l.abs(join(lab.rel, id+".txt")))
		if err != nil {
			c.err = fmt.Errorf("reading a YOLO label: %w", err)
			return c
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 4096), maxLabelBytes)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 {
				continue
			}
			k, err := strconv.Atoi(f[0])
			if err != nil || k < 0 || len(f) != 5 {
				// Not YOLO: another layout's text files.
				return candidate{layout: layoutYOLO, what: c.what, kind: c.kind, err: fmt.Errorf("%w: %s/%s.txt is not a YOLO box file (a line \"class cx cy w h\")", ErrNoLayout, lab.rel, id)}
			}
			top = max(top, k)
		}
	}
	names, from := yoloNames(l, lab.rel)
	attr := taskspec.Attribute{Name: "class", Classes: names}
	label := yamlMap("path", join(lab.rel, "{id}.txt"), "format", task.LabelYOLO)
	switch {
	case len(names) > top:
		c.notes = append(c.notes, fmt.Sprintf("the classes %s from %s", strings.Join(names, ", "), from))
	case len(names) > 0:
		c.err = fmt.Errorf("%w: the YOLO files name class %d, and %s lists %d classes", ErrAmbiguous, top, from, len(names))
		return c
	default:
		for k := 0; k <= max(top, 1); k++ {
			attr.Classes = append(attr.Classes, "class"+strconv.Itoa(k))
		}
		c.notes = append(c.notes, fmt.Sprintf("no class list (data.yaml's names, classes.txt or obj.names): the classes are named %s; rename them in the task", strings.Join(attr.Classes, ", ")))
	}
	c.notes = append([]string{fmt.Sprintf("%d training cases: images %s/{id}%s, YOLO boxes %s/{id}.txt", len(ids), img.rel, ext, lab.rel)}, c.notes...)
	sub := fileSubmission(".txt")
	sub = append(sub, yaml.MapItem{Key: "format", Value: task.LabelYOLO})
	return l.boxTask(c, img, ext, label, attr, sub, o)
}

// yoloNames reads a YOLO class list beside the labels or above them: data.yaml's (or
// dataset.yaml's) names, classes.txt or obj.names.
func yoloNames(l *listing, dir string) ([]string, string) {
	for {
		if f, ok := l.dirs[dir]; ok {
			for _, n := range []string{"data.yaml", "dataset.yaml", "data.yml"} {
				if !slices.Contains(f.files, n) {
					continue
				}
				b, err := readSmall(l.abs(join(dir, n)))
				if err != nil {
					continue
				}
				var doc struct {
					Names any `yaml:"names"`
				}
				if yaml.Unmarshal(b, &doc) != nil {
					continue
				}
				switch v := doc.Names.(type) {
				case []any:
					var out []string
					for _, x := range v {
						out = append(out, fmt.Sprint(x))
					}
					return out, join(dir, n)
				case map[string]any:
					out := make([]string, len(v))
					for k, x := range v {
						i, err := strconv.Atoi(k)
						if err != nil || i < 0 || i >= len(v) {
							return nil, ""
						}
						out[i] = fmt.Sprint(x)
					}
					return out, join(dir, n)
				}
			}
			for _, n := range []string{"classes.txt", "obj.names", "classes.names"} {
				if !slices.Contains(f.files, n) {
					continue
				}
				b, err := readSmall(l.abs(join(dir, n)))
				if err != nil {
					continue
				}
				var out []string
				for _, line := range strings.Split(string(b), "\n") {
					if s := strings.TrimSpace(line); s != "" {
						out = append(out, s)
					}
				}
				return out, join(dir, n)
			}
		}
		if dir == "" {
			return nil, ""
		}
		if i := strings.LastIndex(dir, "/"); i >= 0 {
			dir = dir[:i]
		} else {
			dir = ""
		}
	}
}

// vocPairs is the detection of images in img with Pascal VOC XML in lab; its classes the
// objects' names, in order of their names.
func (l *listing) vocPairs(img, lab *folder, ext string, ids []string, o Options) candidate {
	c := candidate{layout: layoutVOC, kind: taskspec.Detection, what: "Pascal VOC boxes in " + lab.display()}
	var names []string
	for _, id := range ids {
		b, err := readSmall(l.abs(join(lab.rel, id+".xml")))
		if err != nil {
			c.err = fmt.Errorf("reading a VOC label: %w", err)
			return c
		}
		var doc struct {
			XMLName xml.Name `xml:"annotation"`
			Objects []struct {
				Name string `xml:"name"`
			} `xml:"object"`
		}
		if err := xml.Unmarshal(b, &doc); err != nil {
			c.err = fmt.Errorf("%w: %s/%s.xml is not a Pascal VOC annotation: %w", ErrNoLayout, lab.rel, id, err)
			return c
		}
		for _, ob := range doc.Objects {
			n := strings.TrimSpace(ob.Name)
			if n != "" && !slices.ContainsFunc(names, func(x string) bool { return strings.EqualFold(x, n) }) {
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	if len(names) < 2 {
		names = append(names, "other")
		c.notes = append(c.notes, "the objects have one name; a second class, other, is added (an attribute has two classes at least)")
	}
	c.notes = append([]string{fmt.Sprintf("%d training cases: images %s/{id}%s, VOC boxes %s/{id}.xml", len(ids), img.rel, ext, lab.rel),
		"the classes " + strings.Join(names, ", ") + ": the objects' names in the XML files"}, c.notes...)
	sub := fileSubmission(".xml")
	sub = append(sub, yaml.MapItem{Key: "format", Value: task.LabelVOC})
	return l.boxTask(c, img, ext, yamlMap("path", join(lab.rel, "{id}.xml"), "format", task.LabelVOC), taskspec.Attribute{Name: "class", Classes: names}, sub, o)
}

// annotationPairs is the task of images in img with AMID's annotation JSON in lab: its
// kind from the keys the files hold.
func (l *listing) annotationPairs(img, lab *folder, ext string, ids []string, o Options) candidate {
	c := candidate{layout: layoutAnnotation, what: "AMID annotation JSON in " + lab.display()}
	keys := map[string]bool{}
	attrs := map[string]int{} // attribute → highest class index
	var points []string
	var scores []float64
	for _, id := range ids {
		b, err := readSmall(l.abs(join(lab.rel, id+".json")))
		if err != nil {
			c.err = fmt.Errorf("reading an annotation: %w", err)
			return c
		}
		var a taskspec.Annotation
		var raw map[string]json.RawMessage
		if json.Unmarshal(b, &raw) != nil || json.Unmarshal(b, &a) != nil {
			c.err = fmt.Errorf("%w: %s/%s.json is not AMID's annotation JSON", ErrNoLayout, lab.rel, id)
			return c
		}
		for k := range raw {
			keys[k] = true
		}
		for _, bx := range a.Boxes {
			for n, k := range bx.Attrs {
				attrs[n] = max(attrs[n], k)
			}
		}
		for n, k := range a.Classes {
			attrs[n] = max(attrs[n], k)
		}
		for _, p := range a.Points {
			if !slices.Contains(points, p.Class) {
				points = append(points, p.Class)
			}
		}
		if a.Score != nil {
			scores = append(scores, *a.Score)
		}
	}
	dims, _, err := imageShape(task.Expand(l.root, join(img.rel, "{id}"+ext), ids[0]))
	if err != nil {
		c.err = fmt.Errorf("reading an image to tell the task's dimension: %w", err)
		return c
	}
	d := &def{dims: dims, channels: []string{"image"}, train: []string{join(img.rel, "{id}"+ext)},
		label: yamlMap("path", join(lab.rel, "{id}.json"), "format", task.LabelAnnotation), submission: fileSubmission(".json")}
	var what []string
	switch {
	case keys["boxes"] || keys["points"] || keys["box3d"]:
		d.kind, d.metric = taskspec.Detection, "ap_mean"
		if keys["points"] {
			sort.Strings(points)
			d.points, d.metric = points, "f1"
			what = append(what, "points of the classes "+strings.Join(points, ", "))
		}
		if keys["box3d"] {
			d.box3d, d.metric = true, "iou"
			what = append(what, "a 3D box")
		}
		if keys["boxes"] {
			what = append(what, "2D boxes")
		}
	case keys["classes"]:
		d.kind, d.metric = taskspec.Classification, "balanced_accuracy"
	case keys["score"] && len(scores) == 0:
		c.err = fmt.Errorf("%w: the annotation JSON of %s holds no score that is a number", ErrNoLayout, lab.display())
		return c
	case keys["score"]:
		d.kind, d.metric = taskspec.IQA, "plcc_srocc_krocc"
		lo, hi := slices.Min(scores), slices.Max(scores)
		d.score = &taskspec.ScoreRange{Min: lo, Max: hi}
		d.submission = yamlSlice("columns", []string{"case_id", "score"}, "id_column", "case_id", "value_column", "score")
		what = append(what, fmt.Sprintf("a score, %g to %g in the files (taken as its range; widen it if the scale is wider)", lo, hi))
	default:
		c.err = fmt.Errorf("%w: the annotation JSON of %s holds no boxes, points, box3d, classes or score", ErrNoLayout, lab.display())
		return c
	}
	c.kind = d.kind
	var names []string
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		a := taskspec.Attribute{Name: n}
		for k := 0; k <= max(attrs[n], 1); k++ {
			a.Classes = append(a.Classes, n+strconv.Itoa(k))
		}
		d.attributes = append(d.attributes, a)
		what = append(what, fmt.Sprintf("attribute %s with the class indices 0–%d, named %s (the files hold indices: rename the classes in the task)", n, attrs[n], strings.Join(a.Classes, ", ")))
	}
	c.notes = append(c.notes, fmt.Sprintf("%d training cases: images %s/{id}%s, annotations %s/{id}.json", len(ids), img.rel, ext, lab.rel))
	c.notes = append(c.notes, fmt.Sprintf("%s, %dD: %s", d.kind, dims, strings.Join(what, "; ")))
	c.withTest(l, d, img.rel, "test images", o)
	return c
}

// yamlSlice is a mapping of keys and values, in order.
func yamlSlice(kv ...any) yaml.MapSlice {
	var out yaml.MapSlice
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, yaml.MapItem{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

// cocoLayouts finds a COCO JSON of boxes: DENTEX's (category_id_1, _2, _3 with
// categories_1, _2, _3) is read; another COCO file is named as not read.
func cocoLayouts(l *listing, o Options) ([]candidate, []string) {
	var out []candidate
	var why []string
	for _, f := range l.folders() {
		for _, n := range f.files {
			if !strings.HasSuffix(strings.ToLower(n), ".json") || n == "dataset.json" {
				continue
			}
			p := join(f.rel, n)
			b, err := readSmall(l.abs(p))
			if err != nil || !bytes.Contains(b, []byte(`"annotations"`)) || !bytes.Contains(b, []byte(`"images"`)) {
				continue
			}
			var doc struct {
				Images []struct {
					FileName string `json:"file_name"`
				} `json:"images"`
				Annotations []map[string]json.RawMessage `json:"annotations"`
				Cats        [3][]struct {
					ID   *float64 `json:"id"`
					Name string   `json:"name"`
				}
			}
			if json.Unmarshal(b, &doc) != nil || len(doc.Images) == 0 {
				continue
			}
			var raw map[string]json.RawMessage
			_ = json.Unmarshal(b, &raw)
			for k := range 3 {
				_ = json.Unmarshal(raw["categories_"+strconv.Itoa(k+1)], &doc.Cats[k])
			}
			if len(doc.Cats[0]) == 0 {
				why = append(why, fmt.Sprintf("%s is a COCO JSON with category_id, which AMID does not read: it reads DENTEX's category_id_1, _2, _3 with categories_1, _2, _3, YOLO .txt and Pascal VOC XML", p))
				continue
			}
			out = append(out, l.cocoTask(f, p, doc.Images, doc.Cats, o))
		}
	}
	return out, why
}

// cocoTask is the detection of a DENTEX COCO JSON at p.
func (l *listing) cocoTask(f *folder, p string, images []struct {
	FileName string `json:"file_name"`
}, cats [3][]struct {
	ID   *float64 `json:"id"`
	Name string   `json:"name"`
}, o Options) candidate {
	c := candidate{layout: layoutCOCO, kind: taskspec.Detection, what: "a COCO JSON (" + p + ")"}
	stems := map[string]bool{}
	for _, im := range images {
		s, _ := stem(im.FileName[strings.LastIndexAny(im.FileName, `/\`)+1:])
		stems[s] = true
	}
	var img *folder
	var ext string
	for _, g := range l.folders() {
		x, ss, ok := g.imageSet()
		if !ok || heldOut(g.rel) {
			continue
		}
		if len(ss) == len(stems) && !slices.ContainsFunc(ss, func(s string) bool { return !stems[s] }) {
			img, ext = g, x
			break
		}
	}
	if img == nil {
		c.err = fmt.Errorf("%w: no folder holds exactly the %d images %s names", ErrAmbiguous, len(stems), p)
		return c
	}
	d := &def{kind: taskspec.Detection, dims: 2, channels: []string{"image"}, train: []string{join(img.rel, "{id}"+ext)},
		label: yamlMap("path", p, "format", task.LabelDENTEX), metric: "ap_mean", submission: fileSubmission(".json")}
	for k, cs := range cats {
		if len(cs) == 0 {
			break
		}
		classes := make([]string, len(cs))
		for _, x := range cs {
			if x.ID == nil || *x.ID < 0 || int(*x.ID) >= len(cs) || float64(int(*x.ID)) != *x.ID || classes[int(*x.ID)] != "" {
				c.err = fmt.Errorf("%w: the ids of %s's categories_%d are not 0 to %d, each once: a class index is its category id", ErrAmbiguous, p, k+1, len(cs)-1)
				return c
			}
			classes[int(*x.ID)] = x.Name
		}
		d.attributes = append(d.attributes, taskspec.Attribute{Name: "category_" + strconv.Itoa(k+1), Classes: classes})
		c.notes = append(c.notes, fmt.Sprintf("attribute category_%d: the classes %s of categories_%d", k+1, strings.Join(classes, ", "), k+1))
	}
	c.notes = append([]string{fmt.Sprintf("%d training cases: images %s/{id}%s, boxes in %s", len(stems), img.rel, ext, p)}, c.notes...)
	c.withTest(l, d, img.rel, "test images", o)
	return c
}
