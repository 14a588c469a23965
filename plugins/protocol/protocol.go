// Package protocol is the versioned contract between AMID's host and its task plugins.
//
// A plugin is a separate executable that the host starts with hashicorp/go-plugin and talks
// to over gRPC. Its four methods take and return the hand-written types of this package;
// the generated wire code stays in internal/pb. Images, weights and predictions travel as
// file paths, never as message payloads.
//
// Plugin authors implement [Plugin] and call amid/plugins/sdk.Serve; the host dispenses a
// [Plugin] from a started process (see amid/host/supervisor). New capabilities arrive as new
// optional interfaces, never by changing Plugin.
//
// The connection is mutual TLS with credentials the host makes for each start
// ([NewCredentials], [ServerTLS]). Config schemas are compiled by the host-side package
// amid/plugins/protocol/schema, which plugin binaries do not link.
package protocol

//go:generate ./generate.sh

import (
	"context"
	"errors"
	"time"

	"amid/plugins/compute"

	"github.com/hashicorp/go-plugin"
)

// Version is the protocol's major version. It is the go-plugin handshake's protocol
// version and the "v1" in the .proto package amid.plugin.v1; a test keeps them in step.
const Version = 1

// PluginName is the name under which the task plugin is registered in go-plugin's plugin set.
const PluginName = "task"

// Handshake is the go-plugin handshake shared by the host and every plugin. The cookie is
// not a security measure: it only stops a plugin binary run by hand from waiting forever.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  Version,
	MagicCookieKey:   "AMID_PLUGIN",
	MagicCookieValue: "d41c7a0e-task-plugin",
}

// Plugin is what a task plugin implements and what the host calls.
type Plugin interface {
	// Describe says what the plugin is and what it can do.
	Describe(ctx context.Context, req *DescribeRequest) (*DescribeResponse, error)
	// Plan proposes candidate configurations for a dataset fingerprint and a task.
	Plan(ctx context.Context, req *PlanRequest) (*PlanResponse, error)
	// Train trains one configuration, calling report for each progress event, and returns
	// the final result naming the checkpoint and its sha256. A non-nil error from report
	// means the host has gone: Train should stop and return it. Cancelling ctx asks the
	// plugin to stop promptly, keeping its last checkpoint.
	Train(ctx context.Context, req *TrainRequest, report func(*Progress) error) (*TrainResult, error)
	// Predict writes prediction files for cases with a trained checkpoint.
	Predict(ctx context.Context, req *PredictRequest) (*PredictResponse, error)
}

// ErrIncomplete marks a Train stream that ended without its final result.
var ErrIncomplete = errors.New("training stream ended without a final result")

// ErrMalformed marks a response that breaks the protocol's rules.
var ErrMalformed = errors.New("malformed plugin response")

// DescribeRequest asks a plugin to describe itself.
type DescribeRequest struct{}

// TaskKind is one kind of task a plugin handles and its spatial dimensions.
type TaskKind struct {
	Kind string `json:"kind"` // segmentation, detection, classification, iqa, enhancement
	Dims []int  `json:"dims"` // 2, 3
}

// DescribeResponse is a plugin's self-description.
type DescribeResponse struct {
	Name            string
	Version         string
	ProtocolVersion int
	Tasks           []TaskKind
	Metrics         []string
	ConfigSchema    []byte // a JSON Schema of the configuration
	Hardware        []string
	// Compute is what this plugin process computes with (zero when it does not say).
	Compute compute.Identity
}

// Task is the task a plan or a training run is for.
type Task struct {
	Kind   string
	Dims   int
	Metric string
	Spec   []byte // the full task definition as JSON, may be empty
}

// Case is one case of a dataset: an image file per channel and an optional label file.
type Case struct {
	ID     string
	Images []string
	Label  string
}

// PlanRequest asks for candidate configurations.
type PlanRequest struct {
	Fingerprint []byte // dataset fingerprint as JSON
	Task        Task
	// Calibration is what an earlier Plan of this plugin measured on this machine (its
	// PlanResponse.Calibration, which the host keeps), or empty: then the plugin measures.
	Calibration []byte
}

// Candidate is one proposed configuration.
type Candidate struct {
	Name      string
	Config    []byte // JSON valid against the plugin's config schema
	Rationale string
	// StepSeconds is the expected time of one training step on this machine (0: unknown);
	// the host's schedule starts from it until it has observed the lane.
	StepSeconds float64
	// MemoryBytes is the memory a training step is planned to use, the device's on a GPU
	// (0: unknown); the host packs lanes onto places with it.
	MemoryBytes int64
	// Device is what the candidate was planned for, and MemoryBytes counts: "cpu" (the
	// host's memory), or "vulkan:N NAME" (the device's); empty when the plugin does not say.
	Device string
	// MaxSteps is the most steps the lane can train, however long it is given (a
	// forest's trees, a prior's one count); 0: no cap. The host's schedule never plans a
	// round or a final model past it.
	MaxSteps int64
}

// PlanResponse lists candidate configurations, best first.
type PlanResponse struct {
	Candidates []Candidate
	// Skipped are the lanes the plugin did not plan, one sentence each saying why.
	Skipped []string
	// Calibration is what this Plan measured on this machine (opaque to the host, which
	// keeps it and sends it back in later PlanRequests); empty when nothing was measured.
	Calibration []byte
}

// TrainRequest asks a plugin to train one configuration.
type TrainRequest struct {
	LaneID     string
	Task       Task
	Config     []byte
	Train      []Case
	Validation []Case
	WorkDir    string // where the plugin writes checkpoints
	ResumeFrom string // checkpoint to resume from, empty for a fresh start
	Seed       int64
	// TimeLimit, when positive, is how long training may take: when it has elapsed the
	// plugin stops stepping and finishes normally (final checkpoint, validation, result),
	// as if the configured number of steps had been reached; its last progress event is
	// at the step it stopped at. The host's scheduler shares
	// a run's budget among lanes this way. sdk.Clock measures it.
	TimeLimit time.Duration
	// Until, when positive, is the last step of this request: the plugin stops after it and
	// finishes normally, while its learning rate still follows the schedule over the
	// configured number of steps. A later request with ResumeFrom continues the same
	// schedule; the host trains a lane in rounds this way.
	Until int64
}

// Progress is one training progress event.
type Progress struct {
	Step             int64
	TotalSteps       int64
	Epoch            int64
	Losses           map[string]float64
	Validation       map[string]float64
	SamplesPerSecond float64
	ETA              time.Duration
	Checkpoint       string // newest checkpoint written, if any
	Message          string
}

// TrainResult is the explicit end of a successful training run.
type TrainResult struct {
	Checkpoint string
	SHA256     string // lower-case hex sha256 of the checkpoint file
	Steps      int64
	Validation map[string]float64
	// Compute is what trained the checkpoint (zero when the plugin does not say).
	Compute compute.Identity
}

// PredictRequest asks for predictions on cases.
type PredictRequest struct {
	Task       Task
	Config     []byte
	Checkpoint string
	Cases      []Case
	OutputDir  string
	// Probabilities asks a segmentation plugin to write, beside each case's label map, its
	// class probabilities (Prediction.Probabilities). A compatible addition: a plugin
	// that cannot ignores it and still predicts, with none.
	Probabilities bool
}

// Prediction names the files written for one case.
type Prediction struct {
	CaseID string
	Files  []string
	// Confidence is how sure the model is of the case, from 0 (not at all) to 1 (certain),
	// so that a reader can look at the least sure cases first: for a segmentation, one
	// minus the mean normalised entropy of the class probabilities over the voxels it calls
	// foreground; for a classification, the chosen class's probability. Nil when the
	// plugin does not say (a compatible addition: a plugin without it still predicts).
	Confidence *float64
	// Probabilities, when the request asked for them and the plugin writes them, is the
	// case's class probability map inside the output folder: a float32 NIfTI on the
	// image's grid (for a 2D image, one slice) with one channel per class in the order of
	// the task's labels (channel k the probability of the k-th label, background first),
	// summing to 1 at each voxel; the label map is its argmax before post-processing.
	// Empty when none was written.
	Probabilities string
}

// PredictResponse lists the predictions written.
type PredictResponse struct {
	Predictions []Prediction
	// Compute is what computed the predictions (zero when the plugin does not say).
	Compute compute.Identity
}
