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

	"amid/viewer/dicom"
)

// ErrData marks a data folder that does not match its task definition.
var ErrData = errors.New("data does not match the task")

// Case is one case of a dataset, with absolute paths.
type Case struct {
	ID      string
	Patient string
	Images  []string // one file (or DICOM folder) per image pattern
	Label   string   // the label file (per-case formats) or table (table formats); "" for test
	// Classes are, for a training case whose class is its folder (label format folder),
	// the class of each attribute; Label is then that folder.
	Classes map[string]int
	// Series are, per image, the DICOM series chosen in the case's folder when the
	// image is a DICOM folder (a study), by the task's series selector; nil for files.
	// LinkSeries points Images at the chosen series alone.
	Series []*dicom.SeriesInfo
	// Notes say, a sentence each, what was passed over in the case's DICOM folders
	// (localizers, reports, series with too few slices); Warnings how a chosen series
	// is resampled when read (gantry tilt, uneven slice spacing). Neither names a UID.
	Notes, Warnings []string
	// shared: the DICOM folder of image i holds more than its chosen series.
	shared []bool
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
	if len(Placeholders(s.Images[0])) > 0 {
		return t.folderSplit(root, s, name, patient)
	}
	first := s.FirstPatterns()
	ids, err := idsOf(root, first)
	if err != nil {
		return nil, err
	}
	cases := make([]Case, 0, len(ids))
	for _, id := range ids {
		c, err := t.caseAt(root, s, first, name, patient, id)
		if err != nil {
			return nil, err
		}
		cases = append(cases, c)
	}
	return cases, nil
}

// idsOf lists the case ids under root that any of the patterns match, sorted, each once.
func idsOf(root string, patterns []string) ([]string, error) {
	var ids []string
	for _, p := range patterns {
		more, err := IDs(root, p)
		if err != nil {
			return nil, err
		}
		ids = append(ids, more...)
	}
	sort.Strings(ids)
	return slices.Compact(ids), nil
}

// caseAt is case id of split name under root, by the split's patterns (first: its first
// image's patterns, FirstPatterns), its patient named by patient (nil: the case itself).
func (t *Task) caseAt(root string, s *Split, first []string, name string, patient *regexp.Regexp, id string) (Case, error) {
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
		st, err := os.Stat(f)
		if err != nil {
			return c, fmt.Errorf("%w: %s case %s: image %s is missing", ErrData, name, id, f)
		}
		c.Images = append(c.Images, f)
		c.Series = append(c.Series, nil)
		c.shared = append(c.shared, false)
		if st.IsDir() {
			if err := t.chooseSeries(&c, i, name); err != nil {
				return c, err
			}
		}
	}
	if s.Label.Path != "" {
		c.Label = Expand(root, s.Label.Path, id)
		if _, err := os.Stat(c.Label); err != nil {
			if Table(s.Label.Format) {
				return c, fmt.Errorf("%w: label table %s is missing", ErrData, c.Label)
			}
			return c, fmt.Errorf("%w: %s case %s has no label: %s is missing", ErrData, name, id, c.Label)
		}
	}
	return c, nil
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

// IDs lists the case ids under root that match pattern, sorted. The id stands for one path
// segment (or part of one). In the last segment it names files ("train/{id}.nii.gz"), or
// files and folders when it is the whole segment ("train/{id}"); a pattern ending in "/"
// names folders ("train/{id}/"); in a folder's name, what follows must exist
// ("studies/{id}/CT/", "cases/{id}/image.nii.gz"). A folder case is a DICOM folder.
func IDs(root, pattern string) ([]string, error) {
	segs := strings.Split(pattern, "/")
	k := slices.IndexFunc(segs, func(s string) bool { return strings.Contains(s, "{id}") })
	if k < 0 {
		return nil, fmt.Errorf("%w: pattern %s has no {id}", ErrInvalid, pattern)
	}
	prefix, suffix, _ := strings.Cut(segs[k], "{id}")
	ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(strings.Join(segs[:k], "/"))))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	last := k == len(segs)-1
	var ids []string
	for _, e := range ents {
		n := e.Name()
		if len(n) <= len(prefix)+len(suffix) || !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, suffix) {
			continue
		}
		id := n[len(prefix) : len(n)-len(suffix)]
		if strings.HasPrefix(id, ".") {
			continue
		}
		if last {
			// A file, or a folder when {id} is the whole name.
			if isDir(filepath.Join(root, filepath.FromSlash(strings.Join(segs[:k], "/")), n)) && segs[k] != "{id}" {
				continue
			}
		} else {
			st, err := os.Stat(Expand(root, pattern, id))
			if err != nil || (strings.HasSuffix(pattern, "/") && !st.IsDir()) {
				continue
			}
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// isDir reports whether path is a folder (a link to one counts).
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
