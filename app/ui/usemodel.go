package ui

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"amid/assets/fileio"
	"amid/host/dicomweb"
	"amid/host/export"
	"amid/host/predict"
	"amid/host/run"
	"amid/plugins/taskspec"
	vwidget "amid/viewer/widget"
)

// packageRow is one model package AMID knows: a run's own package, or one exported or
// used before.
type packageRow struct {
	Dir, Task, Lane string
	Created         time.Time
	Problem         string // why the package cannot be read
}

func (p packageRow) String() string {
	if p.Problem != "" {
		return fmt.Sprintf("%s — %s", p.Dir, p.Problem)
	}
	return fmt.Sprintf("%s — %s — %s — %s", filepath.Base(p.Dir), p.Task, p.Lane, p.Created.Local().Format("2006-01-02 15:04"))
}

// listPackages returns the packages of the runs in runs (RUN/package) and the recent
// ones (folders or zips exported or used before), newest first, each once. A recent
// package that is gone is left out; one that cannot be read says why.
func listPackages(runs string, recent []string) []packageRow {
	paths := map[string]bool{}
	if ents, err := os.ReadDir(runs); err == nil {
		for _, e := range ents {
			dir := filepath.Join(runs, e.Name(), "package")
			if _, err := os.Stat(filepath.Join(dir, export.FileManifest)); err == nil {
				paths[dir] = true
			}
		}
	}
	for _, p := range recent {
		if _, err := os.Stat(p); err == nil {
			paths[p] = true
		}
	}
	var rows []packageRow
	for p := range paths {
		r := packageRow{Dir: p}
		if pk, err := predict.Open(p); err != nil {
			if strings.HasSuffix(p, ".zip") {
				r.Task = "a package's zip (read when used)"
			} else {
				r.Problem = errText(err)
			}
		} else {
			r.Task, r.Lane, r.Created = pk.Task.Title, pk.Manifest.Lane, pk.Manifest.Created
			if r.Task == "" {
				r.Task = pk.Task.ID
			}
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		if !rows[i].Created.Equal(rows[j].Created) {
			return rows[i].Created.After(rows[j].Created)
		}
		return rows[i].Dir < rows[j].Dir
	})
	return rows
}

// useCase is one case of a predict run on the Use a model screen.
type useCase struct {
	predict.CaseResult
	Decision string
}

func (c *useCase) String() string {
	mark := "· "
	switch c.Decision {
	case export.Approved:
		mark = "✓ "
	case export.Corrected:
		mark = "✎ "
	case export.Rejected:
		mark = "✗ "
	}
	s := mark + c.ID
	switch {
	case len(c.Predictions) == 0:
		return s + "  failed"
	case c.Confidence != nil:
		s += fmt.Sprintf("  confidence %.3f", *c.Confidence)
	}
	if len(c.Warnings) > 0 {
		s += "  ⚠"
	}
	return s
}

// useScreen is "Use a model": a model package, the new patients' images (files, folders
// or PACS studies), a predict run (amid/host/predict.Apply) with its progress, then each
// result in the viewer over its image, the least sure first, with its volumes and
// warnings. The reader's decisions go into the predict run's own audit log
// (predict.Review).
type useScreen struct {
	a    *App
	obj  fyne.CanvasObject
	pkgs []packageRow
	pkg  *widget.Select
	// inputs are the files and folders to predict.
	inputs     []string
	inputsText *widget.Label
	studies    *widget.Entry
	out        *widget.Entry
	probs      *widget.Check // ask a segmentation for its probability maps
	button     *widget.Button
	bar        *widget.ProgressBar
	status     *widget.Label
	card       *widget.Label

	// The predict run shown: its folder, package, task and cases in review order.
	dir     string
	pkgOf   string
	spec    *taskspec.Spec
	cases   []*useCase
	volumes map[string][]string // per case, its lines of volumes.csv
	list    *widget.List
	current *useCase
	holder  *fyne.Container
	info    *widget.Label
	note    *widget.Entry
	approve *widget.Button
	reject  *widget.Button
	corr    *corrector
	// measures are the measuring tools (reviewmeasure.go).
	measures *measureBar
}

func newUseScreen(a *App) *useScreen {
	s := &useScreen{a: a, inputsText: widget.NewLabel("No inputs."), studies: widget.NewEntry(), out: widget.NewEntry(),
		bar: widget.NewProgressBar(), status: widget.NewLabel(""), card: widget.NewLabel(""), holder: container.NewStack(),
		info: widget.NewLabel("Choose a package and the images of new patients, then Predict.")}
	for _, l := range []*widget.Label{s.inputsText, s.status, s.card, s.info} {
		l.Wrapping = fyne.TextWrapWord
	}
	s.card.Hide() // until a package's card is read
	s.pkg = widget.NewSelect(nil, nil)
	s.pkg.PlaceHolder = "a model package"
	choosePkg := widget.NewButton("Package…", func() {
		dialog.ShowFolderOpen(func(u fyne.ListableURI, err error) {
			if err == nil && u != nil {
				s.addPackage(u.Path())
			}
		}, a.W)
	})
	addFile := widget.NewButton("Add files…", func() {
		dialog.ShowFileOpen(func(r fyne.URIReadCloser, err error) {
			if err == nil && r != nil {
				r.Close()
				s.addInput(r.URI().Path())
			}
		}, a.W)
	})
	addFolder := widget.NewButton("Add folder…", func() {
		dialog.ShowFolderOpen(func(u fyne.ListableURI, err error) {
			if err == nil && u != nil {
				s.addInput(u.Path())
			}
		}, a.W)
	})
	improve := widget.NewButton("Improve…", s.improve)
	clearInputs := widget.NewButton("Clear", func() { s.inputs = nil; s.showInputs() })
	s.studies.SetPlaceHolder("Study Instance UIDs, comma-separated (the PACS of the Settings)")
	s.out.SetPlaceHolder("the folder the results go to (new or empty)")
	s.probs = widget.NewCheck("Probability maps too (segmentation)", nil)
	s.button = widget.NewButton("Predict", s.predict)
	s.button.Importance = widget.HighImportance
	form := widget.NewForm(
		widget.NewFormItem("Package", container.NewBorder(nil, nil, nil, container.NewHBox(choosePkg, improve), s.pkg)),
		widget.NewFormItem("Inputs", container.NewBorder(nil, nil, nil, container.NewHBox(addFile, addFolder, clearInputs), s.inputsText)),
		widget.NewFormItem("PACS studies", s.studies),
		widget.NewFormItem("", s.probs),
		widget.NewFormItem("Results to", container.NewBorder(nil, nil, nil, s.button, s.out)),
	)
	s.list = rowList(&s.cases, "case id long enough  confidence 0.000", s.open)
	var decisions fyne.CanvasObject
	s.note, s.approve, s.reject, decisions = decisionRow(s.decide)
	s.corr = newCorrector(s.saveCorrection, s.info.SetText)
	s.measures = newMeasureBar(a, s.corr, predict.Measurements, predict.SaveMeasurements)
	view := container.NewHSplit(s.holder, s.measures.side)
	view.Offset = 0.78
	right := container.NewBorder(nil, container.NewVBox(s.corr.obj, decisions, s.info), nil, nil, view)
	split := container.NewHSplit(s.list, right)
	split.Offset = 0.25
	top := container.NewVBox(form, container.NewBorder(nil, nil, container.NewGridWrap(fyne.NewSize(160, 36), s.bar), nil, s.status), s.card)
	s.obj = container.NewBorder(top, nil, nil, nil, split)
	return s
}

// refresh lists the known packages again, off the UI goroutine.
func (s *useScreen) refresh() {
	recent := s.a.A.Preferences().StringList(prefRecentPkgs)
	go func() {
		dir, _ := s.a.runsDir()
		rows := listPackages(dir, recent)
		s.a.do(func() { s.showPackages(rows) })
	}()
}

func (s *useScreen) showPackages(rows []packageRow) {
	s.pkgs = rows
	var opts []string
	for _, r := range rows {
		if r.Problem == "" {
			opts = append(opts, r.Dir)
		}
	}
	sel := s.pkg.Selected
	s.pkg.Options = opts
	s.pkg.Refresh()
	if sel != "" {
		s.pkg.SetSelected(sel)
	}
}

// usePackage shows the screen with the package at path chosen (UI goroutine).
func (s *useScreen) usePackage(path string) {
	s.addPackage(path)
	s.a.tabs.SelectIndex(tabUse)
}

// addPackage offers the package at path and chooses it (UI goroutine).
func (s *useScreen) addPackage(path string) {
	if !contains(s.pkg.Options, path) {
		s.pkg.Options = append([]string{path}, s.pkg.Options...)
	}
	s.pkg.SetSelected(path)
}

// addInput adds a file or folder to predict (UI goroutine).
func (s *useScreen) addInput(path string) {
	if !contains(s.inputs, path) {
		s.inputs = append(s.inputs, path)
	}
	s.showInputs()
}

func (s *useScreen) showInputs() {
	if len(s.inputs) == 0 {
		s.inputsText.SetText("No inputs.")
		return
	}
	s.inputsText.SetText(strings.Join(s.inputs, "\n"))
}

// predict runs the chosen package on the inputs and the PACS studies, off the UI
// goroutine; the progress bar follows the cases.
func (s *useScreen) predict() {
	pkg, out := s.pkg.Selected, strings.TrimSpace(s.out.Text)
	inputs := append([]string(nil), s.inputs...)
	probs := s.probs.Checked
	var studies []string
	for _, u := range strings.Split(s.studies.Text, ",") {
		if u = strings.TrimSpace(u); u != "" {
			studies = append(studies, u)
		}
	}
	switch {
	case pkg == "":
		s.status.SetText("Choose a model package.")
		return
	case len(inputs)+len(studies) == 0:
		s.status.SetText("Add the images to predict, or PACS studies.")
		return
	case out == "":
		s.status.SetText("Give the folder the results go to.")
		return
	}
	pacs := s.a.pacs()
	if len(studies) > 0 && pacs.URL == "" {
		s.status.SetText("PACS studies need a PACS: set its address in Settings.")
		return
	}
	s.button.Disable()
	s.bar.SetValue(0)
	s.card.SetText("")
	s.card.Hide()
	s.status.SetText("Checking the package…")
	go func() {
		res, err := s.run(pkg, inputs, studies, out, probs)
		s.a.do(func() {
			s.button.Enable()
			if err != nil {
				s.status.SetText("Predict failed: " + errText(err))
				return
			}
			remember(s.a.A.Preferences(), prefRecentPkgs, pkg)
			s.status.SetText(fmt.Sprintf("%d of %d cases predicted into %s (%s lane, %s); the least sure first below. Audit log: %s",
				len(res.Cases)-res.Failed, len(res.Cases), out, res.Lane, res.Compute, filepath.Join(out, predict.FileAudit)))
			s.load(out)
		})
	}()
}

// run is predict's work: the PACS studies retrieved first, then predict.Apply, whose
// progress and model card reach the screen.
func (s *useScreen) run(pkg string, inputs, studies []string, out string, probs bool) (*predict.Result, error) {
	ctx := context.Background()
	env, err := s.a.env()
	if err != nil {
		return nil, err
	}
	o := predict.Options{Supervisor: env.Supervisor, Version: run.Version, Probabilities: probs,
		Progress: func(k, n int, c predict.CaseResult) {
			s.a.do(func() {
				s.bar.SetValue(float64(k) / float64(n))
				s.status.SetText(fmt.Sprintf("%d of %d: %s", k, n, c.ID))
			})
		},
		Card: func(c *export.Card) {
			text := "The package has no model card (made by an older AMID)."
			if c != nil {
				text = "Intended use: " + c.IntendedUse
				for _, l := range c.Limitations {
					text += "\nLimit: " + l
				}
			}
			s.a.do(func() {
				s.card.SetText(text)
				s.card.Show()
			})
		}}
	if len(studies) > 0 {
		pacs := s.a.pacs()
		c := &dicomweb.Client{URL: pacs.URL, User: pacs.User, Password: pacs.Password}
		tmp, err := os.MkdirTemp("", "amid-pacs-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		s.a.do(func() { s.status.SetText(fmt.Sprintf("Retrieving %d studies from %s…", len(studies), pacs)) })
		got, err := predict.Retrieve(ctx, c, studies, tmp)
		if err != nil {
			return nil, err
		}
		inputs, o.Send = append(inputs, got...), c
	}
	return predict.Apply(ctx, pkg, inputs, out, o)
}

// load reads the predict run in dir (results, volumes, decisions) off the UI goroutine
// and lists its cases, the least sure first, the failed last.
func (s *useScreen) load(dir string) {
	go func() {
		cases, spec, vols, pkg, err := readPredictRun(dir)
		s.a.do(func() {
			if err != nil {
				s.info.SetText(errText(err))
				return
			}
			s.dir, s.pkgOf, s.spec, s.cases, s.volumes, s.current = dir, pkg, spec, cases, vols, nil
			s.list.UnselectAll()
			s.list.Refresh()
			if len(cases) > 0 && len(cases[0].Predictions) > 0 {
				s.list.Select(0)
			}
		})
	}()
}

// readPredictRun reads what Apply wrote in dir: its cases in review order (then the
// failed ones), the task's spec, each case's volumes.csv lines, and the decisions made,
// and names the package.
func readPredictRun(dir string) ([]*useCase, *taskspec.Spec, map[string][]string, string, error) {
	var res predict.Result
	if err := fileio.ReadJSON(filepath.Join(dir, predict.FileResults), &res); err != nil {
		return nil, nil, nil, "", err
	}
	t, err := predict.PackageTask(res.Package)
	if err != nil {
		return nil, nil, nil, "", fmt.Errorf("the package %s of %s: %w", res.Package, dir, err)
	}
	decided, err := predict.Decisions(dir)
	if err != nil {
		return nil, nil, nil, "", err
	}
	byID := map[string]*useCase{}
	for _, c := range res.Cases {
		byID[c.ID] = &useCase{CaseResult: c}
	}
	for _, d := range decided {
		if c := byID[d.Case]; c != nil {
			c.Decision = d.Decision
		}
	}
	var cases []*useCase
	for _, id := range res.ReviewOrder {
		if c := byID[id]; c != nil {
			cases = append(cases, c)
			delete(byID, id)
		}
	}
	for _, c := range res.Cases {
		if byID[c.ID] != nil {
			cases = append(cases, byID[c.ID])
		}
	}
	vols := map[string][]string{}
	if f, err := os.Open(filepath.Join(dir, predict.FileVolumes)); err == nil {
		rows, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil {
			return nil, nil, nil, "", fmt.Errorf("%s: %w", filepath.Join(dir, predict.FileVolumes), err)
		}
		unit := "mL"
		if len(rows) > 0 && len(rows[0]) == 5 && rows[0][4] == "area_mm2" {
			unit = "mm²"
		}
		for i, r := range rows {
			if i == 0 || len(r) < 5 {
				continue // the header
			}
			vols[r[0]] = append(vols[r[0]], fmt.Sprintf("%s (label %s): %s voxels, %s %s", r[2], r[1], r[3], r[4], unit))
		}
	}
	return cases, t.Spec(), vols, res.Package, nil
}

// open shows case c over its image (UI goroutine); the files are read off it.
func (s *useScreen) open(c *useCase) {
	s.current = c
	s.corr.attach(nil, "", "", nil, nil)
	s.note.SetText("")
	if len(c.Predictions) == 0 {
		s.approve.Disable()
		s.reject.Disable()
		s.info.SetText(c.ID + " failed: " + c.Error)
		s.measures.attach(nil, "", "", nil, false)
		return
	}
	s.approve.Enable()
	s.reject.Enable()
	s.info.SetText("Loading " + c.ID + "…")
	rc := &reviewCase{ID: c.ID, Images: c.Inputs, Pred: filepath.Join(s.dir, c.Predictions[0])}
	if c.SEG != "" {
		rc.Pred = filepath.Join(s.dir, c.SEG)
	}
	spec, vols, pkg := s.spec, s.volumes[c.ID], s.pkgOf
	go func() {
		// The image the model read: a DICOM study's chosen series alone.
		tmp, err := os.MkdirTemp("", "amid-case-")
		var cv *caseView
		if err == nil {
			defer os.RemoveAll(tmp)
			if rc.Images, err = predict.CaseImages(pkg, c.Inputs, tmp); err == nil {
				cv, err = loadCase(rc, spec)
			}
		}
		s.a.do(func() {
			if s.current != c {
				return
			}
			if err != nil {
				s.info.SetText(errText(err))
				return
			}
			v := vwidget.NewCompareView(vwidget.Axial)
			v.UseBridge(s.a.ui)
			if err := v.SetVolume(cv.Image); err != nil {
				s.info.SetText(errText(err))
				return
			}
			if err := v.SetPrediction(cv.Pred, cv.PredMarks); err != nil {
				s.info.SetText(errText(err))
				return
			}
			s.holder.Objects = []fyne.CanvasObject{v}
			s.holder.Refresh()
			switch spec.Kind {
			case taskspec.Segmentation:
				s.corr.attach(v, c.ID, filepath.Join(s.dir, c.Predictions[0]), cv.Image, spec.Labels)
			case taskspec.Detection:
				s.corr.attachBoxes(v, c.ID, filepath.Join(s.dir, c.Predictions[0]), spec)
			}
			s.measures.attach(v, s.dir, c.ID, cv.Image, true)
			s.info.SetText(caseText(c, cv.Text, vols))
		})
	}()
}

// caseText is what the screen says of a predicted case: its confidence, what the
// prediction holds, its volumes, its warnings and any error (the PACS send's).
func caseText(c *useCase, pred string, vols []string) string {
	lines := []string{c.ID}
	if c.Confidence != nil {
		lines[0] += fmt.Sprintf(", confidence %.3f", *c.Confidence)
	}
	if c.Sent {
		lines[0] += ", stored in the PACS"
	}
	if pred = strings.TrimSpace(strings.TrimPrefix(pred, "Prediction:")); pred != "" {
		lines = append(lines, pred)
	}
	lines = append(lines, vols...)
	if c.Probabilities != "" {
		lines = append(lines, "Probability map: "+c.Probabilities)
	}
	for _, w := range c.Warnings {
		lines = append(lines, "Warning: "+w)
	}
	if c.Error != "" {
		lines = append(lines, "Error: "+c.Error)
	}
	return strings.Join(lines, "\n")
}

// decide records a decision on the current case in the predict run's audit log, off the
// UI goroutine.
func (s *useScreen) decide(decision string) {
	c, dir := s.current, s.dir
	if c == nil || dir == "" {
		return
	}
	x := export.Decision{Case: c.ID, Decision: decision, Note: s.note.Text, Reviewer: reviewer()}
	s.approve.Disable()
	s.reject.Disable()
	go func() {
		err := predict.Review(dir, x)
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

// saveCorrection keeps the current case's correction beside its prediction (with its
// DICOM SEG for DICOM input) and records the decision corrected in the predict run's
// audit log, off the UI goroutine.
func (s *useScreen) saveCorrection() {
	c, dir, save := s.current, s.dir, s.corr.saver()
	if c == nil || dir == "" || save == nil {
		return
	}
	x := export.Decision{Case: c.ID, Decision: export.Corrected, Note: s.note.Text, Reviewer: reviewer()}
	s.corr.save.Disable()
	go func() {
		rel, err := save(dir)
		if err == nil {
			x.Correction = rel
			err = predict.Review(dir, x)
		}
		s.a.do(func() {
			if err != nil {
				s.corr.save.Enable()
				s.info.SetText(errText(err))
				return
			}
			s.recorded(c, x)
		})
	}()
}

// recorded shows decision x on case c, made, and moves on to the next case without one.
func (s *useScreen) recorded(c *useCase, x export.Decision) {
	c.Decision = x.Decision
	s.list.Refresh()
	s.info.SetText(fmt.Sprintf("%s: %s (recorded in %s).", c.ID, x.Decision, filepath.Join(s.dir, predict.FileAudit)))
	for i, y := range s.cases {
		if y.Decision == "" && len(y.Predictions) > 0 {
			s.list.Select(i)
			return
		}
	}
}
