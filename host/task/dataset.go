package task

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// ErrData marks a data folder that does not match its task definition.
var ErrData = errors.New("data does not match the task")

// Case is one case of a dataset, with absolute paths.
type Case struct {
	ID      string
	Patient string
	Images  []string // one file per image pattern
	Label   string   // the label file (per-case formats) or table (table formats); "" for test
}

// Dataset is a task's cases found in a data folder.
type Dataset struct {
	Root  string
	Train []Case
	Test  []Case
}

// Resolve finds the task's train and test cases under root. Each pattern's files must all
// exist: a train case whose label is missing, or a second channel missing, is an error
// naming the case and the file. Cases are sorted by id.
func (t *Task) Resolve(root string) (*Dataset, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("data folder: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a folder", ErrData, abs)
	}
	var patient *regexp.Regexp
	if t.Data.Patient != "" {
		patient = regexp.MustCompile(t.Data.Patient) // checked by Validate
	}
	d := &Dataset{Root: abs}
	if d.Train, err = t.split(abs, &t.Data.Train, "train", patient); err != nil {
		return nil, err
	}
	if d.Test, err = t.split(abs, &t.Data.Test, "test", patient); err != nil {
		return nil, err
	}
	if len(d.Train) == 0 {
		return nil, fmt.Errorf("%w: no training case in %s matches %s", ErrData, abs, t.Data.Train.Images[0])
	}
	return d, nil
}

func (t *Task) split(root string, s *Split, name string, patient *regexp.Regexp) ([]Case, error) {
	first := s.FirstPatterns()
	var ids []string
	for _, p := range first {
		more, err := IDs(root, p)
		if err != nil {
			return nil, err
		}
		ids = append(ids, more...)
	}
	sort.Strings(ids)
	ids = slices.Compact(ids)
	cases := make([]Case, 0, len(ids))
	for _, id := range ids {
		c := Case{ID: id, Patient: id}
		if patient != nil {
			if m := patient.FindStringSubmatch(id); m != nil && m[1] != "" {
				c.Patient = m[1]
			}
		}
		for i, p := range s.Images {
			f := Expand(root, p, id)
			if i == 0 {
				f = firstExisting(root, first, id)
			}
			if _, err := os.Stat(f); err != nil {
				return nil, fmt.Errorf("%w: %s case %s: image %s is missing", ErrData, name, id, f)
			}
			c.Images = append(c.Images, f)
		}
		if s.Label.Path != "" {
			c.Label = Expand(root, s.Label.Path, id)
			if _, err := os.Stat(c.Label); err != nil {
				if Table(s.Label.Format) {
					return nil, fmt.Errorf("%w: label table %s is missing", ErrData, c.Label)
				}
				return nil, fmt.Errorf("%w: %s case %s has no label: %s is missing", ErrData, name, id, c.Label)
			}
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// FirstPatterns is the first image pattern followed by its variants with the other
// Suffixes in place of its own ending.
func (s *Split) FirstPatterns() []string {
	if len(s.Images) == 0 {
		return nil
	}
	p := s.Images[0]
	out := []string{p}
	base := strings.TrimSuffix(p, Suffix(p))
	for _, x := range s.Suffixes {
		out = append(out, base+x)
	}
	return out
}

// firstExisting is the file of the first pattern that exists for id (the first pattern's
// file when none does).
func firstExisting(root string, patterns []string, id string) string {
	for _, p := range patterns {
		f := Expand(root, p, id)
		if _, err := os.Stat(f); err == nil {
			return f
		}
	}
	return Expand(root, patterns[0], id)
}

// Expand is pattern's file for case id under root.
func Expand(root, pattern, id string) string {
	return filepath.Join(root, filepath.FromSlash(strings.ReplaceAll(pattern, "{id}", id)))
}

// IDs lists the case ids of the files under root that match pattern, sorted. The id
// stands for one path segment (or part of one); a pattern whose last segment is {id}
// alone also matches folders.
func IDs(root, pattern string) ([]string, error) {
	dir, base := filepath.Split(filepath.FromSlash(pattern))
	if strings.Contains(dir, "{id}") {
		return nil, fmt.Errorf("%w: pattern %s has {id} in a folder name", ErrInvalid, pattern)
	}
	prefix, suffix, _ := strings.Cut(base, "{id}")
	ents, err := os.ReadDir(filepath.Join(root, dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// A pattern that ends in {id} names folders too (a DICOM series per case).
	folders := prefix == "" && suffix == ""
	var ids []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() && !folders || len(n) <= len(prefix)+len(suffix) || !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, suffix) {
			continue
		}
		id := n[len(prefix) : len(n)-len(suffix)]
		if strings.HasPrefix(id, ".") {
			continue
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}
