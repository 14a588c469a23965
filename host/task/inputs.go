package task

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"amid/viewer/dicom"
	"amid/viewer/imageio"
)

// Unread is an input, or a case in a folder of cases, that gives no case to predict.
type Unread struct {
	Input string // the path as given
	ID    string // the case in the input, when the input is a folder of cases
	Err   error
}

// Inputs finds the cases in paths given to a trained model (amid predict). Each path is
//
//   - a DICOM folder in which the task's series selector picks a series, as in training
//     (a series folder, or a study as PACS exports it): one case;
//   - a folder laid out as the task's test split below the folder that holds {id}
//     ("test/{id}_0000.nii.gz" read as "{id}_0000.nii.gz" in the folder), or below its
//     class folders ("test/{class}/{id}.png" read as "{class}/{id}.png"): its cases;
//     for a task of one image per case, any folder of images and DICOM folders: each;
//   - a file (or case folder) named as that layout names a case's first image: that case,
//     its other channels found beside it by their patterns;
//   - for a task of one image per case, any other image file or folder: one case named
//     by the file's name without its suffix.
//
// Each case is its own patient. What gives no case (a path that does not exist, a case
// missing a channel, a DICOM folder whose series the selector cannot pick, a second case
// of an id already found) is an Unread with the reason, and the other cases are kept.
// The error is for no path at all.
func (t *Task) Inputs(paths []string) ([]Case, []Unread, error) {
	if len(paths) == 0 {
		return nil, nil, fmt.Errorf("%w: no input given", ErrData)
	}
	rel := t.Data.Test
	rel.Images = make([]string, len(t.Data.Test.Images))
	for i, p := range t.Data.Test.Images {
		rel.Images[i] = fromID(p)
	}
	rel.Label = LabelSource{}
	var out []Case
	var bad []Unread
	from := map[string]string{}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			bad = append(bad, Unread{Input: p, Err: err})
			continue
		}
		cs, unread, err := t.inputCases(abs, &rel)
		if err != nil {
			bad = append(bad, Unread{Input: p, Err: err})
			continue
		}
		for _, u := range unread {
			u.Input = p
			bad = append(bad, u)
		}
		for _, c := range cs {
			if other, ok := from[c.ID]; ok {
				bad = append(bad, Unread{Input: p, ID: c.ID, Err: fmt.Errorf("%w: inputs %s and %s both give case %s: rename one", ErrData, other, p, c.ID)})
				continue
			}
			from[c.ID] = p
			out = append(out, c)
		}
	}
	return out, bad, nil
}

// classInputs is the test split read from its first class folder on ("{class}/{id}.png"
// for "test/{class}/{id}.png"), for a folder laid out as the test split with its class
// folders; nil when the test patterns have none.
func (t *Task) classInputs() *Split {
	if len(t.Data.Test.Images) == 0 || len(Placeholders(t.Data.Test.Images[0])) == 0 {
		return nil
	}
	s := t.Data.Test
	s.Label = LabelSource{}
	s.Images = make([]string, len(t.Data.Test.Images))
	for i, p := range t.Data.Test.Images {
		segs := strings.Split(p, "/")
		k := slices.IndexFunc(segs, func(seg string) bool { return placeholderRE.MatchString(seg) && seg != "{id}" })
		s.Images[i] = strings.Join(segs[max(k, 0):], "/")
	}
	return &s
}

// fromID is pattern from the path segment that holds {id} on.
func fromID(pattern string) string {
	k := strings.Index(pattern, "{id}")
	if k < 0 {
		return pattern
	}
	return pattern[strings.LastIndex(pattern[:k], "/")+1:]
}

// inputCases are the cases of the input path abs (see Inputs); rel is the test split read
// from the segment that holds {id}. A folder's cases that cannot be read are unread; the
// error is for an input that gives no case at all.
func (t *Task) inputCases(abs string, rel *Split) ([]Case, []Unread, error) {
	st, err := os.Stat(abs)
	if err != nil {
		return nil, nil, err
	}
	if st.IsDir() {
		if t.picks(abs) {
			c, err := t.inputCase(abs, rel)
			return []Case{c}, nil, err
		}
		first := rel.FirstPatterns()
		ids, err := idsOf(abs, first)
		if err != nil {
			return nil, nil, err
		}
		if len(ids) > 0 {
			var cs []Case
			var bad []Unread
			for _, id := range ids {
				c, err := t.caseAt(abs, rel, first, "input", nil, id)
				if err != nil {
					bad = append(bad, Unread{ID: id, Err: err})
					continue
				}
				cs = append(cs, c)
			}
			return cs, bad, nil
		}
		if cls := t.classInputs(); cls != nil {
			// Subfolders that are not classes are not this layout: any folder of images
			// below is tried next.
			if cs, err := t.folderSplit(abs, cls, "input", nil); err == nil && len(cs) > 0 {
				return cs, nil, nil
			}
		}
		if len(rel.Images) == 1 {
			if cs, bad := t.eachInput(abs, rel); len(cs)+len(bad) > 0 {
				return cs, bad, nil
			}
		}
	}
	c, err := t.inputCase(abs, rel)
	if err != nil {
		return nil, nil, err
	}
	return []Case{c}, nil, nil
}

// eachInput are the cases of a folder whose names the task's layout does not know, for a
// task of one image per case: each image file in it, and each folder in which the task's
// selector picks a series.
func (t *Task) eachInput(dir string, rel *Split) ([]Case, []Unread) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, []Unread{{Err: err}}
	}
	var out []Case
	var bad []Unread
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if isDir(p) {
			if !t.picks(p) {
				continue
			}
		} else if _, err := imageio.FormatOf(p); err != nil {
			continue
		}
		c, err := t.inputCase(p, rel)
		if err != nil {
			bad = append(bad, Unread{ID: e.Name(), Err: err})
			continue
		}
		out = append(out, c)
	}
	return out, bad
}

// picks reports whether the DICOM folder dir is one case: the task's selector picks one
// series in it for the first image (false when dir holds no DICOM image, or the series of
// several patients).
func (t *Task) picks(dir string) bool {
	st, err := dicom.Scan(dir)
	if err != nil || len(st.Series) == 0 {
		return false
	}
	_, _, err = st.Select(t.selector(0))
	return err == nil
}

// inputCase is the one case the path abs is: a case's first image (or case folder) by the
// layout rel, or, for a task of one image per case, the image itself.
func (t *Task) inputCase(abs string, rel *Split) (Case, error) {
	root, base := filepath.Dir(abs), filepath.Base(abs)
	first := rel.FirstPatterns()
	for _, p := range first {
		seg, _, _ := strings.Cut(p, "/")
		prefix, suffix, _ := strings.Cut(seg, "{id}")
		if len(base) <= len(prefix)+len(suffix) || !strings.HasPrefix(base, prefix) || !strings.HasSuffix(base, suffix) {
			continue
		}
		id := base[len(prefix) : len(base)-len(suffix)]
		if _, err := os.Stat(Expand(root, p, id)); err != nil {
			continue
		}
		return t.caseAt(root, rel, first, "input", nil, id)
	}
	if len(rel.Images) != 1 {
		return Case{}, fmt.Errorf("%w: the task's cases have %d images (%s), and this path is named as none of them", ErrData, len(rel.Images), strings.Join(rel.Images, ", "))
	}
	id := strings.TrimSuffix(base, Suffix(base))
	if id == "" || strings.HasPrefix(id, ".") {
		return Case{}, fmt.Errorf("%w: a hidden file is not an image", ErrData)
	}
	one := &Split{Images: []string{base}}
	return t.caseAt(root, one, one.Images, "input", nil, id)
}
