package lanejob

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"sync"
	"time"

	"amid/assets/fileio"
	"amid/plugins/compute"
	"amid/plugins/protocol"
)

// Event kinds.
const (
	KindStart    = "start"    // a process began: Host, PID
	KindProgress = "progress" // the plugin's progress: Progress
	KindLog      = "log"      // a line worth showing: Message
	KindEnd      = "end"      // the process ends: End
)

// End states.
const (
	EndFinished  = "finished"
	EndFailed    = "failed"
	EndCancelled = "cancelled"
)

// Event is one line of events.jsonl.
type Event struct {
	Time time.Time `json:"time"`
	// Job is the launcher's id of the process that wrote it ($AMID_LANE_JOB).
	Job      string             `json:"job"`
	Kind     string             `json:"kind"`
	Host     string             `json:"host,omitempty"`
	PID      int                `json:"pid,omitempty"`
	Progress *protocol.Progress `json:"progress,omitempty"`
	Message  string             `json:"message,omitempty"`
	End      *End               `json:"end,omitempty"`
}

// End is how a process ended.
type End struct {
	State string `json:"state"`
	// Error is the one sentence that says why, when it failed.
	Error string `json:"error,omitempty"`
	// Result is the final result, when it finished.
	Result *Result `json:"result,omitempty"`
	// Step and LastCheckpoint are the step reached and the newest checkpoint reported.
	Step           int64  `json:"step,omitempty"`
	LastCheckpoint string `json:"last_checkpoint,omitempty"`
}

// Result is a finished lane-fold's final result, as the supervisor verified it on the
// node.
type Result struct {
	Checkpoint string             `json:"checkpoint"`
	SHA256     string             `json:"sha256"`
	Steps      int64              `json:"steps"`
	Validation map[string]float64 `json:"validation,omitempty"`
	Compute    compute.Identity   `json:"compute,omitzero"`
}

// finite drops the figures JSON cannot hold (NaN, ±Inf) from m.
func finite(m map[string]float64) map[string]float64 {
	var out map[string]float64
	for k, v := range m {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			if out == nil {
				out = map[string]float64{}
			}
			out[k] = v
		}
	}
	return out
}

// writer appends events to events.jsonl, one write a line. Lines that matter for a resume
// (a checkpoint, the start and the end) are synced to disk before Append returns.
type writer struct {
	mu  sync.Mutex
	f   *os.File
	job string
}

func openWriter(path, job string) (*writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lane events: %w", err)
	}
	return &writer{f: f, job: job}, nil
}

// Append writes e (its time and job filled in).
func (w *writer) Append(e Event) error {
	e.Time, e.Job = time.Now().UTC(), w.job
	if p := e.Progress; p != nil {
		q := *p
		q.Losses, q.Validation = finite(p.Losses), finite(p.Validation)
		e.Progress = &q
	}
	if e.End != nil && e.End.Result != nil {
		r := *e.End.Result
		r.Validation = finite(r.Validation)
		e.End = &End{State: e.End.State, Error: e.End.Error, Result: &r, Step: e.End.Step, LastCheckpoint: e.End.LastCheckpoint}
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("lane events: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("lane events: %w", err)
	}
	if e.Kind != KindProgress || e.Progress.Checkpoint != "" {
		return w.f.Sync()
	}
	return nil
}

func (w *writer) Close() error { return w.f.Close() }

// follower reads the events appended to a file since its last call: complete lines only,
// so that a line being written is read once whole.
type follower struct {
	path string
	off  int64
	part []byte
}

// next returns the events appended since the last call (none while the file does not
// exist). A line that is not an event is an error naming the file and the offset.
func (f *follower) next() ([]Event, error) {
	fh, err := os.Open(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lane events: %w", err)
	}
	defer fh.Close()
	if _, err := fh.Seek(f.off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("lane events: %w", err)
	}
	b, err := io.ReadAll(fh)
	if err != nil {
		return nil, fmt.Errorf("lane events: %w", err)
	}
	start := f.off - int64(len(f.part))
	f.off += int64(len(b))
	buf := append(f.part, b...)
	var out []Event
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		line := buf[:i]
		if len(bytes.TrimSpace(line)) > 0 {
			var e Event
			if err := json.Unmarshal(line, &e); err != nil {
				f.part = nil
				return out, fmt.Errorf("lane events %s at byte %d: %w", f.path, start, err)
			}
			out = append(out, e)
		}
		start += int64(i + 1)
		buf = buf[i+1:]
	}
	f.part = append([]byte(nil), buf...)
	return out, nil
}

// ReadEvents returns every complete event of an events file (none when it does not exist).
func ReadEvents(path string) ([]Event, error) {
	f := &follower{path: path}
	return f.next()
}

// newestCheckpoint is the newest checkpoint the events report whose file still exists
// inside work, and the step it was written at ("" when none).
func newestCheckpoint(evs []Event, work string) (string, int64) {
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		ck, step := "", int64(0)
		switch {
		case e.Kind == KindProgress && e.Progress != nil:
			ck, step = e.Progress.Checkpoint, e.Progress.Step
		case e.Kind == KindEnd && e.End != nil && e.End.Result != nil:
			ck, step = e.End.Result.Checkpoint, e.End.Result.Steps
		case e.Kind == KindEnd && e.End != nil:
			ck, step = e.End.LastCheckpoint, e.End.Step
		}
		if ck == "" || !fileio.Within(work, ck) {
			continue
		}
		if fi, err := os.Stat(ck); err == nil && fi.Mode().IsRegular() {
			return ck, step
		}
	}
	return "", 0
}
