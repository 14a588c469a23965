// Package lanejob trains a lane-fold in a process of its own, away from the host (a Slurm
// job on a cluster node, or a local process), and follows it through files in the run
// folder, which the host and that process share.
//
// # The job folder
//
// Each lane-fold's work folder (where its plugin writes checkpoints) holds a folder job/:
//
//	spec.json     what to train: the plugin (path and the sha256 the run trusted), the
//	              place, the training request; written by the host for each submission
//	events.jsonl  what happened, one JSON object a line, appended by the process that
//	              trains (Exec) and never rewritten: its start, the plugin's progress
//	              events (steps, losses, checkpoints), log lines, and its end with the
//	              result or why it failed
//	job.json      the host's record: each submission's job id, and how it ended
//	lock          held by the process that trains, so that two never train at once
//
// The host reads events.jsonl as it grows and hands the progress to the run exactly as a
// local lane's; the end event is the lane-fold's result. Because the process writes its
// own end into the run folder, a host that was killed finds out how its jobs ended
// without asking the launcher, however long ago they ended.
//
// # What runs where
//
// [Exec] is `amid lane exec SPEC.json`: it checks the plugin binary's sha256 against the
// one in the spec before anything starts it (a binary changed on the shared folder is
// refused with a sentence saying so), takes the lock, continues from the newest
// checkpoint an earlier submission reported, and trains through the local supervisor
// (amid/host/supervisor), which keeps its guarantees there (checksum at exec, watchdog,
// restarts, a verified final checkpoint).
//
// [Executor] is the host's side, an amid/host/run.Executor over a [Launcher] (a workload
// manager such as amid/host/slurm, or [Process]): it writes the spec, submits, follows the
// events and the launcher's state, re-attaches to a submission still queued or running
// instead of starting it again, requeues a lane-fold whose job was lost (a node failure,
// a preemption) once from its newest checkpoint and then fails it with the launcher's
// reason, fails a lane-fold whose job was cancelled by someone else with that reason, and
// cancels its jobs when the run is cancelled. Predictions stay on the host
// (amid/host/run.Local).
package lanejob

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"amid/assets/fileio"
	"amid/host/run"
	"amid/plugins/protocol"
)

// Folder and file names in a lane-fold's work folder.
const (
	DirName    = "job"
	SpecFile   = "spec.json"
	EventsFile = "events.jsonl"
	RecordFile = "job.json"
	LockFile   = "lock"
)

// EnvJob is the environment variable through which a launcher tells the process it starts
// its job id (the Slurm job's script sets it from SLURM_JOB_ID); Exec writes it into every
// event, so that the host tells one submission's events from another's.
const EnvJob = "AMID_LANE_JOB"

// specVersion is the version of spec.json this program writes and reads.
const specVersion = 1

// Dir is the job folder of a lane-fold whose work folder is work.
func Dir(work string) string { return filepath.Join(work, DirName) }

// Spec is one lane-fold to train, spec.json.
type Spec struct {
	Version int    `json:"version"`
	RunID   string `json:"run_id"`
	// ID is the lane-fold ("<lane>.f<k>").
	ID     string    `json:"id"`
	Plugin Plugin    `json:"plugin"`
	Place  run.Place `json:"place"`
	// Request is the training request; its WorkDir holds the job folder.
	Request Request `json:"request"`
}

// Plugin is the plugin binary a lane trains with, and the sha256 the run trusted.
type Plugin struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Request is a protocol.TrainRequest as spec.json holds it (the configuration and the
// task's specification as JSON, durations in seconds).
type Request struct {
	Task       Task            `json:"task"`
	Config     json.RawMessage `json:"config"`
	Train      []protocol.Case `json:"train"`
	Validation []protocol.Case `json:"validation"`
	WorkDir    string          `json:"work_dir"`
	ResumeFrom string          `json:"resume_from,omitempty"`
	Seed       int64           `json:"seed"`
	TimeLimit  float64         `json:"time_limit_seconds,omitempty"`
	Until      int64           `json:"until,omitempty"`
}

// Task is a protocol.Task as spec.json holds it.
type Task struct {
	Kind   string          `json:"kind"`
	Dims   int             `json:"dims"`
	Metric string          `json:"metric"`
	Spec   json.RawMessage `json:"spec,omitempty"`
}

// NewRequest is r as spec.json holds it. The configuration and the task's specification
// must be JSON, as the protocol has them.
func NewRequest(r protocol.TrainRequest) (Request, error) {
	for what, b := range map[string][]byte{"configuration": r.Config, "task specification": r.Task.Spec} {
		if len(b) > 0 && !json.Valid(b) {
			return Request{}, fmt.Errorf("the lane's %s is not JSON", what)
		}
	}
	out := Request{
		Task:   Task{Kind: r.Task.Kind, Dims: r.Task.Dims, Metric: r.Task.Metric, Spec: json.RawMessage(r.Task.Spec)},
		Config: json.RawMessage(r.Config), Train: r.Train, Validation: r.Validation, WorkDir: r.WorkDir,
		ResumeFrom: r.ResumeFrom, Seed: r.Seed, TimeLimit: r.TimeLimit.Seconds(), Until: r.Until,
	}
	if len(out.Config) == 0 {
		out.Config = json.RawMessage("{}")
	}
	return out, nil
}

// Proto is the protocol's request of r.
func (r Request) Proto() protocol.TrainRequest {
	return protocol.TrainRequest{
		Task:   protocol.Task{Kind: r.Task.Kind, Dims: r.Task.Dims, Metric: r.Task.Metric, Spec: []byte(r.Task.Spec)},
		Config: []byte(r.Config), Train: r.Train, Validation: r.Validation, WorkDir: r.WorkDir,
		ResumeFrom: r.ResumeFrom, Seed: r.Seed, TimeLimit: time.Duration(r.TimeLimit * float64(time.Second)), Until: r.Until,
	}
}

// Write writes the spec atomically into its job folder and returns its path.
func (s *Spec) Write() (string, error) {
	dir := Dir(s.Request.WorkDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, SpecFile)
	return path, fileio.Write(path, append(b, '\n'))
}

// ReadSpec reads a spec.json and checks that it names what Exec needs.
func ReadSpec(path string) (*Spec, error) {
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("lane spec: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("lane spec: %w", err)
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("lane spec %s: %w", path, err)
	}
	switch {
	case s.Version != specVersion:
		return nil, fmt.Errorf("lane spec %s: version %d, this program reads %d", path, s.Version, specVersion)
	case s.ID == "" || s.RunID == "":
		return nil, fmt.Errorf("lane spec %s names no run or lane", path)
	case s.Plugin.Name == "" || s.Plugin.Path == "" || len(s.Plugin.SHA256) != 64:
		return nil, fmt.Errorf("lane spec %s names no plugin binary with its sha256", path)
	case !filepath.IsAbs(s.Request.WorkDir):
		return nil, fmt.Errorf("lane spec %s: the work folder %q is not an absolute path", path, s.Request.WorkDir)
	case filepath.Dir(path) != Dir(s.Request.WorkDir):
		return nil, fmt.Errorf("lane spec %s lies outside its work folder's job folder %s", path, Dir(s.Request.WorkDir))
	}
	return &s, nil
}
