package grade

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// SubmissionCSV is the name of the manifest in a submission folder.
const SubmissionCSV = "submission.csv"

// AnswersCSV is the name of the test-set table in an answers folder (prepared/private).
const AnswersCSV = "test_labels.csv"

// MaxCSVBytes bounds the size of a CSV file a grader reads.
var MaxCSVBytes int64 = 64 << 20

// Problems collects every rule a submission breaks, in the order found.
type Problems struct{ list []string }

// Addf records one broken rule, a sentence.
func (p *Problems) Addf(format string, args ...any) {
	p.list = append(p.list, fmt.Sprintf(format, args...))
}

// Empty reports whether no rule is broken.
func (p *Problems) Empty() bool { return len(p.list) == 0 }

// List returns the broken rules.
func (p *Problems) List() []string { return append([]string(nil), p.list...) }

// Table is a CSV file read as pandas.read_csv reads it: the first row is the header, a
// UTF-8 byte-order mark is dropped, blank lines are skipped, short rows are padded with
// empty cells.
type Table struct {
	Path   string
	Header []string
	Rows   [][]string
	col    map[string]int
}

// ErrCSV marks a CSV file that cannot be read as a table.
var ErrCSV = errors.New("not a readable CSV table")

// ReadTable reads the CSV file at path.
func ReadTable(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxCSVBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(data)) > MaxCSVBytes {
		return nil, fmt.Errorf("%s: %w: larger than %d bytes", path, ErrCSV, MaxCSVBytes)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", path, ErrCSV, err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s: %w: the file is empty", path, ErrCSV)
	}
	t := &Table{Path: path, Header: recs[0], col: map[string]int{}}
	for j, h := range t.Header {
		if _, dup := t.col[h]; !dup {
			t.col[h] = j
		}
	}
	for i, rec := range recs[1:] {
		if len(rec) > len(t.Header) {
			return nil, fmt.Errorf("%s: %w: line %d has %d fields, the header %d", path, ErrCSV, i+2, len(rec), len(t.Header))
		}
		for len(rec) < len(t.Header) {
			rec = append(rec, "")
		}
		t.Rows = append(t.Rows, rec)
	}
	return t, nil
}

// Has reports whether the table has column name.
func (t *Table) Has(name string) bool { _, ok := t.col[name]; return ok }

// Column returns the raw cells of column name.
func (t *Table) Column(name string) ([]string, bool) {
	j, ok := t.col[name]
	if !ok {
		return nil, false
	}
	out := make([]string, len(t.Rows))
	for i, r := range t.Rows {
		out[i] = r[j]
	}
	return out, true
}

// IDStrings returns column name as pandas' astype(str) renders it after read_csv's type
// inference: a column of integers loses leading zeros ("001" → "1"), a numeric column with
// a decimal point or an empty cell becomes floats ("1" → "1.0", "" → "nan"), anything else
// stays text with empty cells as "nan". Graders compare IDs in this form, as ReX's do.
func (t *Table) IDStrings(name string) ([]string, bool) {
	raw, ok := t.Column(name)
	if !ok {
		return nil, false
	}
	return pandasStrings(raw), true
}

func pandasStrings(raw []string) []string {
	out := make([]string, len(raw))
	allInt, allNum := true, true
	for _, s := range raw {
		if s == "" {
			allInt = false
			continue
		}
		if _, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err != nil {
			allInt = false
		}
		if _, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil {
			allNum = false
		}
	}
	for i, s := range raw {
		switch {
		case s == "":
			out[i] = "nan"
		case allInt:
			n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			out[i] = strconv.FormatInt(n, 10)
		case allNum:
			f, _ := strconv.ParseFloat(strings.TrimSpace(s), 64)
			out[i] = pyFloatRepr(f)
		default:
			out[i] = s
		}
	}
	return out
}

// pyFloatRepr formats f as Python's repr(float) does.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expS, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expS)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// Spec describes a challenge's submission.csv.
type Spec struct {
	IDColumn    string   // e.g. "image_id"
	Columns     []string // the other required columns
	FileColumns []string // columns that name files relative to the submission folder
	// Exts, when set, are the accepted file-name endings (lower case, with the dot) of
	// FileColumns, e.g. ".tif", ".nii.gz".
	Exts []string
}

// Submission is a read submission.csv.
type Submission struct {
	Dir   string
	Table *Table
	IDs   []string       // per row, in pandas astype(str) form
	Row   map[string]int // id → its first row
}

// Value returns column col of the row of id.
func (s *Submission) Value(id, col string) string {
	i, ok := s.Row[id]
	if !ok || !s.Table.Has(col) {
		return ""
	}
	return s.Table.Rows[i][s.Table.col[col]]
}

// File returns the path of the file that column col of id's row names.
func (s *Submission) File(id, col string) string {
	return filepath.Join(s.Dir, filepath.FromSlash(s.Value(id, col)))
}

// ReadAnswers reads answersDir/test_labels.csv, checks it has idCol and cols, and returns
// the table and its IDs (pandas astype(str) form). A problem here is the host's, an error.
func ReadAnswers(answersDir, idCol string, cols ...string) (*Table, []string, error) {
	path := filepath.Join(answersDir, AnswersCSV)
	t, err := ReadTable(path)
	if err != nil {
		return nil, nil, fmt.Errorf("grade: answers: %w", err)
	}
	for _, c := range append([]string{idCol}, cols...) {
		if !t.Has(c) {
			return nil, nil, fmt.Errorf("grade: answers: %s has no column %q", path, c)
		}
	}
	ids, _ := t.IDStrings(idCol)
	return t, ids, nil
}

// ReadSubmission reads dir/submission.csv under spec and records in p every rule it breaks:
// the file is missing or unreadable, a required column is missing, IDs are missing from or
// extra to testIDs or repeated, a file cell is empty, absolute, leaves the folder, has an
// unaccepted extension or names no regular file. It returns nil when the CSV itself
// cannot be read.
func ReadSubmission(dir string, spec Spec, testIDs []string, p *Problems) *Submission {
	path := filepath.Join(dir, SubmissionCSV)
	t, err := ReadTable(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			p.Addf("%s does not exist.", path)
		} else {
			p.Addf("%s cannot be read: %v.", path, err)
		}
		return nil
	}
	s := &Submission{Dir: dir, Table: t, Row: map[string]int{}}
	ok := true
	for _, c := range append(append([]string{spec.IDColumn}, spec.Columns...), spec.FileColumns...) {
		if !t.Has(c) {
			p.Addf("%s has no column %q (header: %s).", path, c, strings.Join(t.Header, ","))
			if c == spec.IDColumn {
				ok = false
			}
		}
	}
	if !ok {
		return s
	}
	s.IDs, _ = t.IDStrings(spec.IDColumn)
	var dups []string
	for i, id := range s.IDs {
		if _, seen := s.Row[id]; seen {
			dups = append(dups, id)
			continue
		}
		s.Row[id] = i
	}
	if len(dups) > 0 {
		p.Addf("%s repeats %d IDs: %s.", path, len(dups), listIDs(dups))
	}
	want := map[string]bool{}
	var missing, extra []string
	for _, id := range testIDs {
		want[id] = true
		if _, ok := s.Row[id]; !ok {
			missing = append(missing, id)
		}
	}
	for id := range s.Row {
		if !want[id] {
			extra = append(extra, id)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		p.Addf("%s lacks %d test IDs: %s.", path, len(missing), listIDs(missing))
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		p.Addf("%s has %d IDs that are not in the test set: %s.", path, len(extra), listIDs(extra))
	}
	for _, c := range spec.FileColumns {
		if !t.Has(c) {
			continue
		}
		for _, id := range testIDs {
			if _, ok := s.Row[id]; ok {
				checkFile(s, id, c, spec.Exts, p)
			}
		}
	}
	return s
}

// listIDs renders ids for a message, at most 50 of them.
func listIDs(ids []string) string {
	if len(ids) > 50 {
		return strings.Join(ids[:50], ", ") + fmt.Sprintf(" and %d more", len(ids)-50)
	}
	return strings.Join(ids, ", ")
}

// checkRelPath records a problem when rel is empty, absolute or leaves the folder.
func checkRelPath(id, col, rel string, p *Problems) bool {
	switch {
	case strings.TrimSpace(rel) == "":
		p.Addf("row %q: column %q is empty.", id, col)
		return false
	case filepath.IsAbs(rel) || strings.HasPrefix(rel, "/"):
		p.Addf("row %q: %s %q is an absolute path; paths are relative to the submission folder.", id, col, rel)
		return false
	case !filepath.IsLocal(filepath.FromSlash(rel)):
		p.Addf("row %q: %s %q leaves the submission folder.", id, col, rel)
		return false
	}
	return true
}

func checkFile(s *Submission, id, col string, exts []string, p *Problems) {
	rel := s.Value(id, col)
	if !checkRelPath(id, col, rel, p) {
		return
	}
	if len(exts) > 0 {
		low := strings.ToLower(rel)
		okExt := false
		for _, e := range exts {
			if strings.HasSuffix(low, e) {
				okExt = true
			}
		}
		if !okExt {
			p.Addf("row %q: %s %q is not one of %s.", id, col, rel, strings.Join(exts, ", "))
		}
	}
	fi, err := os.Stat(s.File(id, col))
	switch {
	case err != nil:
		p.Addf("row %q: %s %q does not exist in the submission folder.", id, col, rel)
	case !fi.Mode().IsRegular():
		p.Addf("row %q: %s %q is not a regular file.", id, col, rel)
	}
}
