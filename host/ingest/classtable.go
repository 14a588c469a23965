package ingest

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"amid/assets/fileio"
	"amid/host/task"
	"amid/plugins/taskspec"
)

// classTable is a classification's CSV label table: per case id, the class of each
// attribute, and the line that holds it.
type classTable struct {
	rows  map[string]classRow
	ints  map[int64]string  // ids that are integers, by value (pandas reads "001" as 1)
	stems map[string]string // ids that are file names ("ISIC_0001.jpg"), by their stem
}

type classRow struct {
	line     int
	classes  map[string]int
	findings map[string][]int // a multi-label attribute's findings (1, 0, −1)
}

// parseClassTable reads a classification's label table: the id column, each attribute's
// value column (a class name, without regard to case, or a class index; for a multi-label
// attribute "|"-separated finding names, task.Findings) and the one-hot columns (each a
// class of one attribute; a row sets exactly one to 1; for a multi-label attribute one
// column a finding of 1, 0, −1 or blank, task.FindingValue). Every error names its line,
// and the id where there is one.
func parseClassTable(b []byte, t *task.Task) (*classTable, error) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("the file is empty")
	}
	if err != nil {
		return nil, err
	}
	col := func(name string) (int, error) {
		if k := slices.Index(header, name); k >= 0 {
			return k, nil
		}
		if k := slices.IndexFunc(header, func(h string) bool { return strings.EqualFold(strings.TrimSpace(h), strings.TrimSpace(name)) }); k >= 0 {
			return k, nil
		}
		return 0, fmt.Errorf("it has no column %q (header: %q)", name, strings.Join(header, ","))
	}
	l := t.Data.Train.Label
	idCol, err := col(l.IDColumn)
	if err != nil {
		return nil, err
	}
	type valueCol struct {
		k    int
		name string
		attr taskspec.Attribute
	}
	var values []valueCol
	vc := t.ValueColumns()
	for _, a := range t.Attributes {
		name, ok := vc[a.Name]
		if !ok {
			continue
		}
		k, err := col(name)
		if err != nil {
			return nil, err
		}
		values = append(values, valueCol{k, name, a})
	}
	var hot []int
	var hotAttr taskspec.Attribute
	var hotClass []int
	if len(l.Columns) > 0 {
		if hotAttr, hotClass, err = t.OneHot(); err != nil {
			return nil, err
		}
		for _, name := range l.Columns {
			k, err := col(name)
			if err != nil {
				return nil, err
			}
			hot = append(hot, k)
		}
	}
	tab := &classTable{rows: map[string]classRow{}, ints: map[int64]string{}, stems: map[string]string{}}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := r.FieldPos(0)
		cell := func(k int) string {
			if k < len(rec) {
				return strings.TrimSpace(rec[k])
			}
			return ""
		}
		id := cell(idCol)
		if id == "" {
			if strings.TrimSpace(strings.Join(rec, "")) == "" {
				continue // a blank line
			}
			return nil, fmt.Errorf("line %d: the id (%s) is empty", line, l.IDColumn)
		}
		if prev, dup := tab.rows[id]; dup {
			return nil, fmt.Errorf("line %d repeats the id %q of line %d", line, id, prev.line)
		}
		row := classRow{line: line, classes: map[string]int{}}
		for _, v := range values {
			if v.attr.MultiLabel {
				f, err := task.Findings(v.attr, cell(v.k))
				if err != nil {
					return nil, fmt.Errorf("line %d (id %s), column %s: %w", line, id, v.name, err)
				}
				row.findings = map[string][]int{v.attr.Name: f}
				continue
			}
			k, err := task.ClassOf(v.attr, cell(v.k))
			if err != nil {
				return nil, fmt.Errorf("line %d (id %s), column %s: %w", line, id, v.name, err)
			}
			row.classes[v.attr.Name] = k
		}
		if len(hot) > 0 && hotAttr.MultiLabel {
			f := make([]int, len(hotAttr.Classes))
			for i, k := range hot {
				v, err := task.FindingValue(cell(k), l.Uncertain)
				if err != nil {
					return nil, fmt.Errorf("line %d (id %s), column %s: %w", line, id, header[k], err)
				}
				f[hotClass[i]] = v
			}
			row.findings = map[string][]int{hotAttr.Name: f}
		} else if len(hot) > 0 {
			var set []string
			for i, k := range hot {
				on, err := oneHot(cell(k))
				if err != nil {
					return nil, fmt.Errorf("line %d (id %s), column %s: %w", line, id, header[k], err)
				}
				if on {
					set = append(set, header[k])
					row.classes[hotAttr.Name] = hotClass[i]
				}
			}
			switch len(set) {
			case 0:
				return nil, fmt.Errorf("line %d (id %s): none of the one-hot columns %s is 1; a row has one class", line, id, strings.Join(l.Columns, ", "))
			case 1:
			default:
				return nil, fmt.Errorf("line %d (id %s): the one-hot columns %s are all 1; a row has one class", line, id, strings.Join(set, " and "))
			}
		}
		tab.rows[id] = row
		if n, err := strconv.ParseInt(id, 10, 64); err == nil {
			if _, dup := tab.ints[n]; !dup {
				tab.ints[n] = id
			}
		}
		if x := task.Suffix(id); x != "" && x != id && strings.ContainsAny(strings.ToLower(x), "abcdefghijklmnopqrstuvwxyz") {
			if _, dup := tab.stems[strings.TrimSuffix(id, x)]; !dup {
				tab.stems[strings.TrimSuffix(id, x)] = id
			}
		}
	}
	return tab, nil
}

// oneHot reads a one-hot cell: 1 (or 1.0, true) is set; 0, 0.0, false and empty are not.
func oneHot(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || (f != 0 && f != 1) || math.IsNaN(f) {
		return false, fmt.Errorf("%q is not 0 or 1", s)
	}
	return f == 1, nil
}

// key is the table's row id of case id: by its text, else by its integer value, else a
// file name whose stem it is.
func (c *classTable) key(id string) (string, bool) {
	if _, ok := c.rows[id]; ok {
		return id, true
	}
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		if k, ok := c.ints[n]; ok {
			return k, true
		}
	}
	k, ok := c.stems[id]
	return k, ok
}

// classTable is the parsed class table at path, read once.
func (c *converter) classTable(path string) (*classTable, error) {
	if tab, ok := c.tables[path].(*classTable); ok {
		return tab, nil
	}
	raw, _, err := c.source(path, task.LabelCSV)
	if err != nil {
		return nil, err
	}
	tab, err := parseClassTable(raw, c.t)
	if err != nil {
		return nil, bad(path, err)
	}
	c.tables[path] = tab
	return tab, nil
}

// classRowOf is case cs's classes from its class table.
func (c *converter) classRowOf(cs task.Case) (*taskspec.Annotation, error) {
	tab, err := c.classTable(cs.Label)
	if err != nil {
		return nil, err
	}
	k, ok := tab.key(cs.ID)
	if !ok {
		return nil, bad(cs.Label, fmt.Errorf("case %s (%s) has no row", cs.ID, firstImage(cs)))
	}
	r := tab.rows[k]
	if r.findings != nil {
		return &taskspec.Annotation{Findings: r.findings}, nil
	}
	return &taskspec.Annotation{Classes: r.classes}, nil
}

// rowsWithoutImage reports the first row of each class table that names no case: an id
// whose image is missing, or a typing error in it.
func (c *converter) rowsWithoutImage(cases []task.Case) error {
	tables := map[string][]task.Case{}
	var order []string
	for _, cs := range cases {
		if _, ok := tables[cs.Label]; !ok {
			order = append(order, cs.Label)
		}
		tables[cs.Label] = append(tables[cs.Label], cs)
	}
	for _, path := range order {
		tab, err := c.classTable(path)
		if err != nil {
			return err
		}
		used := map[string]bool{}
		for _, cs := range tables[path] {
			if k, ok := tab.key(cs.ID); ok {
				used[k] = true
			}
		}
		var first string
		for id, r := range tab.rows {
			if !used[id] && (first == "" || r.line < tab.rows[first].line) {
				first = id
			}
		}
		if first != "" {
			return bad(path, fmt.Errorf("line %d: id %s has no training image (%s)", tab.rows[first].line, first, strings.Join(c.t.Data.Train.Images, ", ")))
		}
	}
	return nil
}

func firstImage(cs task.Case) string {
	if len(cs.Images) == 0 {
		return "no image"
	}
	return cs.Images[0]
}

// folder is the annotation of a case whose class is its folder.
func (c *converter) folder(cs task.Case) (string, error) {
	if len(cs.Classes) == 0 {
		return "", fmt.Errorf("ingest: %w: case %s has no class folder", ErrLabel, cs.ID)
	}
	a := &taskspec.Annotation{Classes: cs.Classes}
	if err := a.Check(c.spec); err != nil {
		return "", bad(cs.Label, fmt.Errorf("case %s: %w", cs.ID, err))
	}
	b, err := a.Marshal()
	if err != nil {
		return "", fmt.Errorf("ingest: case %s: %w", cs.ID, err)
	}
	cls, _ := json.Marshal(cs.Classes)
	out := filepath.Join(c.out, cs.ID+".json")
	key := c.key(cs.ID, []byte(task.LabelFolder), []byte(cs.Label), cls)
	if cached(out, key) {
		return out, nil
	}
	return out, save(out, key, func(p string) error { return fileio.Write(p, b) })
}
