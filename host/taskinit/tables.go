package taskinit

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"amid/host/task"
	"amid/plugins/taskspec"
)

// maxClasses is the most distinct values a class column may hold: more than the classes
// of any classification AMID's plugins learn (ImageNet-sized tasks aside), fewer than the
// values of a score.
const maxClasses = 100

// table is a CSV read whole.
type table struct {
	path   string // relative to the data folder
	header []string
	rows   [][]string
}

func (t *table) column(i int) []string {
	out := make([]string, len(t.rows))
	for r, row := range t.rows {
		if i < len(row) {
			out[r] = strings.TrimSpace(row[i])
		}
	}
	return out
}

// readTable reads a CSV; nil when it is not one.
func readTable(l *listing, p string) *table {
	b, err := readSmall(l.abs(p))
	if err != nil {
		return nil
	}
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil || len(recs) < 3 || len(recs[0]) < 2 {
		return nil
	}
	h := make([]string, len(recs[0]))
	for i, x := range recs[0] {
		h[i] = strings.TrimSpace(x)
	}
	return &table{path: p, header: h, rows: recs[1:]}
}

// tableLayouts finds class tables: a CSV with a column of the training images' names.
func tableLayouts(l *listing, o Options) ([]candidate, []string) {
	var out []candidate
	var why []string
	for _, f := range l.folders() {
		for _, n := range f.files {
			if !strings.EqualFold(stemOnly(n)+".csv", n) || strings.Contains(strings.ToLower(n), "submission") {
				continue
			}
			t := readTable(l, join(f.rel, n))
			if t == nil {
				continue
			}
			c, w := l.tableTask(t, o)
			if c != nil {
				out = append(out, *c)
			}
			if w != "" {
				why = append(why, w)
			}
		}
	}
	return out, why
}

func stemOnly(n string) string { s, _ := stem(n); return s }

// idStem is a table's id as the image's stem: without a file ending ("ISIC_0001.jpg"),
// as the class table's reader matches it.
func idStem(id string) string {
	if x := task.Suffix(id); x != "" && x != id && strings.ContainsAny(strings.ToLower(x), "abcdefghijklmnopqrstuvwxyz") {
		return strings.TrimSuffix(id, x)
	}
	return id
}

// tableTask is the task of class table t, nil when none of its columns names the images
// of a folder.
func (l *listing) tableTask(t *table, o Options) (*candidate, string) {
	// The id column: the first whose values are the stems of a training image folder.
	var img *folder
	var ext string
	idCol := -1
	var missing []string
	for i := range t.header {
		vals := t.column(i)
		set := map[string]bool{}
		for _, v := range vals {
			set[idStem(v)] = true
		}
		for _, g := range l.folders() {
			x, stems, ok := g.imageSet()
			if !ok || heldOut(g.rel) {
				continue
			}
			in := 0
			var out []string
			for _, s := range stems {
				if set[s] {
					in++
				} else {
					out = append(out, s)
				}
			}
			if in == len(set) && in >= 2 {
				img, ext, idCol, missing = g, x, i, out
				break
			}
		}
		if img != nil {
			break
		}
	}
	if img == nil {
		return nil, ""
	}
	c := &candidate{layout: layoutCSV, what: "a class table (" + t.path + ")"}
	if len(missing) > 0 {
		c.err = fmt.Errorf("%w: %d images of %s have no row in %s (e.g. %s): are they test images? AMID needs the test images in a folder of their own", ErrAmbiguous, len(missing), img.display(), t.path, missing[0])
		return c, ""
	}
	idName := t.header[idCol]
	// The label columns: those named, else every other column but ids of another kind
	// (a value on every row of its own that is not a number).
	var cols []int
	if len(o.LabelColumns) > 0 {
		for _, n := range o.LabelColumns {
			k := slices.Index(t.header, strings.TrimSpace(n))
			if k < 0 {
				return &candidate{layout: layoutCSV, what: c.what, err: fmt.Errorf("label column %q is not a column of %s (%s)", n, t.path, strings.Join(t.header, ", "))}, ""
			}
			cols = append(cols, k)
		}
	} else {
		for i := range t.header {
			if i != idCol && !otherIDs(t.column(i)) {
				cols = append(cols, i)
			}
		}
	}
	if len(cols) == 0 {
		c.err = fmt.Errorf("%w: %s has no column but the ids (%s) that could be a label", ErrNoLayout, t.path, idName)
		return c, ""
	}
	d := &def{dims: 2, channels: []string{"image"}, train: []string{join(img.rel, "{id}"+ext)}}
	dims, _, err := imageShape(task.Expand(l.root, d.train[0], idStem(t.column(idCol)[0])))
	if err != nil {
		c.err = fmt.Errorf("reading an image to tell the task's dimension: %w", err)
		return c, ""
	}
	d.dims = dims
	names := func(cs []int) string {
		var s []string
		for _, k := range cs {
			s = append(s, t.header[k])
		}
		return strings.Join(s, ", ")
	}
	kinds := make([]string, len(cols))
	for j, k := range cols {
		kinds[j] = columnKind(t.column(k))
	}
	allOf := func(kind string) bool {
		return !slices.ContainsFunc(kinds, func(x string) bool { return x != kind })
	}
	label := yamlMap("path", t.path, "format", task.LabelCSV, "id_column", idName)
	sub := yaml.MapSlice{{Key: "format", Value: task.SubmitClassTable}, {Key: "id_column", Value: idName}}
	c.notes = append(c.notes, fmt.Sprintf("%d training cases: images %s/{id}%s, the ids in column %s of %s", len(t.rows), img.rel, ext, idName, t.path))
	if len(o.LabelColumns) == 0 {
		// Finding columns among others (CheXpert: Sex, Age, Frontal/Lateral, AP/PA, then a
		// column a finding of 1, 0, −1 or blank): three or more such columns, or any −1,
		// are the labels, and the others are the images' particulars.
		var found, rest []int
		anyUncertain := false
		for _, k := range cols {
			if ok, u := findingCells(t.column(k)); ok {
				found, anyUncertain = append(found, k), anyUncertain || u
			} else {
				rest = append(rest, k)
			}
		}
		if len(rest) > 0 && len(found) >= 2 && (len(found) >= 3 || anyUncertain) {
			c.notes = append(c.notes, "columns "+names(rest)+" are not labels (not 1, 0, −1 or blank): left out")
			cols = found
			kinds = kinds[:0]
			for _, k := range cols {
				kinds = append(kinds, columnKind(t.column(k)))
			}
		}
	}
	multi, uncertain := len(cols) >= 2, false
	for _, k := range cols {
		ok, u := findingCells(t.column(k))
		multi, uncertain = multi && ok, uncertain || u
	}
	if multi && !uncertain && allOf(kindBinary) && oneSet(t, cols) {
		multi = false // one-hot
	}
	var piped bool
	if len(cols) == 1 && kinds[0] == kindText {
		piped = slices.ContainsFunc(t.column(cols[0]), func(v string) bool { return strings.Contains(v, "|") })
	}
	switch {
	case multi || piped:
		var findings []string
		if piped {
			for _, v := range t.column(cols[0]) {
				for _, f := range strings.Split(v, "|") {
					f = strings.TrimSpace(f)
					if f != "" && !strings.EqualFold(f, task.NoFinding) && !slices.ContainsFunc(findings, func(x string) bool { return strings.EqualFold(x, f) }) {
						findings = append(findings, f)
					}
				}
			}
			sort.Strings(findings)
			label = append(label, yaml.MapItem{Key: "value_column", Value: t.header[cols[0]]})
			c.notes = append(c.notes, fmt.Sprintf("multi-label classification: the findings %s, the |-separated names of column %s", strings.Join(findings, ", "), t.header[cols[0]]))
		} else {
			for _, k := range cols {
				findings = append(findings, t.header[k])
			}
			label = append(label, yaml.MapItem{Key: "columns", Value: findings})
			c.notes = append(c.notes, "multi-label classification: the findings "+names(cols)+", one 0/1 column each, several set a row")
		}
		if uncertain {
			if o.Uncertain == "" {
				c.err = fmt.Errorf("%w: the finding columns of %s hold −1 (uncertain) cells: name what they mean with --uncertain ignore, positive or negative", ErrAmbiguous, t.path)
				return c, ""
			}
			label = append(label, yaml.MapItem{Key: "uncertain", Value: o.Uncertain})
			c.notes = append(c.notes, "uncertain cells (−1): "+o.Uncertain)
		}
		d.kind = taskspec.Classification
		d.attributes = []taskspec.Attribute{{Name: "findings", Classes: findings, MultiLabel: true}}
		sub = yaml.MapSlice{{Key: "format", Value: task.SubmitClassTable}, {Key: "id_column", Value: idName}}
	case len(cols) >= 2 && allOf(kindBinary):
		// One-hot columns: each row sets one.
		var classes []string
		for _, k := range cols {
			classes = append(classes, t.header[k])
		}
		d.kind = taskspec.Classification
		d.attributes = []taskspec.Attribute{{Name: "class", Classes: classes}}
		label = append(label, yaml.MapItem{Key: "columns", Value: classes})
		sub = yaml.MapSlice{{Key: "format", Value: task.SubmitClassTable}, {Key: "id_column", Value: idName}, {Key: "columns", Value: append([]string{idName}, classes...)}}
		c.notes = append(c.notes, "classification: one-hot columns "+names(cols)+", one set a row")
	case allOf(kindText) || (len(cols) == 1 && kinds[0] != kindScore && o.Kind == taskspec.Classification):
		d.kind = taskspec.Classification
		vc := yaml.MapSlice{}
		for _, k := range cols {
			a := taskspec.Attribute{Name: attrName(t.header[k]), Classes: classesOf(t.column(k))}
			if len(a.Classes) < 2 {
				c.err = fmt.Errorf("%w: column %s of %s holds one class, %s: a classification needs two at least", ErrAmbiguous, t.header[k], t.path, a.Classes[0])
				return c, ""
			}
			if len(a.Classes) > maxClasses {
				c.err = fmt.Errorf("%w: column %s of %s holds %d distinct values, more than the %d classes it could be; name the label column with --label-column", ErrAmbiguous, t.header[k], t.path, len(a.Classes), maxClasses)
				return c, ""
			}
			d.attributes = append(d.attributes, a)
			vc = append(vc, yaml.MapItem{Key: a.Name, Value: t.header[k]})
			c.notes = append(c.notes, fmt.Sprintf("classification: attribute %s, the classes %s of column %s", a.Name, strings.Join(a.Classes, ", "), t.header[k]))
		}
		if len(cols) == 1 {
			label = append(label, yaml.MapItem{Key: "value_column", Value: t.header[cols[0]]})
			sub = append(sub, yaml.MapItem{Key: "value_column", Value: t.header[cols[0]]})
		} else {
			label = append(label, yaml.MapItem{Key: "value_columns", Value: vc})
			sub = append(sub, yaml.MapItem{Key: "value_columns", Value: vc})
		}
	case len(cols) == 1 && (kinds[0] == kindScore || ((kinds[0] == kindInteger || kinds[0] == kindBinary) && o.Kind == taskspec.IQA)):
		vals := t.column(cols[0])
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range vals {
			f, _ := strconv.ParseFloat(v, 64)
			lo, hi = min(lo, f), max(hi, f)
		}
		d.kind = taskspec.IQA
		d.score = &taskspec.ScoreRange{Min: lo, Max: hi}
		if kinds[0] != kindScore {
			d.score.Step = 1
		}
		label = append(label, yaml.MapItem{Key: "value_column", Value: t.header[cols[0]]})
		sub = yamlSlice("columns", []string{idName, t.header[cols[0]]}, "id_column", idName, "value_column", t.header[cols[0]])
		c.notes = append(c.notes, fmt.Sprintf("image quality: the scores of column %s, %g to %g in the table (taken as the range; widen it if the scale is wider)", t.header[cols[0]], lo, hi))
	case len(cols) == 1 && (kinds[0] == kindInteger || kinds[0] == kindBinary):
		c.err = fmt.Errorf("%w: column %s of %s holds integers, %s: class indices or a score? Name --kind classification or --kind iqa", ErrAmbiguous, t.header[cols[0]], t.path, strings.Join(firstDistinct(t.column(cols[0]), 5), ", "))
		return c, ""
	default:
		c.err = fmt.Errorf("%w: %s has several columns that could be the label (%s); name it with --label-column", ErrAmbiguous, t.path, names(cols))
		return c, ""
	}
	c.kind = d.kind
	if o.Kind != "" && o.Kind != d.kind {
		return nil, ""
	}
	d.label = label
	switch {
	case d.kind == taskspec.Classification && d.attributes[0].MultiLabel:
		d.metric = "auroc"
		d.submission = sub
	case d.kind == taskspec.Classification:
		d.metric = "balanced_accuracy"
		d.submission = sub
	case d.kind == taskspec.IQA:
		d.metric = "plcc_srocc_krocc"
		d.submission = sub
	}
	c.withTest(l, d, img.rel, "test images", o)
	return c, ""
}

// findingCells reports whether a column's cells are those of a finding (1, 0, −1 for
// uncertain, or blank, as CheXpert's) and whether any is −1.
func findingCells(vals []string) (ok, uncertain bool) {
	for _, v := range vals {
		if v == "" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil || (f != 0 && f != 1 && f != -1):
			return false, false
		case f == -1:
			uncertain = true
		}
	}
	return true, uncertain
}

// oneSet reports whether every row of t sets exactly one of the columns cols to 1.
func oneSet(t *table, cols []int) bool {
	for _, row := range t.rows {
		set := 0
		for _, k := range cols {
			if k < len(row) {
				if v, _ := strconv.ParseFloat(strings.TrimSpace(row[k]), 64); v == 1 {
					set++
				}
			}
		}
		if set != 1 {
			return false
		}
	}
	return true
}

// Column kinds.
const (
	kindBinary  = "binary"  // 0 and 1 only (as 0.0 and 1.0 too)
	kindInteger = "integer" // whole numbers
	kindScore   = "score"   // numbers, some fractional
	kindText    = "text"    // some value not a number
)

func columnKind(vals []string) string {
	kind := kindBinary
	for _, v := range vals {
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
			return kindText
		case f != math.Trunc(f):
			kind = kindScore
		case f != 0 && f != 1 && kind == kindBinary:
			kind = kindInteger
		}
	}
	return kind
}

// otherIDs reports whether a column holds a value on every row of its own (without regard
// to case), none a number nor a list of names (a|b):
// another id (a patient's, a file's), not a label.
func otherIDs(vals []string) bool {
	seen := map[string]bool{}
	for _, v := range vals {
		k := strings.ToLower(v)
		if _, err := strconv.ParseFloat(v, 64); err == nil || seen[k] || strings.Contains(v, "|") {
			return false
		}
		seen[k] = true
	}
	return true
}

// classesOf are a column's distinct values, each once without regard to case (the first
// spelling kept), in order: numerically where all are numbers, else by name.
func classesOf(vals []string) []string {
	var out []string
	for _, v := range vals {
		if v == "" {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil && f == math.Trunc(f) {
			v = strconv.FormatFloat(f, 'f', -1, 64)
		}
		if !slices.ContainsFunc(out, func(x string) bool { return strings.EqualFold(x, v) }) {
			out = append(out, v)
		}
	}
	if columnKind(out) != kindText {
		sort.Slice(out, func(i, j int) bool {
			a, _ := strconv.ParseFloat(out[i], 64)
			b, _ := strconv.ParseFloat(out[j], 64)
			return a < b
		})
		return out
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i]) < strings.ToLower(out[j]) })
	return out
}

// firstDistinct are up to n distinct values of vals, sorted.
func firstDistinct(vals []string, n int) []string {
	c := classesOf(vals)
	if len(c) > n {
		return append(c[:n], "…")
	}
	return c
}

// attrName is an attribute's name made of a column's.
func attrName(col string) string {
	s := strings.Trim(nonID.ReplaceAllString(strings.ToLower(col), "_"), "_")
	if s == "" {
		return "class"
	}
	return s
}

// notClasses are folder names that hold a dataset's parts, not a class.
var notClasses = []string{"images", "image", "img", "imgs", "labels", "label", "masks", "mask", "annotations", "train", "training"}

// folderLayouts finds image folders, one a class: a training folder whose subfolders
// hold images of names none of the others holds.
func folderLayouts(l *listing, o Options) ([]candidate, []string) {
	var out []candidate
	for _, f := range l.folders() {
		if heldOut(f.rel) || len(f.subdirs) < 2 {
			continue
		}
		var ext string
		names := map[string]string{}
		ok := true
		var classes []string
		n := 0
		for _, s := range f.subdirs {
			sub := l.dirs[join(f.rel, s)]
			x, stems, fine := sub.imageSetOf(1)
			if !fine || len(sub.subdirs) > 0 || heldOut(s) || slices.Contains(notClasses, strings.ToLower(s)) || (ext != "" && x != ext) {
				ok = false
				break
			}
			for _, st := range stems {
				if _, dup := names[st]; dup {
					ok = false // a name in two folders: pairs, not classes
					break
				}
				names[st] = s
			}
			ext = x
			classes = append(classes, s)
			n += len(stems)
		}
		if !ok || strings.HasPrefix(strings.ToLower(f.rel), "runs") {
			continue
		}
		c := candidate{layout: layoutFolders, kind: taskspec.Classification, what: "image folders, one a class, in " + f.display()}
		train := []string{join(f.rel, "{class}/{id}"+ext)}
		d := &def{kind: taskspec.Classification, dims: 2, channels: []string{"image"}, train: train,
			attributes: []taskspec.Attribute{{Name: "class", Classes: classes}}, metric: "balanced_accuracy",
			submission: yamlSlice("format", task.SubmitClassTable, "id_column", "image_id", "value_column", "label")}
		c.notes = append(c.notes, fmt.Sprintf("%d training cases: images %s/{class}/{id}%s", n, f.rel, ext),
			"classification: attribute class, the classes "+strings.Join(classes, ", ")+", the folders' names")
		tdir, found := l.testFolder(f.rel)
		if o.Test != "" {
			tdir, found = strings.Trim(o.Test, "/"), true
		}
		if !found {
			c.err = fmt.Errorf("%w: no test split beside %s (no test/ folder); name the folder of test images with --test", ErrAmbiguous, f.display())
			out = append(out, c)
			continue
		}
		td, there := l.dirs[tdir]
		switch {
		case !there:
			c.err = fmt.Errorf("test folder %s is not a folder of %s", tdir, l.root)
		case len(td.subdirs) > 0 && len(td.files) == 0:
			d.test = []string{join(tdir, "{class}/{id}"+ext)}
			c.notes = append(c.notes, "test images in the class folders of "+tdir+"/ (their names not used)")
		default:
			d.test = []string{join(tdir, "{id}"+ext)}
			c.notes = append(c.notes, "test images in "+tdir+"/")
		}
		if c.err == nil {
			c.def = d
		}
		out = append(out, c)
	}
	return out, nil
}
