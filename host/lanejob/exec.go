package lanejob

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"amid/assets/fileio"
	"amid/host/catalog"
	"amid/host/run"
	"amid/host/store"
	"amid/host/supervisor"
	"amid/plugins/protocol"
)

// ErrChanged means the plugin binary is not the one the run trusted.
var ErrChanged = errors.New("the plugin binary changed")

// ExecOptions tune Exec.
type ExecOptions struct {
	// Job is this process's job id as the launcher knows it (default: $AMID_LANE_JOB).
	Job string
	// Supervisor are the options plugins start with.
	Supervisor supervisor.Options
	// LockWait is how often a process waiting for an earlier one to let go of the lock
	// says so (default 30 s).
	LockWait time.Duration
}

// Exec trains the lane-fold of the spec at specPath and writes what happens into its
// events file: it is `amid lane exec SPEC.json`. It returns the lane-fold's end (also the
// last event written) and an error only when it could not even write its events; a lane
// that failed or was cancelled (ctx) is an end, not an error.
func Exec(ctx context.Context, specPath string, o ExecOptions) (*End, error) {
	spec, err := ReadSpec(specPath)
	if err != nil {
		return nil, err
	}
	if o.Job == "" {
		o.Job = os.Getenv(EnvJob)
	}
	if o.Job == "" {
		o.Job = strconv.Itoa(os.Getpid()) // a process's id, as Process knows it
	}
	if o.LockWait <= 0 {
		o.LockWait = 30 * time.Second
	}
	dir := Dir(spec.Request.WorkDir)
	w, err := openWriter(filepath.Join(dir, EventsFile), o.Job)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	host, _ := os.Hostname()
	if err := w.Append(Event{Kind: KindStart, Host: host, PID: os.Getpid(), Message: fmt.Sprintf("lane %s started on %s", spec.ID, host)}); err != nil {
		return nil, err
	}
	end := execSpec(ctx, spec, dir, host, w, o)
	return end, w.Append(Event{Kind: KindEnd, End: end})
}

// execSpec trains and returns how it ended.
func execSpec(ctx context.Context, spec *Spec, dir, host string, w *writer, o ExecOptions) *End {
	failed := func(err error) *End { return &End{State: EndFailed, Error: err.Error()} }
	// Trust holds here as on the host: the binary must be the one the run trusted, before
	// anything starts it (and go-plugin hashes it again just before exec).
	sum, err := fileio.SHA256(spec.Plugin.Path)
	if err != nil {
		return failed(fmt.Errorf("plugin %s cannot be read on %s: %w", spec.Plugin.Name, host, err))
	}
	if !strings.EqualFold(sum, spec.Plugin.SHA256) {
		return failed(fmt.Errorf("%w: plugin %s (%s) on %s has sha256 %s, not the %s the run trusted when it sent this lane, so it is not started and lane %s is not trained",
			ErrChanged, spec.Plugin.Name, spec.Plugin.Path, host, sum, spec.Plugin.SHA256, spec.ID))
	}
	unlock, err := lockWait(ctx, filepath.Join(dir, LockFile), o.LockWait, func() {
		_ = w.Append(Event{Kind: KindLog, Message: "waiting for an earlier process of this lane to stop: it still holds " + filepath.Join(dir, LockFile)})
	})
	if err != nil {
		if ctx.Err() != nil {
			return &End{State: EndCancelled, Error: "cancelled while waiting for an earlier process of this lane to stop"}
		}
		return failed(fmt.Errorf("lane %s: %w", spec.ID, err))
	}
	defer unlock()

	req := spec.Request.Proto()
	// Continue from the newest checkpoint an earlier process of this lane-fold reported,
	// which is newer than the one it was sent from.
	evs, err := ReadEvents(filepath.Join(dir, EventsFile))
	if err != nil {
		return failed(err)
	}
	if ck, step := newestCheckpoint(evs, req.WorkDir); ck != "" {
		req.ResumeFrom = ck
		_ = w.Append(Event{Kind: KindLog, Message: fmt.Sprintf("continuing from checkpoint %s (step %d), the newest an earlier process of this lane wrote", ck, step)})
	}

	tmp, err := os.MkdirTemp("", "amid-lane-")
	if err != nil {
		return failed(err)
	}
	defer os.RemoveAll(tmp)
	// The supervisor records the lane in a store of its own on the node; the host's store
	// stays the host's.
	st, err := store.Open(filepath.Join(tmp, "lane.db"), store.DefaultTimeout)
	if err != nil {
		return failed(err)
	}
	defer st.Close()
	if err := st.CreateRun(&store.Run{ID: spec.RunID, Task: spec.Request.Task.Kind}); err != nil {
		return failed(err)
	}
	opts := o.Supervisor
	opts.Env = append(append([]string(nil), opts.Env...), run.PlaceEnv(spec.Place)...)
	entry := &catalog.Entry{Name: spec.Plugin.Name, Path: spec.Plugin.Path, SHA256: sum, State: catalog.Trusted,
		Record: &store.Plugin{Name: spec.Plugin.Name, Path: spec.Plugin.Path, TrustedSHA256: spec.Plugin.SHA256}}
	sup := &supervisor.Supervisor{Store: st, Opts: opts,
		OnProgress: func(_ string, p *protocol.Progress) {
			if err := w.Append(Event{Kind: KindProgress, Progress: p}); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		},
		OnStart: func(_ string, pid int) {
			_ = w.Append(Event{Kind: KindLog, PID: pid, Message: fmt.Sprintf("plugin %s started on %s (pid %d)", spec.Plugin.Name, host, pid)})
		},
	}
	rec, err := sup.RunLane(ctx, &supervisor.Lane{RunID: spec.RunID, ID: spec.ID, Entry: entry, Request: req})
	// What the supervisor logged on the way (restarts after a crash) is worth keeping.
	if evs, lerr := st.Events(spec.RunID, spec.ID); lerr == nil {
		for _, e := range evs {
			if e.Kind == "crash" {
				_ = w.Append(Event{Kind: KindLog, Message: e.Message})
			}
		}
	}
	end := &End{}
	if rec != nil {
		end.Step, end.LastCheckpoint = rec.Step, rec.LastCheckpoint
	}
	switch {
	case err == nil:
		end.State = EndFinished
		end.Result = &Result{Checkpoint: rec.Checkpoint, SHA256: rec.CheckpointSHA256, Steps: rec.Step, Validation: rec.Validation, Compute: rec.Compute}
	case ctx.Err() != nil:
		end.State, end.Error = EndCancelled, err.Error()
	default:
		end.State, end.Error = EndFailed, err.Error()
	}
	return end
}
