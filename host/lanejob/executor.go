package lanejob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"amid/assets/fileio"
	"amid/host/predict"
	"amid/host/run"
	"amid/plugins/protocol"
)

// Phase is where a job stands, as its launcher sees it.
type Phase int

// Phases.
const (
	// Unknown: the launcher does not know the job (it never did, or has forgotten it).
	Unknown Phase = iota
	Queued
	Running
	Ended
)

// Outcome is how an ended job ended, as its launcher tells it.
type Outcome string

// Outcomes.
const (
	Completed Outcome = "completed"
	// Lost: the job died of something not its own doing (its node failed, it was
	// preempted); the lane is requeued once.
	Lost      Outcome = "lost"
	Cancelled Outcome = "cancelled"
	TimedOut  Outcome = "timed out"
	Failed    Outcome = "failed"
)

// State is a job's state as its launcher tells it.
type State struct {
	Phase   Phase
	Outcome Outcome // when Ended
	// Reason says it in the launcher's own words ("NODE_FAIL (NodeDown)", "PENDING
	// (Resources)"); Node is where it runs or ran.
	Reason string
	Node   string
}

// Launcher starts `amid lane exec` processes somewhere and tells how they stand.
type Launcher interface {
	// Kind names a job in a sentence: "Slurm job", "process".
	Kind() string
	// Places are where lane-folds can train at once.
	Places() []run.Place
	// Submit starts the lane exec of j and returns the job's id.
	Submit(ctx context.Context, j *Job) (string, error)
	// State tells how the job id stands.
	State(ctx context.Context, id string) (State, error)
	// Cancel stops jobs; a job that trains stops at its last checkpoint.
	Cancel(ctx context.Context, ids []string) error
}

// Job is what a launcher submits: the lane exec of the spec in a job folder.
type Job struct {
	Dir  string // the job folder
	Spec string // its spec.json
	// Name carries the run and lane-fold ids.
	Name  string
	Place run.Place
	// Memory is what the plan says a training step needs (0: unknown); Limit the lane's
	// time limit (0: none).
	Memory int64
	Limit  time.Duration
}

// Record is job.json: a lane-fold's submissions in order.
type Record struct {
	ID          string       `json:"id"`
	Submissions []Submission `json:"submissions"`
	// Requeues counts the submissions made because a job was lost.
	Requeues int `json:"requeues"`
}

// Submission is one job of a lane-fold.
type Submission struct {
	Job       string    `json:"job"`
	Kind      string    `json:"kind"` // the launcher's
	Submitted time.Time `json:"submitted"`
	// Started is when its job wrote its start event (it waited in the queue until then).
	Started    time.Time `json:"started,omitzero"`
	ResumeFrom string    `json:"resume_from,omitempty"`
	// HostCancelled: the host cancelled it (the run was cancelled or paused); the lane
	// continues from its newest checkpoint when the run does.
	HostCancelled bool `json:"host_cancelled,omitempty"`
	// Outcome is how it ended for the lane (empty while it runs): finished, failed, lost.
	Outcome string `json:"outcome,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

func readRecord(dir string) (*Record, error) {
	b, err := os.ReadFile(filepath.Join(dir, RecordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, RecordFile), err)
	}
	return &r, nil
}

func (r *Record) write(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return fileio.Write(filepath.Join(dir, RecordFile), append(b, '\n'))
}

func (r *Record) last() *Submission {
	if len(r.Submissions) == 0 {
		return nil
	}
	return &r.Submissions[len(r.Submissions)-1]
}

// Executor is an amid/host/run.Executor that trains each lane-fold as a job of a
// [Launcher] and follows it through its job folder; it predicts on the host, with Local.
type Executor struct {
	Launcher Launcher
	Local    *run.Local
	// Dir is the run folder: Stop looks for the run's jobs there.
	Dir string
	// Poll is how often the launcher is asked how a job stands (default 5 s); Tail how
	// often the events file is read (default 500 ms).
	Poll, Tail time.Duration
	// EndWait is how long the host waits for the end event of a job the launcher says has
	// ended (a shared filesystem shows another machine's writes late; default 15 s), and
	// for the end of a job it cancelled (default 60 s).
	EndWait time.Duration

	mu     sync.Mutex
	active map[string]bool // job folders a Train follows now
}

// Requeues is how often a lane-fold whose job was lost is submitted again.
const Requeues = 1

func (e *Executor) poll() time.Duration { return dflt(e.Poll, 5*time.Second) }
func (e *Executor) tail() time.Duration { return dflt(e.Tail, 500*time.Millisecond) }
func (e *Executor) wait() time.Duration { return dflt(e.EndWait, 15*time.Second) }

func dflt(d, v time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return v
}

// Places implements run.Executor.
func (e *Executor) Places() []run.Place { return e.Launcher.Places() }

// Predict implements run.Executor: on the host.
func (e *Executor) Predict(ctx context.Context, job *run.PredictJob) (*predict.Predicted, error) {
	if e.Local == nil {
		return nil, errors.New("this executor has no local executor to predict with")
	}
	return e.Local.Predict(ctx, job)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9_.+-]+`)

// JobName is the name of a lane-fold's job: amid, the run and the lane-fold.
func JobName(runID, id string) string {
	return unsafeName.ReplaceAllString("amid-"+runID+"-"+id, "_")
}

// Train implements run.Executor. A lane-fold whose job folder records a job that has not
// ended is re-attached to, not submitted again; one that records a finished job returns
// that job's result; one whose job was lost is submitted once more from its newest
// checkpoint.
func (e *Executor) Train(ctx context.Context, job *run.TrainJob, place run.Place, progress func(*protocol.Progress)) (*run.Trained, error) {
	if err := job.Entry.Usable(); err != nil {
		return nil, err
	}
	dir := Dir(job.Request.WorkDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.active == nil {
		e.active = map[string]bool{}
	}
	if e.active[dir] {
		e.mu.Unlock()
		return nil, fmt.Errorf("lane %s is already being trained in %s", job.ID, job.Request.WorkDir)
	}
	e.active[dir] = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.active, dir)
		e.mu.Unlock()
	}()
	rec, err := readRecord(dir)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		rec = &Record{ID: job.ID}
	}
	f := &forward{progress: progress}
	kind := e.Launcher.Kind()
	called := time.Now()
	var queued time.Duration // the waits for a place in this call, each job's from its submission
	for {
		sub := rec.last()
		switch {
		case sub == nil || sub.Outcome == "lost" || sub.HostCancelled && sub.Outcome == "cancelled":
			if sub, err = e.submit(ctx, job, place, rec, dir, f); err != nil {
				return nil, err
			}
		case sub.Outcome != "":
			// It ended for the lane in an earlier session, which then stopped before the
			// run recorded it: the same answer again, never a second training.
			return e.replay(dir, sub, job)
		default:
			f.say(fmt.Sprintf("re-attached to %s %s, which the run started before it stopped", kind, sub.Job))
		}
		end, st, err := e.follow(ctx, dir, rec, f)
		if err != nil {
			return nil, err
		}
		if !sub.Started.IsZero() {
			queued += max(sub.Started.Sub(later(sub.Submitted, called)), 0)
		}
		if ctx.Err() != nil {
			// Cancelled: the job ended (or will) at its last checkpoint, and the run
			// continues it from there; a job that finished meanwhile keeps its result.
			switch {
			case end != nil && end.State == EndFinished:
				sub.Outcome = "finished"
			case end != nil || st.Phase == Ended || st.Phase == Unknown:
				sub.Outcome = "cancelled"
			}
			return nil, errors.Join(ctx.Err(), rec.write(dir))
		}
		if end != nil && end.State == EndFinished {
			res, err := verified(job, end.Result)
			if err != nil {
				sub.Outcome, sub.Reason = "failed", err.Error()
				return nil, errors.Join(err, rec.write(dir))
			}
			sub.Outcome = "finished"
			res.Queued = queued
			return res, rec.write(dir)
		}
		if end != nil && end.State == EndFailed {
			sub.Outcome, sub.Reason = "failed", end.Error
			return nil, errors.Join(errors.New(end.Error), rec.write(dir))
		}
		// It was cancelled, or it ended without saying how: the launcher says why.
		why := describe(kind, sub.Job, st)
		switch {
		case sub.HostCancelled:
			// A session that was cancelled stopped it; this one continues it.
			sub.Outcome = "cancelled"
		case st.Outcome == Lost || st.Phase == Unknown:
			sub.Outcome, sub.Reason = "lost", why
			if rec.Requeues >= Requeues {
				first := ""
				for _, s := range rec.Submissions[:len(rec.Submissions)-1] {
					if s.Outcome == "lost" {
						first = s.Reason
					}
				}
				err := fmt.Errorf("%s; lane %s was requeued once already (%s), so it fails", why, job.ID, first)
				sub.Outcome = "failed"
				return nil, errors.Join(err, rec.write(dir))
			}
			rec.Requeues++
			f.say(why + "; requeueing the lane once, from its newest checkpoint")
		case st.Outcome == Cancelled:
			sub.Outcome, sub.Reason = "failed", why+", not by AMID"
			return nil, errors.Join(errors.New(sub.Reason), rec.write(dir))
		default:
			sub.Outcome, sub.Reason = "failed", why
			if end == nil {
				sub.Reason += fmt.Sprintf(" without writing how it ended (its output is in %s)", dir)
			}
			return nil, errors.Join(errors.New(sub.Reason), rec.write(dir))
		}
		if err := rec.write(dir); err != nil {
			return nil, err
		}
	}
}

// started records when sub's job first wrote its start event among evs.
func (sub *Submission) started(evs []Event) {
	for _, ev := range evs {
		if sub.Started.IsZero() && ev.Job == sub.Job && ev.Kind == KindStart {
			sub.Started = ev.Time
		}
	}
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// describe says how a job ended in one clause: "Slurm job 12 ended NODE_FAIL (NodeDown)
// on amid1", "process 4711 ended signal: killed".
func describe(kind, id string, st State) string {
	s := kind + " " + id
	switch {
	case st.Phase == Unknown:
		return s + " is no longer known and wrote no end"
	case st.Outcome == Cancelled || st.Outcome == TimedOut:
		s += map[Outcome]string{Cancelled: " was cancelled", TimedOut: " ran out of its time limit"}[st.Outcome]
		if st.Reason != "" {
			s += " (" + st.Reason + ")"
		}
	default:
		s += " ended"
		if st.Reason != "" {
			s += " " + st.Reason
		}
	}
	if st.Node != "" {
		s += " on " + st.Node
	}
	return s
}

// submit writes the spec and submits a job, continuing from the newest checkpoint an
// earlier job of the lane-fold wrote, and records it.
func (e *Executor) submit(ctx context.Context, job *run.TrainJob, place run.Place, rec *Record, dir string, f *forward) (*Submission, error) {
	req, err := NewRequest(job.Request)
	if err != nil {
		return nil, fmt.Errorf("lane %s: %w", job.ID, err)
	}
	evs, err := ReadEvents(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, err
	}
	if ck, _ := newestCheckpoint(evs, job.Request.WorkDir); ck != "" {
		req.ResumeFrom = ck
	}
	spec := &Spec{Version: specVersion, RunID: job.RunID, ID: job.ID, Place: place, Request: req,
		Plugin: Plugin{Name: job.Entry.Name, Path: job.Entry.Path, SHA256: job.Entry.SHA256}}
	path, err := spec.Write()
	if err != nil {
		return nil, fmt.Errorf("lane %s: %w", job.ID, err)
	}
	id, err := e.Launcher.Submit(ctx, &Job{Dir: dir, Spec: path, Name: JobName(job.RunID, job.ID), Place: place,
		Memory: job.Memory, Limit: job.Request.TimeLimit})
	if err != nil {
		return nil, fmt.Errorf("lane %s could not be submitted: %w", job.ID, err)
	}
	rec.Submissions = append(rec.Submissions, Submission{Job: id, Kind: e.Launcher.Kind(), Submitted: time.Now().UTC(), ResumeFrom: req.ResumeFrom})
	if err := rec.write(dir); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("submitted as %s %s", e.Launcher.Kind(), id)
	if req.ResumeFrom != "" {
		msg += ", from checkpoint " + req.ResumeFrom
	}
	f.say(msg)
	return rec.last(), nil
}

// replay returns again how an earlier session's job ended for the lane.
func (e *Executor) replay(dir string, sub *Submission, job *run.TrainJob) (*run.Trained, error) {
	if sub.Outcome != "finished" {
		return nil, errors.New(sub.Reason)
	}
	evs, err := ReadEvents(filepath.Join(dir, EventsFile))
	if err != nil {
		return nil, err
	}
	if end := endOf(evs, sub.Job); end != nil && end.State == EndFinished {
		return verified(job, end.Result)
	}
	return nil, fmt.Errorf("%s %s finished, but its end is missing from %s", e.Launcher.Kind(), sub.Job, filepath.Join(dir, EventsFile))
}

// endOf is the end event of job id after its last start, nil when none.
func endOf(evs []Event, id string) *End {
	var end *End
	for _, e := range evs {
		if e.Job != id {
			continue
		}
		switch e.Kind {
		case KindStart:
			end = nil
		case KindEnd:
			end = e.End
		}
	}
	return end
}

// verified checks a job's result on the host as the supervisor did on the node: a
// checkpoint inside the work folder whose sha256 is the one reported.
func verified(job *run.TrainJob, r *Result) (*run.Trained, error) {
	if r == nil || r.Checkpoint == "" {
		return nil, fmt.Errorf("lane %s finished without a checkpoint", job.ID)
	}
	if !fileio.Within(job.Request.WorkDir, r.Checkpoint) {
		return nil, fmt.Errorf("lane %s's checkpoint %s lies outside its work folder %s", job.ID, r.Checkpoint, job.Request.WorkDir)
	}
	sum, err := fileio.SHA256(r.Checkpoint)
	if err != nil {
		return nil, fmt.Errorf("lane %s's checkpoint cannot be read on the host: %w", job.ID, err)
	}
	if !strings.EqualFold(sum, r.SHA256) {
		return nil, fmt.Errorf("lane %s's checkpoint %s has sha256 %s on the host, not the %s its job reported", job.ID, r.Checkpoint, sum, r.SHA256)
	}
	return &run.Trained{Checkpoint: r.Checkpoint, SHA256: r.SHA256, Steps: r.Steps, Validation: r.Validation, Compute: r.Compute}, nil
}

// follow follows sub until its job ends: its events go to f, its state is polled. It
// returns the job's end when it wrote one, and the launcher's last word on it. When ctx
// is cancelled it cancels the job and waits, up to EndWait's bound, for its end.
func (e *Executor) follow(ctx context.Context, dir string, rec *Record, f *forward) (*End, State, error) {
	sub := rec.last()
	fl := &follower{path: filepath.Join(dir, EventsFile)}
	evs, err := fl.next()
	if err != nil {
		return nil, State{}, err
	}
	f.replay(evs, sub.Job)
	sub.started(evs)
	end := endOf(evs, sub.Job)
	kind := e.Launcher.Kind()
	var st State
	var told string
	var lastPoll time.Time
	var ended time.Time // when the launcher first said the job had ended, or it wrote a cancelled end
	tick := time.NewTicker(e.tail())
	defer tick.Stop()
	for {
		if end != nil && end.State != EndCancelled {
			return end, st, nil
		}
		if end != nil && ended.IsZero() {
			ended = time.Now()
		}
		// A cancelled end: how the job ended (who cancelled it) is the launcher's to say.
		if time.Since(lastPoll) >= e.poll() || end != nil {
			lastPoll = time.Now()
			if st, err = e.Launcher.State(ctx, sub.Job); err != nil && ctx.Err() == nil {
				if msg := fmt.Sprintf("cannot ask about %s %s: %v", kind, sub.Job, err); msg != told {
					f.say(msg)
					told = msg
				}
			} else if err == nil {
				switch st.Phase {
				case Queued, Running:
					msg := fmt.Sprintf("%s %s: %s", kind, sub.Job, map[Phase]string{Queued: "queued", Running: "running"}[st.Phase])
					if st.Reason != "" && st.Phase == Queued {
						msg += " (" + st.Reason + ")"
					}
					if st.Node != "" && st.Phase == Running {
						msg += " on " + st.Node
					}
					if msg != told {
						f.say(msg)
						told = msg
					}
					if end == nil {
						ended = time.Time{}
					} else if time.Since(ended) >= e.wait() {
						return end, st, nil
					}
				default:
					if ended.IsZero() {
						ended = time.Now()
					}
					// Its end may show up late on a shared filesystem: wait a little for it.
					if end != nil || time.Since(ended) >= e.wait() {
						return end, st, nil
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return e.cancelled(ctx, dir, rec, fl, f)
		case <-tick.C:
		}
		more, err := fl.next()
		if err != nil {
			return nil, st, err
		}
		sub.started(more)
		for _, ev := range more {
			if ev.Job != sub.Job {
				continue
			}
			f.event(ev)
			switch ev.Kind {
			case KindStart:
				end = nil
			case KindEnd:
				end = ev.End
			}
		}
	}
}

// cancelled cancels sub's job (the run was cancelled), records that the host did, and
// waits up to four times EndWait for the job to write its end (its plugin stops at a
// checkpoint) or to end.
func (e *Executor) cancelled(ctx context.Context, dir string, rec *Record, fl *follower, f *forward) (*End, State, error) {
	bg := context.WithoutCancel(ctx)
	sub := rec.last()
	// Recorded before the job is cancelled, so that no later session takes the cancel
	// for someone else's.
	sub.HostCancelled = true
	if err := rec.write(dir); err != nil {
		return nil, State{}, err
	}
	if err := e.Launcher.Cancel(bg, []string{sub.Job}); err != nil {
		f.say(fmt.Sprintf("cannot cancel %s %s: %v", e.Launcher.Kind(), sub.Job, err))
	}
	deadline := time.Now().Add(4 * e.wait())
	for time.Now().Before(deadline) {
		evs, err := fl.next()
		if err != nil {
			return nil, State{}, err
		}
		for _, ev := range evs {
			if ev.Job == sub.Job && ev.Kind == KindEnd {
				return ev.End, State{}, nil
			}
		}
		if st, err := e.Launcher.State(bg, sub.Job); err == nil && (st.Phase == Ended || st.Phase == Unknown) {
			return nil, st, nil
		}
		time.Sleep(e.tail())
	}
	return nil, State{}, nil
}

// Stop implements run.Stopper: it cancels every job of the run still queued or running
// that no Train follows (a job of an earlier session that this one never re-attached to).
func (e *Executor) Stop(ctx context.Context) error {
	if e.Dir == "" {
		return nil
	}
	var dirs []string
	var ids []string
	err := filepath.WalkDir(filepath.Join(e.Dir, "lanes"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || d.Name() != RecordFile || filepath.Base(filepath.Dir(path)) != DirName {
			return nil
		}
		dir := filepath.Dir(path)
		e.mu.Lock()
		busy := e.active[dir]
		e.mu.Unlock()
		rec, err := readRecord(dir)
		if err != nil || rec == nil || busy {
			return err
		}
		sub := rec.last()
		if sub == nil || sub.Outcome != "" || sub.HostCancelled {
			return nil
		}
		st, err := e.Launcher.State(ctx, sub.Job)
		if err != nil || st.Phase != Queued && st.Phase != Running {
			return err
		}
		sub.HostCancelled = true
		if err := rec.write(dir); err != nil {
			return err
		}
		dirs, ids = append(dirs, dir), append(ids, sub.Job)
		return nil
	})
	if len(ids) > 0 {
		err = errors.Join(err, e.Launcher.Cancel(ctx, ids))
	}
	if err != nil {
		return fmt.Errorf("stopping the run's jobs: %w", err)
	}
	return nil
}

// forward hands a job's events to the run as a local lane's progress: the plugin's
// progress events as they are, and lines (the job's state, its log) as messages at the
// step reached.
type forward struct {
	progress func(*protocol.Progress)
	last     protocol.Progress
}

func (f *forward) send(p *protocol.Progress) {
	if f.progress != nil {
		f.progress(p)
	}
}

func (f *forward) say(msg string) {
	p := protocol.Progress{Step: f.last.Step, TotalSteps: f.last.TotalSteps, Epoch: f.last.Epoch, ETA: f.last.ETA, Message: msg}
	f.send(&p)
}

func (f *forward) event(e Event) {
	switch e.Kind {
	case KindProgress:
		if e.Progress != nil {
			f.last = *e.Progress
			f.send(e.Progress)
		}
	case KindLog:
		f.say(e.Message)
	}
}

// replay hands on where an already running job stands: its newest checkpoint and its
// last progress since it (last) started.
func (f *forward) replay(evs []Event, id string) {
	var ck, last *protocol.Progress
	for _, e := range evs {
		if e.Job != id {
			continue
		}
		switch {
		case e.Kind == KindStart:
			ck, last = nil, nil
		case e.Kind == KindProgress && e.Progress != nil:
			last = e.Progress
			if e.Progress.Checkpoint != "" {
				ck = e.Progress
			}
		}
	}
	if ck != nil && ck != last {
		f.send(ck)
	}
	if last != nil {
		f.event(Event{Kind: KindProgress, Progress: last})
	}
}
