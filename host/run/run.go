// Package run is AMID's autonomous loop: from a task definition and a data folder to a
// verified model package, with no human in the loop until review.
//
// A run lives in one folder:
//
//	run.json          the durable state (phase, lanes, folds trained, scores, choice)
//	run.db            the lanes and their events (amid/host/store), written by the supervisor
//	audit.db          the hash-chained audit log (amid/host/audit)
//	task.yaml         the task definition, copied
//	deid.key, cases/  a de-identified run's secret key and pseudonymous links to its cases
//	deid/             a de-identified run's copies of its cases, which its plugins read
//	labels/           canonical labels (amid/host/ingest)
//	fingerprint.json  the dataset fingerprint; contract.json the data contract
//	folds.json        the locked folds
//	plan.json         the lanes planned
//	lanes/<lane>/f<k>/   checkpoints of the lane on fold k; val/ its validation predictions
//	final/            the chosen model's test predictions (and final/dicom/, their DICOM
//	                  SEG, SR or derived series when the test images are DICOM);
//	                  submission/ the submission
//	package/          the exported model package, and package.zip
//
// The phases (prepare, plan, explore, exploit, final, verify, export) each end by saving
// run.json, so a run reopened after a crash or a SIGKILL ([Reopen], then [Runner.Run];
// `amid resume`) continues at the phase and the fold that were in flight, from the lane's
// last checkpoint. run.json records the planner ([PlannerSpec]: rules, or the LLM endpoint
// without its key); Reopen rebuilds it, so that the refinement after exploration asks the
// same planner.
//
// Scheduling (amid/host/schedule): the budget is wall-clock time over all sessions of the
// run. The plan sizes each lane to its first-round share and the minimum step count the
// recorded learning curves give. Exploration trains the lanes on fold 0 by successive
// halving from checkpoints: every lane a short first round, then the better half continues
// from its checkpoint (optimizer state, learning rate over the planned total, data order
// going on) in longer rounds, each round judged on the host's validation score of its
// checkpoint; a lane whose curve has flattened stops and gives its time back; after the
// first round the planner sees per-class scores and confusions and may add lanes. Lanes
// run side by side on the executor's places. The winner then becomes the final model by
// the plan's rule: its fold models ensembled, or the winner continued on every training
// case until the reserve, which the final prediction, verification and export take. The
// Executor (executor.go) carries the training and prediction out: [Local] on this machine.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/host/catalog"
	"amid/host/deidentify"
	"amid/host/planner"
	"amid/host/schedule"
	"amid/host/store"
	"amid/host/supervisor"
	"amid/host/task"
	"amid/plugins/protocol"
)

// Options configure a new run.
type Options struct {
	Task   string        // the task definition file
	Data   string        // the data folder; empty: the task file's folder
	Dir    string        // the run folder, created
	Budget time.Duration // 0: the task's budget, else DefaultBudget
	// Planner is the planner; nil means the rules. PlannerName is recorded.
	Planner     planner.Planner
	PlannerName string
	// PlannerSpec, when set, is recorded so that a resumed run rebuilds the same planner
	// ([Reopen]); PlannerName defaults to its name.
	PlannerSpec *PlannerSpec
	Folds       int   // cross-validation folds; 0: 5
	Finalists   int   // lanes trained on more folds; 0: 2
	Seed        int64 // 0: 42
	// Steps, when positive, trains the lanes by fixed step counts rather than by time:
	// Steps in the first round, Eta times as many in each later one (schedule.Config.Steps),
	// the lanes planned at the plugins' own sizes. Two runs with the same seed then choose
	// the same lane on any executor.
	Steps int
	// Answers is an optional folder of private answers (the ReX-MLE prepared/private
	// layout); when set the challenge's grader scores the submission.
	Answers string
	// Deidentify makes the run pseudonymous from the start (amid/host/deidentify): case ids become
	// keyed pseudonyms everywhere, and every DICOM object of the package goes through
	// PS3.15's Basic Application Level Confidentiality Profile.
	Deidentify bool
	// Final, when set, is the final model the user asks for (schedule.FinalEnsemble or
	// schedule.FinalAllData) in place of FinalRule's choice; see schedule.Forced.
	Final string
	// From, when set, is a model package (folder or zip) of the task to improve (from.go):
	// its model continues on the training cases and the corrections recorded in its audit
	// log and in the audit logs of the run and predict-run folders Corrections names.
	From        string
	Corrections []string
}

// DefaultBudget is a run's budget when neither the options nor the task give one.
const DefaultBudget = 20 * time.Minute

// Env is what a run needs from the host around it.
type Env struct {
	Catalog    *catalog.Catalog
	Supervisor supervisor.Options
	// Executor trains and predicts; nil: NewExecutor's, else the local one ([Local]) over
	// Supervisor and the run's store.
	Executor Executor
	// NewExecutor, when set, makes the executor of the run in folder dir when a session
	// starts (a cluster executor keeps its job records there); local is the run's local
	// executor, which it may use for what it does not send elsewhere.
	NewExecutor func(dir string, local *Local) (Executor, error)
	// Events, when set, receives progress for a terminal or a window.
	Events func(Event)
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
}

// Event is one thing that happened in a run.
type Event struct {
	Time     time.Time
	Phase    string
	Lane     string
	Fold     int
	Message  string
	Progress *protocol.Progress
}

// Runner executes one run.
type Runner struct {
	dir     string
	st      *State
	env     Env
	planner planner.Planner
	task    *task.Task
	data    *task.Dataset
	labels  map[string]string
	audit   *audit.Log
	store   *store.Store
	exec    Executor
	// handed is what the plugins read of the cases in a de-identified run; nil
	// otherwise, when they read the cases themselves.
	handed *deidentify.Handed
	// mu guards the state while lanes train side by side.
	mu     sync.Mutex
	began  time.Time
	spent0 time.Duration
	// resumeNote, when set, is the sentence that says why a resumed run's planner is not
	// the one recorded; Run logs and audits it.
	resumeNote string
	// postOpts are the post-processing choices each plugin offers, by plugin (read from
	// planner-input.json when the reserve first needs them: postPlugins).
	postOpts map[string]postChoices
}

// New creates a run folder and returns its runner; Run executes it.
func New(opts Options, env Env) (*Runner, error) {
	if opts.Dir == "" {
		return nil, errors.New("run: no run folder given")
	}
	if f := opts.Final; f != "" && f != schedule.FinalEnsemble && f != schedule.FinalAllData {
		return nil, fmt.Errorf("run: final model %q is not %s or %s", f, schedule.FinalEnsemble, schedule.FinalAllData)
	}
	t, err := task.Load(opts.Task)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(opts.Dir, stateFileName)); err == nil {
		return nil, fmt.Errorf("run: %s already holds a run; resume it with: amid resume %s", opts.Dir, opts.Dir)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	data := opts.Data
	if data == "" {
		data = filepath.Dir(opts.Task)
	}
	if data, err = filepath.Abs(data); err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(opts.Task)
	if err != nil {
		return nil, err
	}
	if err := fileio.Write(filepath.Join(dir, "task.yaml"), raw); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	budget := opts.Budget
	if budget <= 0 {
		budget = time.Duration(t.Budget)
	}
	if budget <= 0 {
		budget = DefaultBudget
	}
	name := opts.PlannerName
	if name == "" && opts.PlannerSpec != nil {
		name = opts.PlannerSpec.Name()
	}
	if name == "" {
		name = PlannerRules
	}
	spec := opts.PlannerSpec
	if spec == nil {
		spec = &PlannerSpec{Kind: name}
	}
	st := &State{
		Version: stateVersion, ID: filepath.Base(dir), Task: filepath.Join(dir, "task.yaml"), Data: data,
		Budget: budget, Planner: name, PlannerSpec: spec, Seed: opts.Seed, Folds: opts.Folds, Finalists: opts.Finalists,
		Phase: PhasePrepare, Answers: opts.Answers, Steps: opts.Steps, Deidentify: opts.Deidentify, FinalChoice: opts.Final,
	}
	if st.Seed == 0 {
		st.Seed = 42
	}
	if st.Folds == 0 {
		st.Folds = 5
	}
	if st.Finalists == 0 {
		st.Finalists = 2
	}
	if st.Answers != "" {
		if st.Answers, err = filepath.Abs(st.Answers); err != nil {
			return nil, err
		}
	}
	if opts.From != "" {
		if opts.Final != "" {
			return nil, errors.New("run: a run from a package continues the package's model; it takes no final model choice")
		}
		st.FromRequest = &FromRequest{Corrections: make([]string, len(opts.Corrections))}
		if st.FromRequest.Package, err = filepath.Abs(opts.From); err != nil {
			return nil, err
		}
		for i, c := range opts.Corrections {
			if st.FromRequest.Corrections[i], err = filepath.Abs(c); err != nil {
				return nil, err
			}
		}
	} else if len(opts.Corrections) > 0 {
		return nil, errors.New("run: corrections are learned from by a run from a package: give the package too")
	}
	r := &Runner{dir: dir, st: st, env: env, planner: opts.Planner, task: t}
	st.Created = r.now().UTC()
	if st.Deidentify {
		if err := deidentify.NewKey(dir); err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
	}
	if err := st.save(dir); err != nil {
		return nil, err
	}
	return r, nil
}

// Open returns the runner of an existing run folder, to resume it with planner p (nil: the
// rules). [Reopen] rebuilds the planner the run recorded instead.
func Open(dir string, p planner.Planner, env Env) (*Runner, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st, err := LoadState(abs)
	if err != nil {
		return nil, err
	}
	t, err := task.Load(st.Task)
	if err != nil {
		return nil, err
	}
	return &Runner{dir: abs, st: st, env: env, planner: p, task: t}, nil
}

// Dir is the run folder.
func (r *Runner) Dir() string { return r.dir }

// State is the run's state (read it only between runs).
func (r *Runner) State() *State { return r.st }

func (r *Runner) now() time.Time {
	if r.env.Now != nil {
		return r.env.Now()
	}
	return time.Now()
}

// remaining is the budget left.
func (r *Runner) remaining() time.Duration {
	return r.st.Budget - r.spent()
}

func (r *Runner) spent() time.Duration { return r.spent0 + r.now().Sub(r.began) }

func (r *Runner) emit(e Event) {
	if r.env.Events != nil {
		e.Time = r.now()
		r.env.Events(e)
	}
}

func (r *Runner) logf(format string, args ...any) {
	r.emit(Event{Phase: r.st.Phase, Message: fmt.Sprintf(format, args...)})
}

// record appends an audit entry.
func (r *Runner) record(role, action string, in, out map[string]string, details any) error {
	var d json.RawMessage
	if details != nil {
		b, err := encode("audit entry "+action, details, false)
		if err != nil {
			return err
		}
		d = b
	}
	_, err := r.audit.Append(audit.Entry{Role: role, Action: action, Inputs: in, Outputs: out, Details: d})
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	return nil
}

func (r *Runner) save() error {
	r.st.Spent = r.spent()
	return r.st.save(r.dir)
}

// Run executes (or continues) the run to its end or its first fatal error. Cancelling
// ctx stops it at the next safe point with its state saved; Resume continues it.
func (r *Runner) Run(ctx context.Context) (err error) {
	r.began = r.now()
	r.spent0 = r.st.Spent
	if r.audit, err = audit.Open(filepath.Join(r.dir, "audit.db")); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer r.audit.Close()
	if r.store, err = store.Open(filepath.Join(r.dir, "run.db"), store.DefaultTimeout); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer r.store.Close()
	r.exec = r.env.Executor
	if r.exec == nil {
		local := &Local{Store: r.store, Opts: r.env.Supervisor, Device: r.st.Device}
		r.exec = local
		if r.env.NewExecutor != nil {
			if r.exec, err = r.env.NewExecutor(r.dir, local); err != nil {
				return fmt.Errorf("run: %w", err)
			}
		}
	}
	if s, ok := r.exec.(Stopper); ok {
		// However the session ends, none of its work goes on without it; a killed host
		// leaves its jobs running, and the next session re-attaches to them.
		defer func() {
			if serr := s.Stop(context.WithoutCancel(ctx)); err == nil {
				err = serr
			}
		}()
	}
	if r.st.Phase == PhasePrepare {
		if err := r.store.CreateRun(&store.Run{ID: r.st.ID, Created: r.st.Created, Task: r.task.ID}); err != nil && r.st.Spent == 0 {
			return fmt.Errorf("run: %w", err)
		}
	}
	defer func() {
		if serr := r.save(); err == nil {
			err = serr
		}
	}()
	if r.st.Phase != PhasePrepare || r.st.Spent > 0 {
		if err := r.record(audit.RoleHost, "run.resumed", nil, nil, map[string]any{"phase": r.st.Phase, "spent_s": r.st.Spent.Seconds(), "planner": r.st.Planner}); err != nil {
			return err
		}
	}
	if note := r.resumeNote; note != "" {
		r.resumeNote = ""
		r.logf("%s", note)
		r.st.Notes = append(r.st.Notes, note)
		if err := r.record(audit.RolePlanner, "planner.fallback", nil, nil, map[string]any{"message": note}); err != nil {
			return err
		}
	}
	steps := []struct {
		phase string
		fn    func(context.Context) error
	}{
		{PhasePrepare, r.prepare}, {PhasePlan, r.plan}, {PhaseExplore, r.explore}, {PhaseExploit, r.exploit},
		{PhaseFinal, r.final}, {PhaseVerify, r.verify}, {PhaseExport, r.export},
	}
	// Preparation is cheap and rebuilds what the later phases read in memory.
	if phaseIndex(r.st.Phase) > phaseIndex(PhasePrepare) {
		if err := r.load(ctx); err != nil {
			return err
		}
	}
	for i, s := range steps {
		if phaseIndex(r.st.Phase) > phaseIndex(s.phase) {
			continue
		}
		r.st.Phase = s.phase
		r.logf("%s", s.phase)
		if err := s.fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.phase, err)
		}
		if r.st.Ended == nil {
			r.st.Ended = map[string]time.Duration{}
		}
		r.st.Ended[s.phase] = r.spent()
		r.st.Phase = phases[i+1]
		if err := r.save(); err != nil {
			return err
		}
		if r.st.Phase == PhaseDone {
			if u := budgetUnused(r.st, r.st.Spent); u != "" {
				r.logf("%s", upperFirst(u))
			}
		}
	}
	return nil
}

// SetEvents sets the function that receives the run's events.
func (r *Runner) SetEvents(f func(Event)) { r.env.Events = f }
