package ui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"amid/assets"
	"amid/host/planner"
	"amid/host/planner/llm"
	"amid/host/run"
	"amid/host/task"
	"amid/host/taskinit"
	"amid/plugins/taskspec"
)

func taskTitle(path string) (string, error) {
	t, err := task.Load(path)
	if err != nil {
		return "", err
	}
	if t.Title != "" {
		return t.ID + ": " + t.Title, nil
	}
	return t.ID, nil
}

// Detected is what the New task screen found at a path.
type Detected struct {
	Task    []byte // the task definition (YAML)
	Parsed  *task.Task
	Data    string // the data folder
	Builtin string // the built-in ReX-MLE task id, when recognised
	Train   int    // training cases found
	Test    int    // test cases found
	// Guessed is what was guessed from a data folder's layout (taskinit), nil for a
	// task file or a built-in task.
	Guessed *taskinit.Result
}

// Guess guesses the task of the data folder dir from its layout, as amid task init does.
func Guess(dir string, o taskinit.Options) (*Detected, error) {
	r, err := taskinit.Guess(dir, o)
	if err != nil {
		return nil, err
	}
	return &Detected{Task: r.YAML, Parsed: r.Task, Data: dir, Train: r.Train, Test: r.Test, Guessed: r}, nil
}

// Detect reads a task definition file, or recognises a prepared ReX-MLE folder: the
// built-in task whose train patterns resolve there with the most training cases.
func Detect(path string) (*Detected, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		t, err := task.Parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		d := &Detected{Task: b, Parsed: t, Data: filepath.Dir(path)}
		if ds, err := t.Resolve(d.Data); err == nil {
			d.Train, d.Test = len(ds.Train), len(ds.Test)
		}
		return d, nil
	}
	var best *Detected
	for _, id := range assets.RexMLETaskIDs() {
		b, err := assets.RexMLETask(id)
		if err != nil {
			continue
		}
		t, err := task.Parse(b)
		if err != nil {
			continue
		}
		ds, err := t.Resolve(path)
		if err != nil {
			continue
		}
		if best == nil || len(ds.Train) > best.Train {
			best = &Detected{Task: b, Parsed: t, Data: path, Builtin: id, Train: len(ds.Train), Test: len(ds.Test)}
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%s is not a prepared ReX-MLE folder: no built-in task's training files are there (choose a task file, or Guess from folder)", path)
	}
	return best, nil
}

var kindLine = regexp.MustCompile(`(?m)^kind:[ \t]*\S+`)

// withKind returns the task definition b with its kind set to kind.
func withKind(b []byte, kind string) ([]byte, error) {
	if !kindLine.Match(b) {
		return nil, fmt.Errorf("task definition has no top-level kind line to change")
	}
	out := kindLine.ReplaceAll(b, []byte("kind: "+kind))
	if _, err := task.Parse(out); err != nil {
		return nil, err
	}
	return out, nil
}

// newTaskScreen starts a run.
type newTaskScreen struct {
	a        *App
	obj      fyne.CanvasObject
	det      *Detected
	source   *widget.Entry
	builtin  *widget.Select
	data     *widget.Entry
	found    *widget.Label
	kind     *widget.Select
	budget   *widget.Entry
	out      *widget.Entry
	answers  *widget.Entry
	planner  *widget.RadioGroup
	deid     *widget.Check
	llmURL   *widget.Entry
	llmModel *widget.Entry
	llmKey   *widget.Entry
	ping     *widget.Label
	status   *widget.Label
	start    *widget.Button
	guessB   *widget.Button
	// text is the task definition a guess wrote, shown for the user to check and edit;
	// hidden until a guess fills it.
	text *widget.Entry
}

func newNewTaskScreen(a *App) *newTaskScreen {
	p := a.A.Preferences()
	s := &newTaskScreen{a: a, found: widget.NewLabel("Choose a task file, a built-in task or a prepared ReX-MLE folder, or guess the task of a data folder."),
		ping: widget.NewLabel(""), status: widget.NewLabel("")}
	s.found.Wrapping = fyne.TextWrapWord
	s.source = widget.NewEntry()
	s.source.SetPlaceHolder("task YAML file or prepared ReX-MLE folder")
	s.source.OnSubmitted = func(string) { s.detect(s.source.Text) }
	s.builtin = widget.NewSelect(assets.RexMLETaskIDs(), func(id string) { s.chooseBuiltin(id) })
	s.builtin.PlaceHolder = "built-in ReX-MLE task"
	s.data = widget.NewEntry()
	s.data.SetPlaceHolder("data folder")
	s.kind = widget.NewSelect(taskspec.Kinds, nil)
	s.budget = widget.NewEntry()
	s.budget.SetPlaceHolder("e.g. 20m (empty: the task's)")
	s.out = widget.NewEntry()
	s.out.SetPlaceHolder("run folder (empty: a new folder under the data folder's runs/)")
	s.answers = widget.NewEntry()
	s.answers.SetPlaceHolder("optional: private answers folder, to grade the submission")
	s.llmURL, s.llmModel, s.llmKey = widget.NewEntry(), widget.NewEntry(), widget.NewEntry()
	s.llmURL.SetText(p.StringWithFallback(prefLLMURL, "http://127.0.0.1:8080/v1"))
	s.llmModel.SetText(p.String(prefLLMModel))
	s.llmKey.SetText(p.StringWithFallback(prefLLMKeyEnv, "AMID_LLM_API_KEY"))
	llmBox := container.NewVBox(
		widget.NewForm(widget.NewFormItem("Base URL", s.llmURL), widget.NewFormItem("Model", s.llmModel),
			widget.NewFormItem("Key variable", s.llmKey)),
		container.NewHBox(widget.NewButton("Test connection", s.testConnection), s.ping))
	s.planner = widget.NewRadioGroup([]string{"rules", "llm"}, func(v string) {
		if v == "llm" {
			llmBox.Show()
		} else {
			llmBox.Hide()
		}
	})
	s.planner.Horizontal = true
	s.planner.SetSelected("rules")
	s.deid = widget.NewCheck("De-identify: pseudonymous case ids, PS3.15 Basic Profile on DICOM (fixed when the run starts)", nil)
	browseFile := widget.NewButton("File…", func() {
		d := dialog.NewFileOpen(func(r fyne.URIReadCloser, err error) {
			if err == nil && r != nil {
				path := r.URI().Path()
				r.Close()
				p.SetString(prefTaskFolder, filepath.Dir(path))
				s.source.SetText(path)
				s.detect(path)
			}
		}, a.W)
		d.Show()
	})
	browseDir := widget.NewButton("Folder…", func() {
		dialog.ShowFolderOpen(func(u fyne.ListableURI, err error) {
			if err == nil && u != nil {
				p.SetString(prefDataFolder, u.Path())
				s.source.SetText(u.Path())
				s.detect(u.Path())
			}
		}, a.W)
	})
	s.guessB = widget.NewButton("Guess from folder", func() {
		dir := strings.TrimSpace(s.source.Text)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			dir = strings.TrimSpace(s.data.Text)
		}
		s.guess(dir)
	})
	s.text = widget.NewMultiLineEntry()
	s.text.SetMinRowsVisible(8)
	s.text.TextStyle = fyne.TextStyle{Monospace: true}
	s.text.Hide()
	s.start = widget.NewButton("Start run", s.startRun)
	s.start.Importance = widget.HighImportance
	form := widget.NewForm(
		widget.NewFormItem("Task or folder", container.NewBorder(nil, nil, nil, container.NewHBox(browseFile, browseDir, s.guessB), s.source)),
		widget.NewFormItem("Built-in task", s.builtin),
		widget.NewFormItem("Data folder", s.data),
		widget.NewFormItem("Kind", s.kind),
		widget.NewFormItem("Budget", s.budget),
		widget.NewFormItem("Run folder", s.out),
		widget.NewFormItem("Answers", s.answers),
		widget.NewFormItem("Planner", s.planner),
		widget.NewFormItem("Privacy", s.deid),
	)
	title := widget.NewLabelWithStyle("New task", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	s.obj = container.NewVScroll(container.NewVBox(title, form, s.found, s.text, llmBox, container.NewHBox(s.start), s.status))
	return s
}

// detect examines path off the UI goroutine and fills the form.
func (s *newTaskScreen) detect(path string) {
	s.found.SetText("Examining " + path + "…")
	go func() {
		d, err := Detect(path)
		s.a.do(func() { s.detected(d, err) })
	}()
}

// guess guesses the task of data folder dir off the UI goroutine and fills the form and
// the task text with it, or says why it cannot.
func (s *newTaskScreen) guess(dir string) {
	if dir == "" {
		s.found.SetText("Choose the data folder to guess its task from.")
		return
	}
	s.found.SetText("Looking at " + dir + "…")
	s.guessB.Disable()
	go func() {
		d, err := Guess(dir, taskinit.Options{})
		s.a.do(func() {
			s.guessB.Enable()
			s.detected(d, err)
		})
	}()
}

func (s *newTaskScreen) chooseBuiltin(id string) {
	b, err := assets.RexMLETask(id)
	var d *Detected
	if err == nil {
		var t *task.Task
		if t, err = task.Parse(b); err == nil {
			d = &Detected{Task: b, Parsed: t, Builtin: id, Data: s.data.Text}
		}
	}
	s.detected(d, err)
}

func (s *newTaskScreen) detected(d *Detected, err error) {
	if err != nil {
		s.det = nil
		s.text.Hide()
		s.found.SetText(errText(err))
		return
	}
	s.det = d
	t := d.Parsed
	if g := d.Guessed; g != nil {
		s.data.SetText(d.Data)
		s.kind.SetSelected(t.Kind)
		s.text.SetText(string(d.Task))
		s.text.Show()
		s.found.SetText(fmt.Sprintf("Guessed %s: %s; %s %dD, metric %s; %d training and %d test cases. Check the task text below before a run.",
			g.What, strings.Join(g.Notes, "; "), t.Kind, t.Dims, t.Metric.Name, d.Train, d.Test))
		return
	}
	s.text.Hide()
	if d.Data != "" {
		s.data.SetText(d.Data)
	}
	s.kind.SetSelected(t.Kind)
	if t.Budget > 0 && s.budget.Text == "" {
		s.budget.SetText(time.Duration(t.Budget).String())
	}
	what := "task " + t.ID
	if d.Builtin != "" {
		what = "built-in ReX-MLE task " + d.Builtin
	}
	s.found.SetText(fmt.Sprintf("%s: %s, %s %dD, metric %s; %d training and %d test cases found.",
		what, t.Title, t.Kind, t.Dims, t.Metric.Name, d.Train, d.Test))
}

// llmConfig is the LLM endpoint from the form.
func (s *newTaskScreen) llmConfig() llm.Config {
	return llm.Config{BaseURL: strings.TrimSpace(s.llmURL.Text), Model: strings.TrimSpace(s.llmModel.Text), APIKeyEnv: strings.TrimSpace(s.llmKey.Text)}
}

func (s *newTaskScreen) testConnection() {
	cfg := s.llmConfig()
	s.ping.SetText("testing…")
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := llm.Ping(ctx, cfg)
		s.a.do(func() {
			if err != nil {
				s.ping.SetText(errText(err))
				return
			}
			s.ping.SetText(fmt.Sprintf("%s answers with model %s", cfg.BaseURL, cfg.Model))
		})
	}()
}

// startRun writes the task (with the kind chosen) into the run folder's parent and starts
// the run in the monitor.
func (s *newTaskScreen) startRun() {
	d := s.det
	if d == nil {
		s.status.SetText("Choose a task first.")
		return
	}
	def := d.Task
	if d.Guessed != nil && s.text.Text != string(d.Task) {
		// The guessed task as the user edited it.
		def = []byte(s.text.Text)
		t, err := task.Parse(def)
		if err != nil {
			s.status.SetText("The task text: " + errText(err))
			return
		}
		d = &Detected{Task: def, Parsed: t, Data: d.Data, Guessed: d.Guessed}
	}
	if k := s.kind.Selected; k != "" && k != d.Parsed.Kind {
		var err error
		if def, err = withKind(def, k); err != nil {
			s.status.SetText(errText(err))
			return
		}
	}
	var budget time.Duration
	if b := strings.TrimSpace(s.budget.Text); b != "" {
		var err error
		if budget, err = time.ParseDuration(b); err != nil || budget <= 0 {
			s.status.SetText(fmt.Sprintf("Budget %q is not a duration such as 20m.", b))
			return
		}
	}
	data := strings.TrimSpace(s.data.Text)
	if data == "" {
		s.status.SetText("Choose the data folder.")
		return
	}
	var pl planner.Planner
	spec := run.PlannerSpec{Kind: run.PlannerRules}
	if s.planner.Selected == run.PlannerLLM {
		cfg := s.llmConfig()
		spec = run.LLMSpec(cfg)
		var err error
		if pl, err = run.NewPlanner(spec, nil); err != nil {
			s.status.SetText(errText(err))
			return
		}
		p := s.a.A.Preferences()
		p.SetString(prefLLMURL, cfg.BaseURL)
		p.SetString(prefLLMModel, cfg.Model)
		p.SetString(prefLLMKeyEnv, cfg.APIKeyEnv)
	}
	out := strings.TrimSpace(s.out.Text)
	answers := strings.TrimSpace(s.answers.Text)
	deidentify := s.deid.Checked
	s.start.Disable()
	s.status.SetText("Creating the run…")
	go func() {
		r, err := s.create(def, d.Parsed.ID, data, out, answers, budget, pl, spec, deidentify)
		s.a.do(func() {
			s.start.Enable()
			if err != nil {
				s.status.SetText(errText(err))
				return
			}
			s.status.SetText("Started " + r.Dir())
			s.a.A.Preferences().SetString(prefDataFolder, data)
			s.a.startRun(r)
		})
	}()
}

// create makes the run folder with its task and returns its runner.
func (s *newTaskScreen) create(def []byte, id, data, out, answers string, budget time.Duration, pl planner.Planner, spec run.PlannerSpec, deidentify bool) (*run.Runner, error) {
	if out == "" {
		runs, err := s.a.runsDir()
		if err != nil {
			return nil, err
		}
		out = filepath.Join(runs, fmt.Sprintf("%s-%s", id, time.Now().Format("20060102-150405")))
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	tf, err := os.CreateTemp(filepath.Dir(out), "task-*.yaml")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tf.Name()) // run.New copies it into the run folder
	if _, err := tf.Write(def); err != nil {
		tf.Close()
		return nil, err
	}
	if err := tf.Close(); err != nil {
		return nil, err
	}
	env, err := s.a.env()
	if err != nil {
		return nil, err
	}
	r, err := run.New(run.Options{Task: tf.Name(), Data: data, Dir: out, Budget: budget, Planner: pl, PlannerSpec: &spec, Answers: answers, Deidentify: deidentify}, env)
	if err != nil {
		return nil, err
	}
	return r, nil
}
