package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"amid/assets/fileio"
	"amid/host/catalog"
	"amid/host/store"
	"amid/plugins/protocol"
)

// Lane is one lane to train: which plugin, which configuration, on what data.
type Lane struct {
	RunID   string
	ID      string
	Entry   *catalog.Entry
	Request protocol.TrainRequest // WorkDir is required; LaneID is set from ID
}

// Supervisor runs lanes and records them in a store.
type Supervisor struct {
	Store *store.Store
	Opts  Options
	// OnProgress, when set, sees every valid progress event (for a UI or a CLI).
	OnProgress func(lane string, p *protocol.Progress)
	// OnStart, when set, sees each plugin process a lane starts.
	OnStart func(lane string, pid int)
}

// errCrash marks an attempt that ended because the plugin process died.
var errCrash = errors.New("plugin process died")

// persistEvery is how often RunLane writes a running lane's step to the store.
const persistEvery = time.Second

// RunLane trains one lane to its end and returns the lane as recorded. The returned error
// is nil when the lane finished; otherwise it is the sentence recorded as the lane's error
// (a cancelled lane returns an error wrapping context.Canceled).
func (s *Supervisor) RunLane(ctx context.Context, l *Lane) (*store.Lane, error) {
	opts := s.Opts.withDefaults()
	if l.Request.WorkDir == "" {
		return nil, fmt.Errorf("lane %s: no work folder", l.ID)
	}
	if err := os.MkdirAll(l.Request.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("lane %s: %w", l.ID, err)
	}
	rec := &store.Lane{
		RunID: l.RunID, ID: l.ID, Plugin: l.Entry.Name, PluginSHA256: l.Entry.SHA256,
		Config: json.RawMessage(l.Request.Config), State: store.LaneRunning, Started: time.Now().UTC(),
	}
	if !json.Valid(l.Request.Config) {
		rec.Config = nil
	}
	if err := s.Store.PutLane(rec, &store.Event{Kind: "lane", Message: fmt.Sprintf("lane %s started with plugin %s (sha256 %s)", l.ID, l.Entry.Name, l.Entry.SHA256)}); err != nil {
		return nil, err
	}
	req := l.Request
	req.LaneID = l.ID
	if opts.Sent != nil {
		opts.Sent(&req)
	}
	backoff := opts.Backoff
	for {
		rec.Attempts++
		res, err := s.attempt(ctx, opts, l, &req, rec)
		if err == nil {
			err = verify(l.Entry.Name, req.WorkDir, res)
		}
		if err == nil {
			rec.State, rec.Checkpoint, rec.CheckpointSHA256, rec.Ended = store.LaneFinished, res.Checkpoint, res.SHA256, time.Now().UTC()
			rec.Compute, rec.Validation = res.Compute, res.Validation
			if res.Steps > rec.Step {
				rec.Step = res.Steps
			}
			msg := fmt.Sprintf("lane %s finished at step %d with checkpoint %s (sha256 %s)", l.ID, rec.Step, res.Checkpoint, res.SHA256)
			return rec, s.Store.PutLane(rec, &store.Event{Kind: "lane", Message: msg})
		}
		if ctx.Err() != nil {
			rec.State, rec.Ended = store.LaneCancelled, time.Now().UTC()
			msg := fmt.Sprintf("lane %s was cancelled at step %d", l.ID, rec.Step)
			if rec.LastCheckpoint != "" {
				msg += "; its last checkpoint " + rec.LastCheckpoint + " is kept"
			}
			if perr := s.Store.PutLane(rec, &store.Event{Kind: "lane", Message: msg}); perr != nil {
				return rec, perr
			}
			return rec, fmt.Errorf("%s: %w", msg, ctx.Err())
		}
		if errors.Is(err, errCrash) && rec.Attempts <= opts.Restarts {
			resume := ""
			if rec.LastCheckpoint != "" && statFile(rec.LastCheckpoint) == nil {
				resume = rec.LastCheckpoint
			}
			msg := fmt.Sprintf("%s; restarting it in %v (attempt %d of %d)", sentence(err), backoff, rec.Attempts+1, opts.Restarts+1)
			if resume != "" {
				msg += " from checkpoint " + resume
			}
			if perr := s.Store.PutLane(rec, &store.Event{Kind: "crash", Message: msg}); perr != nil {
				return rec, perr
			}
			select {
			case <-ctx.Done():
				continue // recorded as cancelled on the next turn
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
			req.ResumeFrom = resume
			continue
		}
		rec.State, rec.Error, rec.Ended = store.LaneFailed, sentence(err), time.Now().UTC()
		if perr := s.Store.PutLane(rec, &store.Event{Kind: "lane", Message: rec.Error}); perr != nil {
			return rec, perr
		}
		return rec, errors.New(rec.Error)
	}
}

// attempt starts the plugin once and trains. A plugin that died returns an error wrapping
// errCrash.
func (s *Supervisor) attempt(ctx context.Context, opts Options, l *Lane, req *protocol.TrainRequest, rec *store.Lane) (*protocol.TrainResult, error) {
	p, err := Start(ctx, l.Entry, opts)
	if err != nil {
		return nil, err
	}
	defer p.Kill()
	if s.OnStart != nil {
		s.OnStart(l.ID, p.Pid())
	}

	// The watchdog kills a plugin that goes silent, or that ignores a cancel.
	trainCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	beat := make(chan struct{}, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTimer(opts.ProgressTimeout)
		defer t.Stop()
		cancel, cancelled := ctx.Done(), false
		for {
			select {
			case <-done:
				return
			case <-beat:
				if !cancelled {
					t.Reset(opts.ProgressTimeout)
				}
			case <-cancel:
				stop() // asks the plugin to stop: the gRPC stream is cancelled
				cancel, cancelled = nil, true
				t.Reset(opts.CancelGrace)
			case <-t.C:
				if cancelled {
					p.kill(fmt.Sprintf("did not stop within %v of a cancel and was killed", opts.CancelGrace))
				} else {
					p.kill(fmt.Sprintf("sent no progress for %v during Train and was stopped", opts.ProgressTimeout))
				}
				stop()
				return
			}
		}
	}()

	var lastSaved time.Time
	prev := rec.Step
	if req.ResumeFrom == "" {
		prev = 0
	}
	res, err := p.plug.Train(trainCtx, req, func(pr *protocol.Progress) error {
		select {
		case beat <- struct{}{}:
		default:
		}
		if err := pr.Validate(prev); err != nil {
			return err
		}
		prev = pr.Step
		rec.Step = pr.Step
		changed := false
		if pr.Checkpoint != "" && pr.Checkpoint != rec.LastCheckpoint {
			if !fileio.Within(req.WorkDir, pr.Checkpoint) {
				return fmt.Errorf("%w: checkpoint %s is outside the work folder %s", protocol.ErrMalformed, pr.Checkpoint, req.WorkDir)
			}
			rec.LastCheckpoint, changed = pr.Checkpoint, true
		}
		if s.OnProgress != nil {
			s.OnProgress(l.ID, pr)
		}
		if changed || time.Since(lastSaved) > persistEvery {
			lastSaved = time.Now()
			return s.Store.PutLane(rec, nil)
		}
		return nil
	})
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil {
		// Wait for the plugin to wind down; the watchdog kills it after CancelGrace.
		return nil, ctx.Err()
	}
	serr := p.explain("Train", err)
	if p.killedFor() == "" {
		if _, exited := p.waitExit(500 * time.Millisecond); exited {
			return nil, fmt.Errorf("%w: %w", errCrash, serr)
		}
	}
	return nil, serr
}

// verify checks a final result: well formed, a file inside the work folder, whose sha256
// matches.
func verify(name, work string, res *protocol.TrainResult) error {
	if err := res.Validate(); err != nil {
		return fmt.Errorf("plugin %s sent a malformed final result: %w", name, err)
	}
	if !fileio.Within(work, res.Checkpoint) {
		return fmt.Errorf("plugin %s named a final checkpoint %s outside its work folder %s", name, res.Checkpoint, work)
	}
	sum, err := fileio.SHA256(res.Checkpoint)
	if err != nil {
		return fmt.Errorf("plugin %s named a final checkpoint that cannot be read: %w", name, err)
	}
	if sum != res.SHA256 {
		return fmt.Errorf("plugin %s's final checkpoint %s has sha256 %s, not the %s it reported", name, res.Checkpoint, sum, res.SHA256)
	}
	return nil
}

// sentence is the error's text without the internal crash marker.
func sentence(err error) string {
	return strings.TrimPrefix(err.Error(), errCrash.Error()+": ")
}

func statFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	return nil
}
