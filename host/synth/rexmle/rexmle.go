// Package rexmle generates small datasets shaped like each of the 20 ReX-MLE challenges, so
// that every challenge can run end to end without the real data.
//
// Generate writes out/public, laid out exactly as ReX-MLE's prepare.py lays out
// prepared/public for that challenge (train/ and test/ folders with the challenge's own
// file names and formats, sample_submission.csv, description.md, and leaderboard.csv where
// prepare.py copies it), and out/private, laid out as prepared/private (test_labels.csv and
// the ground-truth files in the form the graders of amid/host/grade read). The built-in
// task definitions (amid/assets RexMLETask) resolve on out/public unchanged.
//
// The images resemble their modality closely enough that a model has to learn something:
// head-like CT in Hounsfield units and MR contrasts with lesions bright on DWI and dark on
// ADC, vessel trees in CTA and TOF-MRA labelled as TopCoW and TopBrain label them,
// H&E-like tiles with nuclei whose colour and size follow their class, microscopy cells,
// panoramic dental X-rays with abnormal teeth, low-dose CT slices whose noise level sets
// their quality score, and ultrasound pairs where the low-quality image is the
// high-quality one blurred and speckled.
//
// Cases are split into train and test as ReX-MLE does, 80/20 with ceil(0.2 n) test cases,
// by a permutation drawn from the seed (sklearn's shuffle cannot be reproduced bit for bit
// in Go, and need not be for generated data). Everything is deterministic for a seed: two
// runs write the same bytes. Default sizes are tiny (3D volumes of 32–48 voxels a side, 2D
// images of 64–128 pixels); Options.Real writes the real challenges' dimensions instead.
//
// Two deliberate differences from the real data keep tiny datasets gradeable: PUMA tiles
// are crops at the real 40× magnification (nuclei keep their size in pixels), and their
// private tissue masks have the tile's size rather than ReX's fixed 1024×1024 (the grader
// resizes both masks to 1024×1024).
package rexmle

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"amid/assets"
	"amid/assets/leaderboards"
	"amid/host/grade"
	"amid/host/task"
	"amid/viewer/imageio"
	"amid/viewer/volume"
)

// Options control a generated dataset.
type Options struct {
	// Cases is the number of labelled cases before the train/test split (default
	// DefaultCases, at least MinCases, at most MaxCases).
	Cases int
	// Seed picks the images, the labels and the split.
	Seed int64
	// Real writes the real challenge's image dimensions (hundreds of megabytes for the 3D
	// challenges) instead of tiny ones.
	Real bool
}

// Case-count bounds.
const (
	DefaultCases = 10
	MinCases     = 2
	MaxCases     = 2000
)

// Errors of Generate.
var (
	ErrUnknown  = errors.New("no generator for this challenge")
	ErrOptions  = errors.New("invalid generator options")
	ErrNotEmpty = errors.New("output folder is not empty")
)

// generator writes one challenge's cases into d.
type generator func(d *dataset) error

var generators = map[string]generator{}

func register(id string, g generator) {
	if _, dup := generators[id]; dup {
		panic("rexmle: generator registered twice: " + id)
	}
	generators[id] = g
}

// IDs lists the challenge ids Generate knows, in the order of grade.ChallengeIDs.
func IDs() []string {
	var ids []string
	for _, id := range grade.ChallengeIDs {
		if _, ok := generators[id]; ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// Generate writes a dataset shaped like challenge id into out/public and out/private. out
// may exist, but public and private in it must be absent or empty.
func Generate(id, out string, opt Options) error {
	g, ok := generators[id]
	if !ok {
		return fmt.Errorf("rexmle: %w: %q (known: %s)", ErrUnknown, id, strings.Join(IDs(), ", "))
	}
	if opt.Cases == 0 {
		opt.Cases = DefaultCases
	}
	if opt.Cases < MinCases || opt.Cases > MaxCases {
		return fmt.Errorf("rexmle: %w: %d cases, want %d to %d", ErrOptions, opt.Cases, MinCases, MaxCases)
	}
	def, err := assets.RexMLETask(id)
	if err != nil {
		return err
	}
	tk, err := task.Parse(def)
	if err != nil {
		return fmt.Errorf("rexmle: built-in task %s: %w", id, err)
	}
	d := &dataset{
		id: id, opt: opt, task: tk,
		pub: filepath.Join(out, "public"), priv: filepath.Join(out, "private"),
	}
	for _, dir := range []string{d.pub, d.priv} {
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("rexmle: %w", err)
		}
		if len(ents) > 0 {
			return fmt.Errorf("rexmle: %w: %s holds %d entries", ErrNotEmpty, dir, len(ents))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("rexmle: %w", err)
		}
	}
	d.family = id
	for _, f := range families {
		if strings.HasPrefix(id, f[0]) {
			d.family = f[1]
		}
	}
	d.split()
	if err := g(d); err != nil {
		return fmt.Errorf("rexmle: %s: %w", id, err)
	}
	if err := d.finish(); err != nil {
		return fmt.Errorf("rexmle: %s: %w", id, err)
	}
	return nil
}

// families are the id prefixes of challenges that share one dataset, as ReX-MLE's share
// one raw folder and, with the same sorted ids, one split.
var families = [][2]string{{"puma-", "puma"}, {"topcow-track1-", "topcow-ct"}, {"topcow-track2-", "topcow-mr"}}

// dataset is one challenge's output under construction.
type dataset struct {
	id        string
	family    string // challenges of one dataset (PUMA, TopCoW per modality) draw the same cases
	opt       Options
	task      *task.Task
	pub, priv string
	isTest    []bool // per case index

	answerHeader []string
	answers      [][]string
	// sample is the sample submission's path pattern when it differs from the task's
	// submission path (USenhance's prepare.py writes enhanced/).
	sample string
	// leaderboard: prepare.py copies leaderboard.csv into public.
	leaderboard bool
}

// n is the number of cases.
func (d *dataset) n() int { return d.opt.Cases }

// split marks ceil(0.2 n) cases as test, chosen by a permutation drawn from the seed.
func (d *dataset) split() {
	n := d.n()
	nTest := int(math.Ceil(0.2 * float64(n)))
	r := rand.New(rand.NewPCG(uint64(d.opt.Seed), hash64("split/"+d.family)))
	perm := r.Perm(n)
	d.isTest = make([]bool, n)
	for _, i := range perm[:nTest] {
		d.isTest[i] = true
	}
}

// rng is the random source of case i, independent of the number of cases.
func (d *dataset) rng(i int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(d.opt.Seed), hash64(fmt.Sprintf("%s/%d", d.family, i))))
}

func hash64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// under joins a slash-separated path relative to root.
func under(root, rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

func mkdirFor(p string) error { return os.MkdirAll(filepath.Dir(p), 0o755) }

// writeImage writes v at rel under root, in the format its extension names.
func writeImage(root, rel string, v *volume.Volume) error {
	p := under(root, rel)
	if err := mkdirFor(p); err != nil {
		return err
	}
	return imageio.Write(p, v)
}

// writeFile writes b at rel under root.
func writeFile(root, rel string, b []byte) error {
	p := under(root, rel)
	if err := mkdirFor(p); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}

// writeJSON writes v as indented JSON at rel under root.
func writeJSON(root, rel string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(root, rel, append(b, '\n'))
}

// writeCSV writes a header and rows at rel under root.
func writeCSV(root, rel string, header []string, rows [][]string) error {
	var sb strings.Builder
	w := csv.NewWriter(&sb)
	if err := w.Write(header); err != nil {
		return err
	}
	if err := w.WriteAll(rows); err != nil {
		return err
	}
	return writeFile(root, rel, []byte(sb.String()))
}

// answer adds a row of test_labels.csv.
func (d *dataset) answer(row ...string) { d.answers = append(d.answers, row) }

// finish writes test_labels.csv, sample_submission.csv, description.md and the
// leaderboard.
func (d *dataset) finish() error {
	rows := slices.Clone(d.answers)
	sort.SliceStable(rows, func(a, b int) bool { return rows[a][0] < rows[b][0] })
	if err := writeCSV(d.priv, grade.AnswersCSV, d.answerHeader, rows); err != nil {
		return err
	}
	s := d.task.Submission
	pattern := s.Path
	if d.sample != "" {
		pattern = d.sample
	}
	var sub [][]string
	for _, r := range rows {
		row := make([]string, len(s.Columns))
		for j, c := range s.Columns {
			switch {
			case c == s.IDColumn:
				row[j] = r[0]
			case c == s.FileColumn:
				row[j] = strings.ReplaceAll(pattern, "{id}", r[0])
			case c == s.ValueColumn:
				row[j] = "0.0"
			default:
				row[j] = s.Const[c]
			}
		}
		sub = append(sub, row)
	}
	if err := writeCSV(d.pub, "sample_submission.csv", s.Columns, sub); err != nil {
		return err
	}
	if err := writeFile(d.pub, "description.md", []byte(d.description(len(rows)))); err != nil {
		return err
	}
	if d.leaderboard {
		lb, _, err := leaderboards.Files(d.id)
		if err != nil {
			return err
		}
		if err := writeFile(d.pub, "leaderboard.csv", lb); err != nil {
			return err
		}
	}
	return nil
}

// description is public/description.md: the task, the layout and the submission.
func (d *dataset) description(nTest int) string {
	t := d.task
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", t.Title, t.Description)
	fmt.Fprintf(&b, "This dataset is generated (challenge id `%s`, seed %d, %d cases: %d train, %d test). "+
		"It has the real challenge's layout, file formats and label values, but scores on it are not "+
		"comparable with the challenge's published results.\n\n", d.id, d.opt.Seed, d.n(), d.n()-nTest, nTest)
	b.WriteString("## Files\n\n")
	for _, p := range t.Data.Train.Images {
		fmt.Fprintf(&b, "- `%s`: training image\n", p)
	}
	fmt.Fprintf(&b, "- `%s`: training label (%s)\n", t.Data.Train.Label.Path, t.Data.Train.Label.Format)
	for _, p := range t.Data.Test.Images {
		fmt.Fprintf(&b, "- `%s`: test image\n", p)
	}
	b.WriteString("\n## Submission\n\n")
	fmt.Fprintf(&b, "`submission.csv` with the columns `%s`, one row per test case", strings.Join(t.Submission.Columns, ","))
	if t.Submission.FileColumn != "" {
		fmt.Fprintf(&b, "; `%s` names the prediction file relative to the submission folder, e.g. `%s`",
			t.Submission.FileColumn, t.Submission.Path)
	}
	fmt.Fprintf(&b, ". The primary metric is `%s` (%s is better).\n", t.Metric.Name, map[string]string{"max": "higher", "min": "lower"}[t.Metric.Direction])
	return b.String()
}

// caseSplit names the folder of case i: "train" or "test".
func (d *dataset) caseSplit(i int) string {
	if d.isTest[i] {
		return "test"
	}
	return "train"
}
