// Package taskinit guesses a task definition (amid/host/task) from a data folder, for
// `amid task init` and the desktop's New task screen. It recognises the layouts AMID reads:
//
//   - image and label pairs that share a file name in two folders (nnU-Net's and the
//     Medical Segmentation Decathlon's imagesTr/ and labelsTr/, with nnU-Net's _0000
//     channel endings; images/ and masks/), or in one folder by their endings
//     ({id}_img and {id}_seg); a label that is a map of a few integer values makes a
//     segmentation, any other image an enhancement's target (low and high quality);
//   - DICOM series folders, one a case, with a DICOM SEG or RTSTRUCT a case;
//   - a COCO JSON of boxes with DENTEX's category_id_1, _2, _3 (format dentex-coco);
//   - AMID's annotation JSON, one file a case;
//   - a class table: a CSV with a column of image ids and a class column (names or
//     indices), several class columns, or one-hot columns; multi-label findings as
//     0/1 columns (−1 uncertain) or |-separated names; a column of fractional numbers
//     makes it an image-quality score;
//   - image folders, one a class (train/{class}/*.png);
//   - YOLO .txt boxes (with data.yaml's names, classes.txt or obj.names as the class
//     list) and Pascal VOC XML.
//
// [Guess] returns the definition, what it guessed and from which files (Notes), and
// checks it as a run would: the text parses (task.Parse) and resolves on the folder
// (Task.Resolve) to training and test cases. Where the folder does not say (two layouts
// fit, a CSV's integer column could be classes or a score, several columns could be the
// label, no test split, uncertain cells without a policy), it guesses nothing and returns an error wrapping [ErrAmbiguous]
// whose sentence says what is ambiguous and which option settles it.
package taskinit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"amid/host/task"
	"amid/plugins/taskspec"
)

// ErrAmbiguous marks a folder whose task cannot be told without the user's word.
var ErrAmbiguous = errors.New("cannot tell")

// ErrNoLayout marks a folder in which no layout AMID reads was found.
var ErrNoLayout = errors.New("no layout AMID reads")

// Options settle what the folder leaves open.
type Options struct {
	// Kind keeps the layouts that make a task of this kind; for a CSV's integer
	// column, classification reads it as class indices and iqa as a score.
	Kind string
	// Layout keeps one layout by its short name (see Layouts).
	Layout string
	// LabelColumns are a class table's label columns, by name.
	LabelColumns []string
	// Test is the folder of the test images, relative to the data folder, where no
	// test split is found beside the training one.
	Test string
	// ID is the task id; empty: from the folder's name.
	ID string
	// Uncertain is the policy for a multi-label table's uncertain cells (−1): ignore,
	// positive or negative.
	Uncertain string
}

// Layouts are the short names of the layouts, as Options.Layout takes them.
var Layouts = []string{layoutPairs, layoutSuffix, layoutDICOM, layoutCOCO, layoutAnnotation, layoutCSV, layoutFolders, layoutYOLO, layoutVOC}

const (
	layoutPairs      = "pairs"
	layoutSuffix     = "suffix"
	layoutDICOM      = "dicom"
	layoutCOCO       = "coco"
	layoutAnnotation = "annotation"
	layoutCSV        = "csv"
	layoutFolders    = "folders"
	layoutYOLO       = "yolo"
	layoutVOC        = "voc"
)

// Result is a guessed task.
type Result struct {
	Layout string // the layout's short name
	What   string // the layout in words
	YAML   []byte // the task definition
	Task   *task.Task
	Notes  []string // what was guessed, from which files: one sentence each
	Train  int      // training cases the definition finds
	Test   int      // test cases
}

// candidate is one layout that fits the folder: the task it makes, or why it cannot be
// told (err, wrapping ErrAmbiguous).
type candidate struct {
	layout, what, kind string
	def                *def
	notes              []string
	err                error
}

// def is the task definition a layout makes, before it is written.
type def struct {
	kind       string
	dims       int
	channels   []string
	labels     []taskspec.Label
	attributes []taskspec.Attribute
	points     []string
	box3d      bool
	score      *taskspec.ScoreRange
	train      []string // image patterns
	label      yaml.MapSlice
	test       []string
	metric     string
	submission yaml.MapSlice
}

// Guess looks at the data folder dir and guesses its task definition.
func Guess(dir string, o Options) (*Result, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("data folder %s: %w", dir, err)
	}
	if o.Kind != "" && !slices.Contains(taskspec.Kinds, o.Kind) {
		return nil, fmt.Errorf("kind %q is not one of %s", o.Kind, strings.Join(taskspec.Kinds, ", "))
	}
	if o.Layout != "" && !slices.Contains(Layouts, o.Layout) {
		return nil, fmt.Errorf("layout %q is not one of %s", o.Layout, strings.Join(Layouts, ", "))
	}
	l, err := list(abs)
	if err != nil {
		return nil, err
	}
	var cands []candidate
	var why []string
	for _, f := range []func(*listing, Options) ([]candidate, []string){pairLayouts, suffixLayouts, dicomLayouts, cocoLayouts, tableLayouts, folderLayouts} {
		c, w := f(l, o)
		cands = append(cands, c...)
		why = append(why, w...)
	}
	var kept []candidate
	for _, c := range cands {
		if c.err != nil && errors.Is(c.err, ErrNoLayout) {
			why = append(why, strings.ReplaceAll(c.err.Error(), ErrNoLayout.Error()+": ", ""))
			continue
		}
		if (o.Kind == "" || c.kind == "" || c.kind == o.Kind) && (o.Layout == "" || c.layout == o.Layout) {
			kept = append(kept, c)
		}
	}
	if o.Kind != "" && slices.ContainsFunc(kept, func(c candidate) bool { return c.kind == o.Kind }) {
		// Layouts of the kind asked for rule out those of no kind yet (an ambiguity).
		kept = slices.DeleteFunc(kept, func(c candidate) bool { return c.kind == "" })
	}
	switch len(kept) {
	case 0:
		msg := fmt.Sprintf("%s: %v found", abs, ErrNoLayout)
		if o.Kind != "" || o.Layout != "" {
			msg += " for " + strings.Trim(strings.Join([]string{o.Kind, o.Layout}, " "), " ")
		}
		if len(why) > 0 {
			msg += ": " + strings.Join(why, "; ")
		} else {
			msg += " (image and label pairs, DICOM series with SEG or RTSTRUCT, COCO, annotation JSON, a class table, class folders, YOLO or VOC)"
		}
		return nil, errors.New(msg)
	case 1:
	default:
		var names, flags []string
		kinds := map[string]bool{}
		for _, c := range kept {
			names = append(names, fmt.Sprintf("%s (%s)", c.what, c.kind))
			flags = append(flags, "--layout "+c.layout)
			kinds[c.kind] = true
		}
		how := strings.Join(flags, " or ")
		if len(kinds) == len(kept) {
			var ks []string
			for _, c := range kept {
				ks = append(ks, "--kind "+c.kind)
			}
			how = strings.Join(ks, " or ")
		}
		return nil, fmt.Errorf("%w: %s fits %d layouts, %s; name one with %s", ErrAmbiguous, abs, len(kept), strings.Join(names, " and "), how)
	}
	c := kept[0]
	if c.err != nil {
		return nil, c.err
	}
	id := o.ID
	if id == "" {
		id = taskID(filepath.Base(abs))
	}
	text, err := c.def.yaml(id, c.what, abs)
	if err != nil {
		return nil, err
	}
	t, err := task.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("the guessed task for %s does not read back: %w", abs, err)
	}
	ds, err := t.Resolve(abs)
	if err != nil {
		return nil, fmt.Errorf("the guessed task for %s finds no cases: %w", abs, err)
	}
	return &Result{Layout: c.layout, What: c.what, YAML: text, Task: t, Notes: c.notes, Train: len(ds.Train), Test: len(ds.Test)}, nil
}

var nonID = regexp.MustCompile(`[^a-z0-9_.-]+`)

// taskID is a task id made of a folder's name.
func taskID(name string) string {
	s := strings.Trim(nonID.ReplaceAllString(strings.ToLower(name), "-"), "-._")
	if s == "" {
		return "my-task"
	}
	return s
}

// yaml writes the definition with a header saying where it was guessed from.
func (d *def) yaml(id, what, dir string) ([]byte, error) {
	m := yaml.MapSlice{
		{Key: "id", Value: id},
		{Key: "title", Value: "Guessed from " + filepath.Base(dir) + " (" + what + ")"},
		{Key: "kind", Value: d.kind},
		{Key: "dims", Value: d.dims},
		{Key: "channels", Value: d.channels},
	}
	if len(d.labels) > 0 {
		var ls []yaml.MapSlice
		for _, l := range d.labels {
			x := yaml.MapSlice{{Key: "value", Value: l.Value}, {Key: "name", Value: l.Name}}
			if !l.Code.IsZero() {
				x = append(x, yaml.MapItem{Key: "code", Value: yaml.MapSlice{{Key: "scheme", Value: l.Code.Scheme}, {Key: "value", Value: l.Code.Value}, {Key: "meaning", Value: l.Code.Meaning}}})
			}
			ls = append(ls, x)
		}
		m = append(m, yaml.MapItem{Key: "labels", Value: ls})
	}
	if len(d.attributes) > 0 {
		var as []yaml.MapSlice
		for _, a := range d.attributes {
			x := yaml.MapSlice{{Key: "name", Value: a.Name}, {Key: "classes", Value: a.Classes}}
			if a.MultiLabel {
				x = append(x, yaml.MapItem{Key: "multi_label", Value: true})
			}
			as = append(as, x)
		}
		m = append(m, yaml.MapItem{Key: "attributes", Value: as})
	}
	if len(d.points) > 0 {
		m = append(m, yaml.MapItem{Key: "points", Value: d.points})
	}
	if d.box3d {
		m = append(m, yaml.MapItem{Key: "box3d", Value: true})
	}
	if s := d.score; s != nil {
		sc := yaml.MapSlice{{Key: "min", Value: s.Min}, {Key: "max", Value: s.Max}}
		if s.Step > 0 {
			sc = append(sc, yaml.MapItem{Key: "step", Value: s.Step})
		}
		m = append(m, yaml.MapItem{Key: "score", Value: sc})
	}
	train := yaml.MapSlice{{Key: "images", Value: d.train}}
	if len(d.label) > 0 {
		train = append(train, yaml.MapItem{Key: "label", Value: d.label})
	}
	m = append(m,
		yaml.MapItem{Key: "data", Value: yaml.MapSlice{
			{Key: "train", Value: train},
			{Key: "test", Value: yaml.MapSlice{{Key: "images", Value: d.test}}},
		}},
		yaml.MapItem{Key: "metric", Value: yaml.MapSlice{{Key: "name", Value: d.metric}}},
		yaml.MapItem{Key: "submission", Value: d.submission},
	)
	b, err := yaml.MarshalWithOptions(m, yaml.Flow(false))
	if err != nil {
		return nil, fmt.Errorf("writing the guessed task: %w", err)
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# Guessed by amid task init from %s (%s): check it before a run.\n", filepath.Base(dir), what)
	out.Write(b)
	return out.Bytes(), nil
}

// fileSubmission is the submission of a kind whose predictions are files ending in ext.
func fileSubmission(ext string) yaml.MapSlice {
	return yaml.MapSlice{
		{Key: "columns", Value: []string{"case_id", "prediction"}},
		{Key: "id_column", Value: "case_id"},
		{Key: "file_column", Value: "prediction"},
		{Key: "path", Value: "predictions/{id}" + ext},
	}
}

// maxEntries bounds the files and folders a listing holds: far more than a dataset a
// workstation trains on, few enough to list in a second or two.
const maxEntries = 500_000

// maxDepth bounds how deep the listing looks: nnU-Net's and YOLO's layouts are 2 deep,
// a DICOM study 4 or 5.
const maxDepth = 6

// listing is the folders of a data folder, each with its files and subfolders, by path
// relative to it ("" the folder itself, '/'-separated).
type listing struct {
	root string
	dirs map[string]*folder
}

type folder struct {
	rel     string
	files   []string // names
	subdirs []string // names
	sets    map[int]imageSet
}

// imageSet is a folder's images of one ending, by stem (see folder.imageSet).
type imageSet struct {
	ext   string
	stems []string
	ok    bool
}

// list walks root; hidden entries and AMID's own runs/ folder are passed over.
func list(root string) (*listing, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("data folder: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("data folder %s is not a folder", root)
	}
	l := &listing{root: root, dirs: map[string]*folder{"": {rel: ""}}}
	n := 0
	err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		name := e.Name()
		if strings.HasPrefix(name, ".") || (rel == "runs" && e.IsDir()) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if n++; n > maxEntries {
			return fmt.Errorf("data folder %s holds more than %d files and folders; point at the dataset's own folder", root, maxEntries)
		}
		parent := l.dirs[path.Dir(rel)]
		if path.Dir(rel) == "." {
			parent = l.dirs[""]
		}
		if e.IsDir() || isDirLink(p, e) {
			parent.subdirs = append(parent.subdirs, name)
			l.dirs[rel] = &folder{rel: rel}
			if strings.Count(rel, "/")+1 >= maxDepth || !e.IsDir() {
				if e.IsDir() {
					return filepath.SkipDir
				}
			}
			return nil
		}
		parent.files = append(parent.files, name)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the data folder: %w", err)
	}
	for _, f := range l.dirs {
		sort.Strings(f.files)
		sort.Strings(f.subdirs)
	}
	return l, nil
}

func isDirLink(p string, e fs.DirEntry) bool {
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// folders are the listing's folders in order of their paths.
func (l *listing) folders() []*folder {
	out := make([]*folder, 0, len(l.dirs))
	for _, f := range l.dirs {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out
}

// abs is the absolute path of rel.
func (l *listing) abs(rel string) string { return filepath.Join(l.root, filepath.FromSlash(rel)) }

// join is a relative path of folder rel and name.
func join(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

// imageExts are the image file endings AMID reads, the ones a case's image may have.
var imageExts = []string{".nii.gz", ".nii", ".mha", ".mhd", ".nrrd", ".png", ".tif", ".tiff", ".bmp"}

// unreadExts are image endings AMID does not read.
var unreadExts = []string{".jpg", ".jpeg", ".gif", ".webp"}

// stem splits a file name into its stem and ending (.nii.gz kept whole).
func stem(name string) (string, string) {
	x := task.Suffix(name)
	return strings.TrimSuffix(name, x), x
}

// byExt is a folder's files of ending ext, by stem.
func (f *folder) byExt(ext string) map[string]string {
	out := map[string]string{}
	for _, n := range f.files {
		s, x := stem(n)
		if strings.EqualFold(x, ext) && s != "" {
			out[s] = n
		}
	}
	return out
}

// imageSet is the folder's images: the image ending most of its files have, and their
// stems. ok is false where it holds fewer than two images.
func (f *folder) imageSet() (ext string, stems []string, ok bool) { return f.imageSetOf(2) }

// imageSetOf is imageSet of a folder that holds least images at least.
func (f *folder) imageSetOf(least int) (ext string, stems []string, ok bool) {
	if s, done := f.sets[least]; done {
		return s.ext, s.stems, s.ok
	}
	ext, stems, ok = f.findImages(least)
	if f.sets == nil {
		f.sets = map[int]imageSet{}
	}
	f.sets[least] = imageSet{ext, stems, ok}
	return ext, stems, ok
}

// findImages is imageSetOf, found in the folder's files.
func (f *folder) findImages(least int) (ext string, stems []string, ok bool) {
	count := map[string]int{}
	for _, n := range f.files {
		_, x := stem(n)
		if slices.Contains(imageExts, strings.ToLower(x)) {
			count[strings.ToLower(x)]++
		}
	}
	best := 0
	for _, x := range imageExts {
		if count[x] > best {
			ext, best = x, count[x]
		}
	}
	if best < least {
		return "", nil, false
	}
	for s := range f.byExt(ext) {
		stems = append(stems, s)
	}
	sort.Strings(stems)
	return ext, stems, true
}

// unread names the images of f in a format AMID does not read, "" when none.
func (f *folder) unread() string {
	for _, n := range f.files {
		_, x := stem(n)
		if slices.Contains(unreadExts, strings.ToLower(x)) {
			return fmt.Sprintf("the images of %s are %s (e.g. %s), which AMID does not read: convert them to PNG", f.display(), strings.ToUpper(strings.TrimPrefix(strings.ToLower(x), ".")), n)
		}
	}
	return ""
}

func (f *folder) display() string {
	if f.rel == "" {
		return "the data folder"
	}
	return f.rel + "/"
}

// trainWords are the words of a training folder's name, each with its test folder's word.
var trainWords = map[string]string{"train": "test", "training": "testing", "tr": "ts", "trn": "tst", "trainval": "test"}

// testFolder finds the test folder beside training folder rel: one segment with train
// made test (train/ → test/, imagesTr → imagesTs, images/train → images/test,
// train_images → test_images). ok reports whether it exists in the listing.
func (l *listing) testFolder(rel string) (string, bool) {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		for _, alt := range testNames(s) {
			c := slices.Clone(segs)
			c[i] = alt
			p := strings.Join(c, "/")
			if _, ok := l.dirs[p]; ok {
				return p, true
			}
		}
	}
	// A test folder beside the training folder or one of the folders above it:
	// images/ beside test/.
	for dir := rel; dir != ""; {
		parent := ""
		if i := strings.LastIndex(dir, "/"); i >= 0 {
			parent = dir[:i]
		}
		var found []string
		for _, s := range l.dirs[parent].subdirs {
			if slices.Contains(testWords, strings.ToLower(s)) && join(parent, s) != rel {
				found = append(found, join(parent, s))
			}
		}
		if len(found) == 1 {
			return found[0], true
		}
		dir = parent
	}
	return "", false
}

// testWords are the names of a test folder.
var testWords = []string{"test", "testing", "test_images", "test_set", "imagests"}

var wordRE = regexp.MustCompile(`[A-Za-z]+|[^A-Za-z]+`)

// testNames are the names a test folder beside a training folder named s may have.
func testNames(s string) []string {
	var out []string
	// Whole words: train → test, keeping the case.
	parts := wordRE.FindAllString(s, -1)
	for i, p := range parts {
		lw := strings.ToLower(p)
		if alt, ok := trainWords[lw]; ok {
			c := slices.Clone(parts)
			c[i] = matchCase(alt, p)
			out = append(out, strings.Join(c, ""))
		}
		// imagesTr, labelsTr: a trailing Tr.
		if strings.HasSuffix(p, "Tr") && len(p) > 2 {
			c := slices.Clone(parts)
			c[i] = strings.TrimSuffix(p, "Tr") + "Ts"
			out = append(out, strings.Join(c, ""))
		}
	}
	return out
}

func matchCase(s, like string) string {
	switch {
	case like == strings.ToUpper(like):
		return strings.ToUpper(s)
	case like[:1] == strings.ToUpper(like[:1]):
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// testPatterns are the test split's image patterns for training patterns train whose
// folder is trainDir: in the test folder beside it, or in o.Test. err wraps ErrAmbiguous
// where there is none.
func (l *listing) testPatterns(trainDir string, train []string, o Options) ([]string, string, error) {
	dir, ok := l.testFolder(trainDir)
	if o.Test != "" {
		dir, ok = strings.Trim(filepath.ToSlash(o.Test), "/"), true
		if _, there := l.dirs[dir]; !there {
			return nil, "", fmt.Errorf("test folder %s is not a folder of %s", o.Test, l.root)
		}
	}
	if !ok {
		return nil, "", fmt.Errorf("%w: no test split beside %s (no test/ or imagesTs/ folder); name the folder of test images with --test", ErrAmbiguous, l.display(trainDir))
	}
	out := make([]string, len(train))
	for i, p := range train {
		out[i] = dir + strings.TrimPrefix(p, trainDir)
		if trainDir == "" {
			out[i] = dir + "/" + p
		}
	}
	return out, dir, nil
}

// withTest completes c with d and the test patterns beside trainDir, its note naming the
// test files (what: "test images", "test series"), or the error that says why there are
// none.
func (c *candidate) withTest(l *listing, d *def, trainDir, what string, o Options) {
	test, tdir, err := l.testPatterns(trainDir, d.train, o)
	if err != nil {
		c.err = err
		return
	}
	d.test = test
	c.notes = append(c.notes, what+" in "+tdir+"/")
	c.def = d
}

func (l *listing) display(rel string) string {
	if f, ok := l.dirs[rel]; ok {
		return f.display()
	}
	return rel
}

// labelWords are the words of a folder's name or a file's ending that say it holds labels
// (or an enhancement's targets).
var (
	labelWords = []string{"label", "labels", "labelstr", "mask", "masks", "seg", "segs", "segmentation", "segmentations", "gt", "groundtruth", "ground_truth", "msk", "lab", "annotation", "annotations", "target", "targets", "high", "high_quality", "hq", "clean", "full", "fulldose", "full_dose", "reference", "ref"}
)

// says reports whether name is one of words, or ends in one after '_' or '-'.
func says(name string, words []string) bool {
	n := strings.ToLower(name)
	for _, w := range words {
		if n == w || strings.HasSuffix(n, "_"+w) || strings.HasSuffix(n, "-"+w) || strings.HasPrefix(n, w+"_") || strings.HasPrefix(n, w+"-") {
			return true
		}
	}
	return false
}
