// Package planner turns a task, its dataset fingerprint and the plugins' own candidate
// configurations into the method lanes a run trains, and refines them as results arrive.
//
// The rule-based planner ([Rules]) is the default and works offline. An LLM planner
// (amid/host/planner/llm) proposes and refines lanes through an OpenAI-compatible endpoint;
// whatever it replies is validated against each plugin's configuration schema, and when it
// fails the rules take over. A planner never sees pixels or identifying DICOM tags: its
// Input carries only the fingerprint (statistics), the task text and results.
package planner

import (
	"context"
	"encoding/json"
	"time"

	"amid/plugins/protocol"
)

// Input is everything a planner may look at.
type Input struct {
	// Task is the task definition as JSON (amid/host/task.Task without paths).
	Task json.RawMessage `json:"task"`
	// Kind and Dims of the task.
	Kind string `json:"kind"`
	Dims int    `json:"dims"`
	// Metric is the task's metric name and whether higher is better.
	Metric         string `json:"metric"`
	HigherIsBetter bool   `json:"higher_is_better"`
	// Fingerprint is the dataset fingerprint as JSON (amid/host/profile).
	Fingerprint json.RawMessage `json:"fingerprint"`
	// Plugins are the plugins that handle the task, with the candidates each proposed.
	Plugins []Plugin `json:"plugins"`
	// Results are the lanes trained so far, best first.
	Results []Result `json:"results,omitempty"`
	// Budget is the run's wall-clock budget and Remaining what is left of it.
	Budget    time.Duration `json:"budget"`
	Remaining time.Duration `json:"remaining"`
	// Slots is how many lanes can train at once on this machine.
	Slots int `json:"slots"`
	// FirstRound is the time a lane trains in the first round of successive halving, and
	// MinSteps the fewest steps it must make there, by lane name ("" for any other): a
	// candidate whose StepSeconds × MinSteps exceeds FirstRound cannot be judged in time.
	FirstRound time.Duration  `json:"first_round,omitempty"`
	MinSteps   map[string]int `json:"min_steps,omitempty"`
	// Explore is what exploration has left when the planner refines (0: Remaining).
	Explore time.Duration `json:"explore,omitempty"`
}

// Plugin is one plugin's offer.
type Plugin struct {
	Name       string               `json:"name"`
	Schema     json.RawMessage      `json:"config_schema"`
	Candidates []protocol.Candidate `json:"candidates"`
}

// Result is a trained lane's outcome.
type Result struct {
	Lane   string          `json:"lane"`
	Plugin string          `json:"plugin"`
	Config json.RawMessage `json:"config"`
	// Score is the validation metric (mean over the folds trained), NaN when none.
	Score  float64       `json:"score"`
	Folds  int           `json:"folds"`
	Status string        `json:"status"` // done, failed, cancelled, not trained
	Reason string        `json:"reason,omitempty"`
	Took   time.Duration `json:"took"`
	// Extra are the validation's other figures: for segmentation the Dice of each class
	// ("dice_<label>") and the confusions between foreground classes ("confusion_<a>_<b>":
	// the share of class a's voxels predicted as b).
	Extra map[string]float64 `json:"extra,omitempty"`
	// Steps the lane made and the seconds each took.
	Steps       int64   `json:"steps,omitempty"`
	StepSeconds float64 `json:"step_seconds,omitempty"`
	// Checkpoint is the lane's best round's checkpoint and SHA256 its file's digest: a
	// lane may build on another's model (the cascade on a 3d_lowres lane's).
	Checkpoint string `json:"checkpoint,omitempty"`
	SHA256     string `json:"sha256,omitempty"`
}

// Lane is one method lane to train: a plugin and a configuration valid against its schema.
type Lane struct {
	Name      string          `json:"name"`
	Plugin    string          `json:"plugin"`
	Config    json.RawMessage `json:"config"`
	Rationale string          `json:"rationale"`
	// Base, for a lane proposed from results, names the lane whose configuration it
	// changes (its step time is about that lane's).
	Base string `json:"base,omitempty"`
	// Device is what the plugin planned the lane for ("cpu", "vulkan:N NAME"; empty when
	// it did not say), from the lane's candidate (protocol.Candidate.Device).
	Device string `json:"device,omitempty"`
	// MaxSteps is the most steps the lane can train, 0 when it has no cap, from its
	// candidate (protocol.Candidate.MaxSteps): a prior lane counts its training labels in
	// one step, a forest grows its trees (amid/host/schedule's Lane.MaxSteps).
	MaxSteps int `json:"max_steps,omitempty"`
}

// Planner proposes lanes. Plan is called once before training (Results empty) and may be
// called again with results to refine; it returns lanes best first. A planner that cannot
// plan returns an error and the caller falls back to Rules.
type Planner interface {
	Plan(ctx context.Context, in Input) ([]Lane, error)
}
