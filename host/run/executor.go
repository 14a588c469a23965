package run

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"amid/host/catalog"
	"amid/host/predict"
	"amid/host/schedule"
	"amid/host/store"
	"amid/host/supervisor"
	"amid/host/task"
	"amid/plugins/compute"
	"amid/plugins/protocol"
)

// Executor trains lane-folds and predicts with their checkpoints, somewhere: the local
// one ([Local]) starts plugin processes on this machine through the supervisor; a cluster
// executor submits the same work as jobs. The run decides what runs, when, where and for
// how long (amid/host/schedule); an executor only carries it out.
//
// An executor must be safe for concurrent use: the run trains as many lane-folds at once
// as Places lists.
type Executor interface {
	// Places are where lane-folds can train at the same time: one lane-fold per place.
	Places() []Place
	// Train trains one lane-fold on place to the end of its request (its last step, its
	// stop step or its time limit) and returns the final result. progress, when not nil,
	// receives the plugin's progress events; it may be called from another goroutine.
	// Cancelling ctx stops the lane at its last checkpoint and returns ctx's error.
	Train(ctx context.Context, job *TrainJob, place Place, progress func(*protocol.Progress)) (*Trained, error)
	// Predict writes the predictions of job.Cases with job's checkpoint into job.Out
	// (emptied first) and returns the files per case.
	Predict(ctx context.Context, job *PredictJob) (*predict.Predicted, error)
}

// A Stopper is an executor whose work can outlive the host (a cluster's jobs). The run
// calls Stop when a session ends, however it ends: it stops whatever of the run's work is
// still queued or running with no lane waiting for it (a job of an earlier session that
// was never re-attached), so that a cancelled or finished run leaves nothing running. A
// host killed outright calls nothing, and the next session re-attaches to its work.
type Stopper interface {
	Stop(ctx context.Context) error
}

// Place is where one lane-fold trains: a device and the number of workers the plugin
// splits its work into there (amid/host/schedule). The worker split is part of a result's
// compute identity, so a lane-fold that continues from its checkpoint goes back to a place
// with the same Workers and Device.
type Place = schedule.Place

// TrainJob is one lane-fold to train.
type TrainJob struct {
	RunID string
	// ID is the lane-fold's id ("<lane>.f<k>"), unique in the run.
	ID      string
	Entry   *catalog.Entry
	Request protocol.TrainRequest
	// Memory is what the plan says a training step needs, in bytes (0: unknown): a
	// cluster executor asks for it.
	Memory int64
}

// Trained is a lane-fold's final result.
type Trained struct {
	Checkpoint string
	SHA256     string
	Steps      int64
	// Validation is what the plugin measured on the validation cases at the end (its own
	// figure; the run scores with the host's metric).
	Validation map[string]float64
	Compute    compute.Identity
	// Queued is the time the lane-fold waited for a place before its job started (a
	// cluster's queue); 0 for a local run. It counts on the run's clock but not as the
	// lane's training time.
	Queued time.Duration
}

// PredictJob is one prediction of cases with a checkpoint.
type PredictJob struct {
	Entry      *catalog.Entry
	Task       *task.Task
	Config     []byte
	Checkpoint string
	Cases      []task.Case
	Out        string
}

// Local is the executor of this machine: each lane-fold runs in a plugin process started
// by the supervisor, which records it in the run's store (run.db). A place's worker split
// reaches the plugin as GOMAXPROCS and its device as AMID_DEVICE.
type Local struct {
	Store *store.Store
	Opts  supervisor.Options
	// Slots lists the places; empty: [DevicePlaces] of this machine and Device.
	Slots []Place
	// Device is the device setting the places pass on ("" or "cpu": the CPU's places).
	Device string
}

// Places implements Executor.
func (l *Local) Places() []Place {
	if len(l.Slots) > 0 {
		return l.Slots
	}
	return DevicePlaces(runtime.NumCPU(), l.Device)
}

// settingIn is the device setting an environment gives a plugin (the last
// compute.EnvDevice in it), "" when none.
func settingIn(env []string) string {
	d := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, compute.EnvDevice+"="); ok {
			d = v
		}
	}
	return d
}

// minCoresPerLane is the fewest cores a CPU place gets: the engine's convolutions scale
// with cores, and below four a lane trains faster alone than beside another.
const minCoresPerLane = 4

// DevicePlaces are the places of a machine with cores cores and the device setting device
// (compute.EnvDevice's values): on the CPU ("cpu", or "" for none) its [LocalPlaces]; any
// other setting (auto, vulkan, vulkan:N) is one place with every core, which passes the
// setting on: the plugin resolves it to a device, or falls back to the CPU and says so
// (two lanes do not share a GPU: packing them is the schedule's).
func DevicePlaces(cores int, device string) []Place {
	if device != "" && device != "cpu" {
		return []Place{{Name: "device", Device: device, Workers: max(cores, 1)}}
	}
	return LocalPlaces(cores)
}

// LocalPlaces are the CPU places of a machine with cores cores: two lanes side by side,
// each with half the cores, when each half has at least minCoresPerLane; else one lane
// with every core.
func LocalPlaces(cores int) []Place {
	if cores >= 2*minCoresPerLane {
		w := cores / 2
		return []Place{{Name: "cpu0", Device: "cpu", Workers: w}, {Name: "cpu1", Device: "cpu", Workers: w}}
	}
	return []Place{{Name: "cpu", Device: "cpu", Workers: max(cores, 1)}}
}

// PlaceEnv is the environment that puts a plugin process on place p.
func PlaceEnv(p Place) []string {
	var env []string
	if p.Workers > 0 {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(p.Workers))
	}
	if p.Device != "" {
		env = append(env, "AMID_DEVICE="+p.Device)
	}
	return env
}

// Train implements Executor.
func (l *Local) Train(ctx context.Context, job *TrainJob, place Place, progress func(*protocol.Progress)) (*Trained, error) {
	opts := l.Opts
	opts.Env = append(append([]string(nil), opts.Env...), PlaceEnv(place)...)
	sup := &supervisor.Supervisor{Store: l.Store, Opts: opts}
	if progress != nil {
		sup.OnProgress = func(_ string, p *protocol.Progress) { progress(p) }
	}
	rec, err := sup.RunLane(ctx, &supervisor.Lane{RunID: job.RunID, ID: job.ID, Entry: job.Entry, Request: job.Request})
	if err != nil {
		return nil, err
	}
	if rec.Checkpoint == "" {
		return nil, fmt.Errorf("lane %s finished without a checkpoint", job.ID)
	}
	return &Trained{Checkpoint: rec.Checkpoint, SHA256: rec.CheckpointSHA256, Steps: rec.Step, Validation: rec.Validation, Compute: rec.Compute}, nil
}

// Predict implements Executor.
func (l *Local) Predict(ctx context.Context, job *PredictJob) (*predict.Predicted, error) {
	p := &predict.Predictor{Entry: job.Entry, Opts: l.Opts, Task: job.Task}
	return p.One(ctx, job.Config, job.Checkpoint, job.Cases, job.Out)
}
