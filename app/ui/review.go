package ui

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/widget"

	"amid/assets/fileio"
	"amid/host/export"
	"amid/host/run"
	"amid/host/task"
	"amid/plugins/metrics"
	"amid/plugins/taskspec"
	"amid/viewer/imageio"
	"amid/viewer/volume"
	vwidget "amid/viewer/widget"
)

// reviewCase is one case on the Review screen: a test case to decide on, or a validation
// case of the chosen lane (with its truth) to learn from.
type reviewCase struct {
	ID         string
	Images     []string
	Pred       string // the prediction file
	Labels     string // a segmentation's label map file, which a correction edits
	Truth      string // the canonical label (validation cases)
	Validation bool
	Decision   string
	Note       string
	Dice       float64 // validation segmentation cases: NaN until computed
	// Confidence is the model's, on a test case whose plugin gives one (NaN: none).
	Confidence float64
}

func (c *reviewCase) String() string {
	s := c.ID
	if c.Validation {
		s = "validation " + s
		if !math.IsNaN(c.Dice) {
			s += fmt.Sprintf("  Dice %.3f", c.Dice)
		}
		return s
	}
	if !math.IsNaN(c.Confidence) {
		s += fmt.Sprintf("  confidence %.3f", c.Confidence)
	}
	switch c.Decision {
	case run.Approved:
		return "✓ " + s
	case export.Corrected:
		return "✎ " + s
	case run.Rejected:
		return "✗ " + s
	}
	return "· " + s
}

// reviewData is a run's cases for review.
type reviewData struct {
	Dir        string
	State      *run.State
	Task       *task.Task
	Spec       *taskspec.Spec
	Test       []*reviewCase
	Validation []*reviewCase
}

// loadReview reads a finished run's test predictions (final/predictions.json), their
// images (the task resolved in the run's data folder), the decisions so far, and the
// chosen lane's validation predictions (lanes/<lane>/f<k>/val/) with their labels.
func loadReview(dir string) (*reviewData, error) {
	st, err := run.LoadState(dir)
	if err != nil {
		return nil, err
	}
	t, err := task.Load(st.Task)
	if err != nil {
		return nil, err
	}
	d := &reviewData{Dir: dir, State: st, Task: t, Spec: t.Spec()}
	var preds map[string][]string
	b, err := os.ReadFile(filepath.Join(dir, "final", "predictions.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("run %s has no test predictions yet (phase %s)", st.ID, st.Phase)
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &preds); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "final", "predictions.json"), err)
	}
	images := map[string][]string{}
	if ds, err := run.Cases(dir); err == nil {
		for _, c := range append(ds.Train, ds.Test...) {
			images[c.ID] = c.Images
		}
	}
	decided, err := run.Decisions(dir)
	if err != nil {
		return nil, err
	}
	byCase := map[string]export.Decision{}
	for _, x := range decided {
		byCase[x.Case] = x
	}
	sure := map[string]float64{}
	if err := fileio.ReadJSON(filepath.Join(dir, "final", run.FileConfidence), &sure); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for id, files := range preds {
		c := &reviewCase{ID: id, Images: images[id], Dice: math.NaN(), Confidence: math.NaN()}
		if v, ok := sure[id]; ok {
			c.Confidence = v
		}
		if len(files) > 0 {
			c.Pred, c.Labels = files[0], files[0]
		}
		if _, err := os.Stat(filepath.Join(dir, "final", "dicom", id+".dcm")); err == nil && t.Kind == taskspec.Segmentation {
			// What goes back to PACS is the DICOM SEG: review that (a structured report
			// is reviewed as the prediction it states).
			c.Pred = filepath.Join(dir, "final", "dicom", id+".dcm")
		}
		if x, ok := byCase[id]; ok {
			c.Decision, c.Note = x.Decision, x.Note
		}
		d.Test = append(d.Test, c)
	}
	sort.Slice(d.Test, func(i, j int) bool { return d.Test[i].ID < d.Test[j].ID })
	if st.Chosen != "" {
		var labels map[string]string
		if b, err := os.ReadFile(filepath.Join(dir, "labels.json")); err == nil {
			_ = json.Unmarshal(b, &labels)
		}
		val := filepath.Join(dir, "lanes", st.Chosen, fmt.Sprintf("f%d", st.ChosenFold), "val")
		ents, _ := os.ReadDir(val)
		for _, e := range ents {
			if e.IsDir() {
				continue
			}
			id := strings.TrimSuffix(e.Name(), task.Suffix(e.Name()))
			if labels[id] == "" {
				continue
			}
			d.Validation = append(d.Validation, &reviewCase{ID: id, Images: images[id], Pred: filepath.Join(val, e.Name()),
				Truth: labels[id], Validation: true, Dice: math.NaN()})
		}
	}
	return d, nil
}

// Reviewed counts the test cases with a decision.
func (d *reviewData) Reviewed() int {
	n := 0
	for _, c := range d.Test {
		if c.Decision != "" {
			n++
		}
	}
	return n
}

// dice is the Dice of a prediction against its truth as the run validated it: the mean
// Dice over the labels under the rule of the task's grader (metrics.MeanDice).
func dice(pred, truth *volume.Volume, rule metrics.DiceRule) (float64, error) {
	if pred.NumVoxels() != truth.NumVoxels() {
		return 0, fmt.Errorf("prediction has %d voxels, truth %d", pred.NumVoxels(), truth.NumVoxels())
	}
	p, t := make([]int64, pred.NumVoxels()), make([]int64, truth.NumVoxels())
	for i := range p {
		p[i], t[i] = int64(pred.AtIndex(i*pred.Dims[3])), int64(truth.AtIndex(i*truth.Dims[3]))
	}
	lo, err := metrics.CountLabels(t, p)
	if err != nil {
		return 0, err
	}
	return metrics.MeanDice(lo, rule), nil
}

// Review filters.
const (
	filterAll        = "All test cases"
	filterUnreviewed = "Unreviewed"
	filterRejected   = "Rejected"
	filterLeastSure  = "Least confident first"
	filterWorstDice  = "Validation: worst Dice first"
)

// reviewScreen lists a run's cases and shows each prediction over its image; test cases
// are approved or rejected with a comment.
type reviewScreen struct {
	a        *App
	obj      fyne.CanvasObject
	data     *reviewData
	shown    []*reviewCase
	current  *reviewCase
	title    *widget.Label
	info     *widget.Label
	list     *widget.List
	filter   *widget.Select
	plane    *widget.Select
	mode     *widget.RadioGroup
	thr      *widget.Slider
	note     *widget.Entry
	approve  *widget.Button
	reject   *widget.Button
	holder   *fyne.Container
	view     *vwidget.CompareView
	corr     *corrector
	measures *measureBar
	loadedID string
}

var modeNames = []string{"Prediction", "Truth", "Side by side", "Difference"}

func newReviewScreen(a *App) *reviewScreen {
	s := &reviewScreen{a: a, title: widget.NewLabelWithStyle("No run", fyne.TextAlignLeading, fyne.TextStyle{Bold: true}),
		info: widget.NewLabel("Open a finished run from Home."), holder: container.NewStack()}
	s.info.Wrapping = fyne.TextWrapWord
	s.list = rowList(&s.shown, "case id long enough", s.open)
	s.filter = widget.NewSelect([]string{filterAll, filterUnreviewed, filterLeastSure, filterRejected, filterWorstDice}, func(string) { s.applyFilter() })
	s.filter.SetSelected(filterAll)
	s.plane = widget.NewSelect([]string{"axial", "coronal", "sagittal"}, func(string) {
		if s.current != nil {
			c := s.current
			s.corr.keep() // the correction under way goes on on the new plane
			s.current, s.loadedID = nil, ""
			s.open(c)
		}
	})
	s.plane.SetSelected("axial")
	s.mode = widget.NewRadioGroup(modeNames, func(m string) {
		if s.view != nil {
			for i, n := range modeNames {
				if n == m {
					s.view.SetMode(vwidget.CompareMode(i))
				}
			}
		}
	})
	s.mode.Horizontal = true
	s.mode.SetSelected(modeNames[0])
	s.thr = widget.NewSlider(0, 1)
	s.thr.Step = 0.05
	s.thr.OnChanged = func(v float64) {
		if s.view != nil {
			s.view.SetScoreThreshold(v)
		}
	}
	var decisions fyne.CanvasObject
	s.note, s.approve, s.reject, decisions = decisionRow(s.decide)
	s.corr = newCorrector(s.saveCorrection, s.info.SetText)
	s.measures = newMeasureBar(a, s.corr, run.Measurements, run.SaveMeasurements)
	left := container.NewBorder(s.filter, nil, nil, nil, s.list)
	controls := container.NewVBox(
		container.NewHBox(widget.NewLabel("Plane"), s.plane, s.mode),
		container.NewBorder(nil, nil, widget.NewLabel("Score threshold"), nil, s.thr),
		s.corr.obj,
		decisions,
		s.info)
	view := container.NewHSplit(s.holder, s.measures.side)
	view.Offset = 0.78
	right := container.NewBorder(nil, controls, nil, nil, view)
	split := container.NewHSplit(left, right)
	split.Offset = 0.25
	s.obj = container.NewBorder(s.title, nil, nil, nil, split)
	return s
}

// load reads the run's cases off the UI goroutine.
func (s *reviewScreen) load(dir string) {
	if dir == "" {
		return
	}
	go func() {
		d, err := loadReview(dir)
		s.a.do(func() {
			if err != nil {
				s.title.SetText(errText(err))
				s.data, s.shown = nil, nil
				s.list.Refresh()
				return
			}
			s.data = d
			s.title.SetText(fmt.Sprintf("Review run %s: %d of %d test cases reviewed", d.State.ID, d.Reviewed(), len(d.Test)))
			s.applyFilter()
		})
	}()
}

// applyFilter lists the cases the filter selects (UI goroutine); the worst-Dice filter
// computes the Dice of every validation case first, off the UI goroutine.
func (s *reviewScreen) applyFilter() {
	d := s.data
	if d == nil || s.list == nil {
		return
	}
	var out []*reviewCase
	switch s.filter.Selected {
	case filterWorstDice:
		if d.Task.Kind != taskspec.Segmentation || len(d.Validation) == 0 {
			s.info.SetText("Worst Dice needs the chosen lane's validation predictions of a segmentation task.")
			break
		}
		if math.IsNaN(d.Validation[0].Dice) {
			s.info.SetText("Scoring the validation cases…")
			cases := d.Validation
			rule := metrics.DiceRuleOf(d.Spec.Challenge)
			go func() {
				scores := make([]float64, len(cases))
				for i, c := range cases {
					scores[i] = caseDice(c, rule)
				}
				s.a.do(func() {
					for i, c := range cases {
						c.Dice = scores[i]
					}
					s.info.SetText(fmt.Sprintf("%d validation cases of lane %s, worst Dice first.", len(cases), d.State.Chosen))
					s.applyFilter()
				})
			}()
			break
		}
		out = append(out, d.Validation...)
		sort.SliceStable(out, func(i, j int) bool { return out[i].Dice < out[j].Dice })
	case filterLeastSure:
		// The least sure first, as active learning picks what to label next; the cases
		// without a confidence last, by id.
		out = append(out, d.Test...)
		sort.SliceStable(out, func(i, j int) bool {
			a, b := out[i].Confidence, out[j].Confidence
			return !math.IsNaN(a) && (math.IsNaN(b) || a < b)
		})
	default:
		for _, c := range d.Test {
			switch s.filter.Selected {
			case filterUnreviewed:
				if c.Decision != "" {
					continue
				}
			case filterRejected:
				if c.Decision != run.Rejected {
					continue
				}
			}
			out = append(out, c)
		}
	}
	s.shown = out
	s.list.UnselectAll()
	s.list.Refresh()
}

// caseDice reads a validation case's prediction and truth and scores them under rule; +Inf
// when they cannot be read, so that the worst-first order sorts them last.
func caseDice(c *reviewCase, rule metrics.DiceRule) float64 {
	p, err := imageio.Read(c.Pred)
	if err != nil {
		return math.Inf(1)
	}
	t, err := imageio.Read(c.Truth)
	if err != nil {
		return math.Inf(1)
	}
	d, err := dice(p, t, rule)
	if err != nil {
		return math.Inf(1)
	}
	return d
}

// caseView is what the viewer shows of a case.
type caseView struct {
	Image       *volume.Volume
	Pred, Truth *volume.Volume
	PredMarks   []vwidget.Mark
	TruthMarks  []vwidget.Mark
	Text        string // classes, score or other notes
}

// loadCase reads a case's image, prediction and truth as the task's kind needs.
func loadCase(c *reviewCase, spec *taskspec.Spec) (*caseView, error) {
	if len(c.Images) == 0 {
		return nil, fmt.Errorf("case %s: its image is not in the run's data folder", c.ID)
	}
	img, err := imageio.Read(c.Images[0])
	if err != nil {
		return nil, err
	}
	cv := &caseView{Image: img}
	read := func(path string, truth bool) (*volume.Volume, []vwidget.Mark, string, error) {
		if path == "" {
			return nil, nil, "", nil
		}
		switch spec.Kind {
		case taskspec.Segmentation:
			v, err := imageio.ReadLabels(path, img)
			return v, nil, "", err
		case taskspec.Enhancement:
			return nil, nil, "the prediction is an image: " + path, nil
		}
		a, err := taskspec.ReadAnnotation(path, nil)
		if err != nil {
			return nil, nil, "", err
		}
		return nil, marksOf(a, spec, truth), annotationText(a, spec), nil
	}
	var pt, tt string
	if cv.Pred, cv.PredMarks, pt, err = read(c.Pred, false); err != nil {
		return nil, err
	}
	if cv.Truth, cv.TruthMarks, tt, err = read(c.Truth, true); err != nil {
		return nil, err
	}
	cv.Text = strings.TrimSpace("Prediction: " + pt)
	if tt != "" {
		cv.Text += "\nTruth: " + tt
	}
	return cv, nil
}

// annotationText names an annotation's classes and score.
func annotationText(a *taskspec.Annotation, spec *taskspec.Spec) string {
	var parts []string
	for _, at := range spec.Attributes {
		if k, ok := a.Classes[at.Name]; ok && k >= 0 && k < len(at.Classes) {
			parts = append(parts, at.Name+" "+at.Classes[k])
		}
	}
	if a.Score != nil {
		parts = append(parts, fmt.Sprintf("score %.3g", *a.Score))
	}
	if n := len(a.Boxes); n > 0 {
		parts = append(parts, fmt.Sprintf("%d boxes", n))
	}
	if n := len(a.Points); n > 0 {
		parts = append(parts, fmt.Sprintf("%d points", n))
	}
	return strings.Join(parts, ", ")
}

// open shows case c (UI goroutine); the files are read off it.
func (s *reviewScreen) open(c *reviewCase) {
	if s.data == nil || (s.current == c && s.loadedID == c.ID) {
		return
	}
	s.current = c
	s.corr.attach(nil, "", "", nil, nil)
	s.note.SetText(c.Note)
	if c.Validation {
		s.approve.Disable()
		s.reject.Disable()
	} else {
		s.approve.Enable()
		s.reject.Enable()
	}
	s.info.SetText("Loading " + c.ID + "…")
	spec := s.data.Spec
	plane := map[string]vwidget.Plane{"axial": vwidget.Axial, "coronal": vwidget.Coronal, "sagittal": vwidget.Sagittal}[s.plane.Selected]
	go func() {
		cv, err := loadCase(c, spec)
		s.a.do(func() {
			if s.current != c {
				return
			}
			if err == nil {
				err = s.showCase(cv, plane)
			}
			if err != nil {
				s.info.SetText(errText(err))
				return
			}
			s.loadedID = c.ID
			what := "test case " + c.ID
			if c.Validation {
				what = "validation case " + c.ID
			}
			s.info.SetText(strings.TrimSpace(what + ". " + cv.Text))
		})
	}()
}

func (s *reviewScreen) showCase(cv *caseView, plane vwidget.Plane) error {
	if cv.Image.Dims[2] == 1 {
		plane = vwidget.Axial
	}
	v := vwidget.NewCompareView(plane)
	v.UseBridge(s.a.ui)
	if err := v.SetVolume(cv.Image); err != nil {
		return err
	}
	if err := v.SetTruth(cv.Truth, cv.TruthMarks); err != nil {
		return err
	}
	if err := v.SetPrediction(cv.Pred, cv.PredMarks); err != nil {
		return err
	}
	v.SetScoreThreshold(s.thr.Value)
	v.OnMode = func(m vwidget.CompareMode) { s.mode.SetSelected(modeNames[m]) }
	hasTruth := cv.Truth != nil || cv.TruthMarks != nil
	if hasTruth {
		s.mode.Enable()
	} else {
		s.mode.SetSelected(modeNames[0])
		s.mode.Disable()
	}
	for i, n := range modeNames {
		if n == s.mode.Selected {
			v.SetMode(vwidget.CompareMode(i))
		}
	}
	s.view = v
	s.holder.Objects = []fyne.CanvasObject{v}
	s.holder.Refresh()
	if c := s.current; c != nil && !c.Validation {
		switch s.data.Spec.Kind {
		case taskspec.Segmentation:
			s.corr.attach(v, c.ID, c.Labels, cv.Image, s.data.Spec.Labels)
		case taskspec.Detection:
			s.corr.attachBoxes(v, c.ID, c.Labels, s.data.Spec)
		}
	}
	if c := s.current; c != nil {
		s.measures.attach(v, s.data.Dir, c.ID, cv.Image, !c.Validation)
	}
	return nil
}

// saveCorrection keeps the current test case's correction beside its prediction and
// records the decision corrected in the run's audit log, off the UI goroutine.
func (s *reviewScreen) saveCorrection() {
	c, d, save := s.current, s.data, s.corr.saver()
	if c == nil || d == nil || c.Validation || save == nil {
		return
	}
	d2 := export.Decision{Case: c.ID, Decision: export.Corrected, Note: s.note.Text, Reviewer: reviewer()}
	s.corr.save.Disable()
	go func() {
		rel, err := save(d.Dir)
		if err == nil {
			d2.Correction = rel
			err = run.Review(d.Dir, d2)
		}
		s.a.do(func() {
			if err != nil {
				s.corr.save.Enable()
				s.info.SetText(errText(err))
				return
			}
			s.recorded(c, d2)
		})
	}()
}

// decide records a decision on the current test case off the UI goroutine.
func (s *reviewScreen) decide(decision string) {
	c, d := s.current, s.data
	if c == nil || d == nil || c.Validation {
		return
	}
	x := export.Decision{Case: c.ID, Decision: decision, Note: s.note.Text, Reviewer: reviewer()}
	s.approve.Disable()
	s.reject.Disable()
	go func() {
		err := run.Review(d.Dir, x)
		s.a.do(func() {
			s.approve.Enable()
			s.reject.Enable()
			if err != nil {
				s.info.SetText(errText(err))
				return
			}
			s.recorded(c, x)
		})
	}()
}

// recorded shows decision x on case c, made, and moves on to the next case without one.
func (s *reviewScreen) recorded(c *reviewCase, x export.Decision) {
	d := s.data
	c.Decision, c.Note = x.Decision, x.Note
	s.title.SetText(fmt.Sprintf("Review run %s: %d of %d test cases reviewed", d.State.ID, d.Reviewed(), len(d.Test)))
	s.info.SetText(fmt.Sprintf("%s: %s.", c.ID, x.Decision))
	s.list.Refresh()
	s.next()
}

// reviewer is who decides: the user's login name.
func reviewer() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}

// next selects the next test case without a decision, if any.
func (s *reviewScreen) next() {
	for i, c := range s.shown {
		if !c.Validation && c.Decision == "" {
			s.list.Select(i)
			return
		}
	}
}
