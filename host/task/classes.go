package task

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"amid/plugins/taskspec"
)

// A classification's labels may come as users keep them (see the package doc's "Class
// tables and image folders"): a CSV of class names or indices (format csv with
// value_column, value_columns or one-hot columns), or one folder per class named in the
// image patterns ({class}, or {<attribute>} for a task of several attributes; format
// folder).

// ClassPlaceholder is the image patterns' folder segment that names the class of a
// task's only attribute.
const ClassPlaceholder = "class"

// placeholderRE is a whole path segment in braces: {class}, {<attribute>} or {id}.
var placeholderRE = regexp.MustCompile(`^\{([^{}/]+)\}$`)

// Placeholders are the names of pattern p's class segments: the whole segments in braces
// before the segment that holds {id}, {class} or an attribute's name ({modality}).
func Placeholders(p string) []string {
	var out []string
	for _, seg := range strings.Split(p, "/") {
		if strings.Contains(seg, "{id}") {
			break
		}
		if m := placeholderRE.FindStringSubmatch(seg); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// withoutPlaceholders is p with its class segments as plain names, for the checks of a
// pattern with {id} alone.
func withoutPlaceholders(p string) string {
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if strings.Contains(seg, "{id}") {
			break
		}
		if placeholderRE.MatchString(seg) {
			segs[i] = "class"
		}
	}
	return strings.Join(segs, "/")
}

// placeholderAttr is the attribute a class placeholder names.
func (t *Task) placeholderAttr(name string) (taskspec.Attribute, bool) {
	if name == ClassPlaceholder && len(t.Attributes) == 1 {
		return t.Attributes[0], true
	}
	for _, a := range t.Attributes {
		if a.Name == name {
			return a, true
		}
	}
	return taskspec.Attribute{}, false
}

// ClassOf is the index of the class v names in attribute a: a class name, matched without
// regard to case or surrounding spaces, or, when no class name of a is an integer, the
// class's 0-based index ("2", or "2.0" as pandas writes integers beside an empty cell).
// The error says what v is not.
func ClassOf(a taskspec.Attribute, v string) (int, error) {
	s := strings.TrimSpace(v)
	if s == "" {
		return 0, fmt.Errorf("%s is empty", a.Name)
	}
	for k, c := range a.Classes {
		if c == s {
			return k, nil
		}
	}
	for k, c := range a.Classes {
		if strings.EqualFold(c, s) {
			return k, nil
		}
	}
	if !numericClasses(a) {
		if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 && f < float64(len(a.Classes)) && f == math.Trunc(f) {
			return int(f), nil
		}
		return 0, fmt.Errorf("%s %q is not one of its classes %s, nor a class index 0–%d", a.Name, s, strings.Join(a.Classes, ", "), len(a.Classes)-1)
	}
	return 0, fmt.Errorf("%s %q is not one of its classes %s", a.Name, s, strings.Join(a.Classes, ", "))
}

// numericClasses reports whether a class name of a is an integer: its values are names
// then, never indices.
func numericClasses(a taskspec.Attribute) bool {
	for _, c := range a.Classes {
		if _, err := strconv.Atoi(strings.TrimSpace(c)); err == nil {
			return true
		}
	}
	return false
}

// OneHot is the attribute a label source's one-hot columns fill and, per column, the
// class it sets.
func (t *Task) OneHot() (taskspec.Attribute, []int, error) {
	cols := t.Data.Train.Label.Columns
	if len(cols) == 0 {
		return taskspec.Attribute{}, nil, errors.New("no one-hot columns")
	}
	for _, a := range t.Attributes {
		idx := make([]int, 0, len(cols))
		for _, c := range cols {
			k := slices.IndexFunc(a.Classes, func(x string) bool { return strings.EqualFold(x, strings.TrimSpace(c)) })
			if k < 0 {
				break
			}
			idx = append(idx, k)
		}
		if len(idx) == len(cols) {
			return a, idx, nil
		}
	}
	var names []string
	for _, a := range t.Attributes {
		names = append(names, a.Name)
	}
	return taskspec.Attribute{}, nil, fmt.Errorf("the columns %s are not all classes of one attribute (%s)", strings.Join(cols, ", "), strings.Join(names, ", "))
}

// valueColumns is, per attribute that a label table's value columns fill, its column:
// value_column for a task's only attribute, and value_columns.
func (l *LabelSource) valueColumns(attrs []taskspec.Attribute) map[string]string {
	out := map[string]string{}
	if l.ValueColumn != "" && len(attrs) == 1 {
		out[attrs[0].Name] = l.ValueColumn
	}
	for a, c := range l.ValueColumns {
		out[a] = c
	}
	return out
}

// ValueColumns is, per attribute that the label table's value columns fill, its column.
func (t *Task) ValueColumns() map[string]string {
	return t.Data.Train.Label.valueColumns(t.Attributes)
}

// BoxAttribute is the one attribute of a detection whose boxes come as YOLO or VOC
// files, and, per YOLO class id, its class.
func (t *Task) BoxAttribute() (taskspec.Attribute, []int, error) {
	if len(t.Attributes) != 1 {
		return taskspec.Attribute{}, nil, fmt.Errorf("YOLO and VOC boxes have one class each, and the task has %d attributes", len(t.Attributes))
	}
	a := t.Attributes[0]
	names := t.Data.Train.Label.Classes
	if len(names) == 0 {
		names = a.Classes
	}
	idx := make([]int, len(names))
	for i, n := range names {
		k := slices.IndexFunc(a.Classes, func(c string) bool { return strings.EqualFold(c, strings.TrimSpace(n)) })
		if k < 0 {
			return a, nil, fmt.Errorf("class %d, %q, is not one of %s's classes %s", i, n, a.Name, strings.Join(a.Classes, ", "))
		}
		idx[i] = k
	}
	return a, idx, nil
}

// checkBoxLabels checks a detection's YOLO or VOC label source.
func (t *Task) checkBoxLabels() error {
	l := t.Data.Train.Label
	if l.Format != LabelYOLO && l.Format != LabelVOC {
		if len(l.Classes) > 0 {
			return fieldErr("data.train.label.classes", "a class list belongs to a yolo label")
		}
		return nil
	}
	switch {
	case t.Kind != taskspec.Detection || t.Dims != 2 || t.Box3D || len(t.Points) > 0:
		return fieldErr("data.train.label.format", "%s labels are a 2D detection's boxes", l.Format)
	case len(l.Classes) > 0 && l.Format != LabelYOLO:
		return fieldErr("data.train.label.classes", "a class list belongs to a yolo label")
	}
	if _, _, err := t.BoxAttribute(); err != nil {
		return fieldErr("data.train.label", "%v", err)
	}
	return nil
}

// checkClassLabels checks a classification's label source against its attributes: a
// class table's columns fill every attribute once, image folders name every attribute,
// and, where labels or submission columns name classes, no class names differ only in
// case (they are matched without regard to it).
func (t *Task) checkClassLabels() error {
	l := &t.Data.Train.Label
	const field = "data.train.label"
	if t.Kind != taskspec.Classification {
		if l.Uncertain != "" {
			return fieldErr(field+".uncertain", "the policy for uncertain labels belongs to a classification's multi-label attribute; this is a %s task", t.Kind)
		}
		if len(l.ValueColumns) > 0 || len(l.Columns) > 0 {
			return fieldErr(field, "value_columns and one-hot columns fill a classification's attributes; this is a %s task", t.Kind)
		}
		if l.Format == LabelCSV && l.ValueColumn == "" {
			return fieldErr(field, "a csv label needs id_column and value_column")
		}
		for _, s := range []Split{t.Data.Train, t.Data.Test} {
			for _, p := range s.Images {
				if ph := Placeholders(p); len(ph) > 0 {
					return fieldErr("data.images", "%q: a folder {%s} gives a classification its class; this is a %s task", p, ph[0], t.Kind)
				}
			}
		}
		return nil
	}
	if err := t.checkMultiLabel(); err != nil {
		return err
	}
	byName := l.Format == LabelCSV || l.Format == LabelFolder || t.Submission.Format == SubmitClassTable
	for _, a := range t.Attributes {
		for i, c := range a.Classes {
			for _, d := range a.Classes[:i] {
				if byName && strings.EqualFold(c, d) {
					return fieldErr("attributes", "%s has the classes %q and %q, which differ only in case: labels are matched to class names without regard to case", a.Name, d, c)
				}
			}
		}
	}
	if err := t.checkPlaceholders(); err != nil {
		return err
	}
	switch l.Format {
	case LabelCSV:
		if len(l.ValueColumns) == 0 && len(l.Columns) == 0 && l.ValueColumn == "" {
			return fieldErr(field, "a csv label needs id_column and value_column (or value_columns, or one-hot columns)")
		}
		if l.ValueColumn != "" && len(t.Attributes) != 1 {
			return fieldErr(field+".value_column", "names the class of a task's only attribute, and this task has %d: name each attribute's column in value_columns", len(t.Attributes))
		}
		filled := map[string]string{}
		for a, c := range l.valueColumns(t.Attributes) {
			if !slices.ContainsFunc(t.Attributes, func(x taskspec.Attribute) bool { return x.Name == a }) {
				return fieldErr(field+".value_columns", "%q is not an attribute of the task", a)
			}
			if strings.TrimSpace(c) == "" {
				return fieldErr(field+".value_columns", "attribute %s has an empty column name", a)
			}
			filled[a] = "column " + c
		}
		if len(l.Columns) > 0 {
			a, _, err := t.OneHot()
			if err != nil {
				return fieldErr(field+".columns", "%v", err)
			}
			for i, c := range l.Columns {
				if slices.IndexFunc(l.Columns[:i], func(x string) bool { return strings.EqualFold(x, c) }) >= 0 {
					return fieldErr(field+".columns", "%q is named twice", c)
				}
			}
			if prev, ok := filled[a.Name]; ok {
				return fieldErr(field, "attribute %s is filled by %s and by the one-hot columns", a.Name, prev)
			}
			filled[a.Name] = "one-hot columns"
		}
		for _, a := range t.Attributes {
			if _, ok := filled[a.Name]; !ok {
				return fieldErr(field, "attribute %s has no column: name it in value_columns or columns", a.Name)
			}
		}
	case LabelFolder:
		ph := Placeholders(t.Data.Train.Images[0])
		for _, a := range t.Attributes {
			if !slices.ContainsFunc(ph, func(n string) bool { at, _ := t.placeholderAttr(n); return at.Name == a.Name }) {
				return fieldErr("data.train.images[0]", "%q names no folder for attribute %s: write {%s} where its class is a folder", t.Data.Train.Images[0], a.Name, a.Name)
			}
		}
	default:
		if len(l.ValueColumns) > 0 || len(l.Columns) > 0 {
			return fieldErr(field, "value_columns and one-hot columns belong to a csv label")
		}
	}
	return nil
}

// checkPlaceholders checks the class folders of the image patterns: each names {class}
// (a task of one attribute) or an attribute, once, every pattern of a split names the
// same, and a training split with folders has them as its label (format folder, no path).
func (t *Task) checkPlaceholders() error {
	for _, sp := range []struct {
		field string
		s     *Split
	}{{"data.train", &t.Data.Train}, {"data.test", &t.Data.Test}} {
		if len(sp.s.Images) == 0 {
			continue
		}
		first := Placeholders(sp.s.Images[0])
		for i, p := range sp.s.Images {
			ph := Placeholders(p)
			f := fmt.Sprintf("%s.images[%d]", sp.field, i)
			if !slices.Equal(ph, first) {
				return fieldErr(f, "%q names the class folders %v, and %q names %v: every image pattern names the same", p, ph, sp.s.Images[0], first)
			}
			seen := map[string]bool{}
			for _, n := range ph {
				a, ok := t.placeholderAttr(n)
				if !ok {
					if n == ClassPlaceholder {
						return fieldErr(f, "{class} names the class of a task's only attribute, and this task has %d: write the attribute's name, {%s}", len(t.Attributes), t.Attributes[0].Name)
					}
					return fieldErr(f, "{%s} is not {id}, {class} or an attribute of the task", n)
				}
				if seen[a.Name] {
					return fieldErr(f, "%q names attribute %s twice", p, a.Name)
				}
				seen[a.Name] = true
			}
		}
	}
	l := &t.Data.Train.Label
	if len(Placeholders(t.Data.Train.Images[0])) > 0 && l.Format != LabelFolder {
		return fieldErr("data.train.label", "the class comes from the image folders of %q; the label names no file (format %s)", t.Data.Train.Images[0], LabelFolder)
	}
	if l.Format == LabelFolder && len(Placeholders(t.Data.Train.Images[0])) == 0 {
		return fieldErr("data.train.images[0]", "%q has no class folder such as {class}, which a folder label needs", t.Data.Train.Images[0])
	}
	return nil
}

// classDir is one combination of class folders of a split's patterns: the name each
// placeholder stands for, and the attribute's class it names.
type classDir struct {
	names   map[string]string // placeholder → folder name on disk
	classes map[string]int    // attribute → class
	rel     string            // the deepest class folder, relative to the root
}

// substitute is pattern p with the folders of d in place of its placeholders.
func (d classDir) substitute(p string) string {
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if strings.Contains(seg, "{id}") {
			break
		}
		if m := placeholderRE.FindStringSubmatch(seg); m != nil {
			segs[i] = d.names[m[1]]
		}
	}
	return strings.Join(segs, "/")
}

// classDirs lists every combination of class folders under root that pattern's
// placeholders stand for, in order of the folders' names. Each folder must name a class
// of its attribute (without regard to case); hidden folders and files are passed over.
func (t *Task) classDirs(root, pattern, split string) ([]classDir, error) {
	segs := strings.Split(pattern, "/")
	out := []classDir{{names: map[string]string{}, classes: map[string]int{}}}
	for _, seg := range segs {
		if strings.Contains(seg, "{id}") {
			break
		}
		m := placeholderRE.FindStringSubmatch(seg)
		if m == nil {
			for i := range out {
				out[i].rel = joinRel(out[i].rel, seg)
			}
			continue
		}
		a, _ := t.placeholderAttr(m[1]) // checked by Validate
		var next []classDir
		for _, d := range out {
			dir := filepath.Join(root, filepath.FromSlash(d.rel))
			ents, err := os.ReadDir(dir)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			names := make([]string, 0, len(ents))
			for _, e := range ents {
				if !strings.HasPrefix(e.Name(), ".") && isDir(filepath.Join(dir, e.Name())) {
					names = append(names, e.Name())
				}
			}
			sort.Strings(names)
			for _, n := range names {
				k, err := ClassOf(a, n)
				if err != nil {
					return nil, fmt.Errorf("%w: %s folder %s is not a class: %w", ErrData, split, filepath.Join(dir, n), err)
				}
				e := classDir{names: map[string]string{}, classes: map[string]int{}, rel: joinRel(d.rel, n)}
				for x, y := range d.names {
					e.names[x] = y
				}
				for x, y := range d.classes {
					e.classes[x] = y
				}
				e.names[m[1]], e.classes[a.Name] = n, k
				next = append(next, e)
			}
		}
		out = next
	}
	return out, nil
}

func joinRel(a, b string) string {
	if a == "" {
		return b
	}
	return a + "/" + b
}

// folderSplit finds the cases of a split whose image patterns name class folders: in each
// folder, the cases its patterns find, each with the classes its folders name (for the
// training split, with the deepest class folder as its label). A case id found in two
// folders is an error naming both.
func (t *Task) folderSplit(root string, s *Split, name string, patient *regexp.Regexp) ([]Case, error) {
	dirs, err := t.classDirs(root, s.Images[0], name)
	if err != nil {
		return nil, err
	}
	var cases []Case
	where := map[string]string{}
	for _, d := range dirs {
		sub := *s
		sub.Images = make([]string, len(s.Images))
		for i, p := range s.Images {
			sub.Images[i] = d.substitute(p)
		}
		sub.Label = LabelSource{}
		first := sub.FirstPatterns()
		ids, err := idsOf(root, first)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			dir := filepath.Join(root, filepath.FromSlash(d.rel))
			if prev, dup := where[id]; dup {
				return nil, fmt.Errorf("%w: %s case %s is in the folders %s and %s: a case has one class", ErrData, name, id, prev, dir)
			}
			where[id] = dir
			c, err := t.caseAt(root, &sub, first, name, patient, id)
			if err != nil {
				return nil, err
			}
			if s.Label.Format == LabelFolder {
				c.Label, c.Classes = dir, d.classes
			}
			cases = append(cases, c)
		}
	}
	sort.Slice(cases, func(i, j int) bool { return cases[i].ID < cases[j].ID })
	return cases, nil
}

// SubmitClassTable is the submission format of a classification as a table: a row a
// case with its id, each attribute's predicted class name (submission.value_column, or
// value_columns for several attributes) and one probability column a class, named as the
// class ("attribute:class" where two attributes share a class name).
const SubmitClassTable = "csv"

// ClassColumn is what a class table's column holds: the predicted class name of
// attribute Attr (Class −1), or the probability of its class Class.
type ClassColumn struct {
	Attr  string
	Class int
}

// valueColumns is, per attribute, the column of its predicted class name.
func (s *Submission) valueColumns(attrs []taskspec.Attribute) map[string]string {
	out := map[string]string{}
	if s.ValueColumn != "" && len(attrs) == 1 {
		out[attrs[0].Name] = s.ValueColumn
	}
	for a, c := range s.ValueColumns {
		out[a] = c
	}
	return out
}

// ClassColumns maps each column of a class-table submission other than the id and the
// constant columns to what it holds.
func (s *Submission) ClassColumns(attrs []taskspec.Attribute) (map[string]ClassColumn, error) {
	out := map[string]ClassColumn{}
	values := s.valueColumns(attrs)
	for _, c := range s.Columns {
		if c == s.IDColumn {
			continue
		}
		if _, ok := s.Const[c]; ok {
			continue
		}
		found := false
		for a, v := range values {
			if v == c {
				out[c], found = ClassColumn{Attr: a, Class: -1}, true
			}
		}
		if found {
			continue
		}
		cc, err := probColumn(attrs, c)
		if err != nil {
			return nil, err
		}
		out[c] = cc
	}
	return out, nil
}

// probColumn is the class whose probability column c holds: "attribute:class", or a class
// name of one attribute only, without regard to case.
func probColumn(attrs []taskspec.Attribute, c string) (ClassColumn, error) {
	if a, cl, ok := strings.Cut(c, ":"); ok {
		for _, at := range attrs {
			if at.Name == a {
				if k := slices.IndexFunc(at.Classes, func(x string) bool { return strings.EqualFold(x, cl) }); k >= 0 {
					return ClassColumn{Attr: a, Class: k}, nil
				}
			}
		}
	}
	var found []ClassColumn
	for _, at := range attrs {
		if k := slices.IndexFunc(at.Classes, func(x string) bool { return strings.EqualFold(x, c) }); k >= 0 {
			found = append(found, ClassColumn{Attr: at.Name, Class: k})
		}
	}
	switch len(found) {
	case 0:
		return ClassColumn{}, fmt.Errorf("column %q has no source: not the id, a value column, a constant or a class (attribute:class)", c)
	case 1:
		return found[0], nil
	}
	return ClassColumn{}, fmt.Errorf("column %q names a class of both %s and %s: write attribute:class", c, found[0].Attr, found[1].Attr)
}

// checkClassTable checks a class-table submission and fills its default columns: the id,
// each attribute's value column, then one probability column a class.
func (s *Submission) checkClassTable(t *Task) error {
	const field = "submission"
	switch {
	case t.Kind != taskspec.Classification:
		return fieldErr(field+".format", "%s is a classification's class table; this is a %s task", SubmitClassTable, t.Kind)
	case s.FileColumn != "":
		return fieldErr(field+".file_column", "a class table holds its values, not files")
	case s.IDColumn == "":
		return fieldErr(field+".id_column", "missing")
	case s.ValueColumn != "" && len(t.Attributes) != 1:
		return fieldErr(field+".value_column", "names the class of a task's only attribute, and this task has %d: name each attribute's column in value_columns", len(t.Attributes))
	}
	values := s.valueColumns(t.Attributes)
	for a, c := range values {
		if !slices.ContainsFunc(t.Attributes, func(x taskspec.Attribute) bool { return x.Name == a }) {
			return fieldErr(field+".value_columns", "%q is not an attribute of the task", a)
		}
		if at, _ := t.placeholderAttr(a); at.MultiLabel {
			return fieldErr(field+".value_columns", "attribute %s is multi-label: its class table holds one probability column a finding, and no class name", a)
		}
		if c == "" || c == s.IDColumn {
			return fieldErr(field+".value_columns", "attribute %s's column %q is empty or the id column", a, c)
		}
	}
	if len(s.Columns) == 0 {
		s.Columns = []string{s.IDColumn}
		for _, a := range t.Attributes {
			if c, ok := values[a.Name]; ok {
				s.Columns = append(s.Columns, c)
			}
		}
		for _, a := range t.Attributes {
			for _, c := range a.Classes {
				name := c
				if _, err := probColumn(t.Attributes, c); err != nil || slices.ContainsFunc(s.Columns, func(x string) bool { return strings.EqualFold(x, c) }) {
					name = a.Name + ":" + c
				}
				s.Columns = append(s.Columns, name)
			}
		}
	}
	if !slices.Contains(s.Columns, s.IDColumn) {
		return fieldErr(field+".id_column", "%q is not one of the columns %v", s.IDColumn, s.Columns)
	}
	for a, c := range values {
		if !slices.Contains(s.Columns, c) {
			return fieldErr(field+".value_columns", "attribute %s's column %q is not one of the columns %v", a, c, s.Columns)
		}
	}
	for c := range s.Const {
		if !slices.Contains(s.Columns, c) {
			return fieldErr(field+".const", "%q is not one of the columns %v", c, s.Columns)
		}
	}
	for i, c := range s.Columns {
		if slices.Contains(s.Columns[:i], c) {
			return fieldErr(field+".columns", "%q is named twice", c)
		}
	}
	cols, err := s.ClassColumns(t.Attributes)
	if err != nil {
		return fieldErr(field+".columns", "%v", err)
	}
	if len(cols) == 0 {
		return fieldErr(field+".columns", "%v hold no class name and no class probability", s.Columns)
	}
	return nil
}
