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
	Status string        `json:"status"` // done, failed, cancelled
	Reason string        `json:"reason,omitempty"`
	Took   time.Duration `json:"took"`
}

// Lane is one method lane to train: a plugin and a configuration valid against its schema.
type Lane struct {
	Name      string          `json:"name"`
	Plugin    string          `json:"plugin"`
	Config    json.RawMessage `json:"config"`
	Rationale string          `json:"rationale"`
	// Device is what the plugin planned the lane for ("cpu", "vulkan:N NAME"; empty when
	// it did not say) and DeviceBytes the memory of that device one training run was
	// planned to use (protocol.Candidate's).
	Device      string `json:"device,omitempty"`
	DeviceBytes int64  `json:"device_bytes,omitempty"`
}

// Devices fills in each lane's device and planned memory from the candidate it was made
// from (named plugin/candidate, as Rules names lanes) where the planner left them out.
func Devices(lanes []Lane, plugins []Plugin) []Lane {
	for i, l := range lanes {
		if l.Device != "" {
			continue
		}
		for _, p := range plugins {
			for _, c := range p.Candidates {
				if p.Name == l.Plugin && l.Name == p.Name+"/"+c.Name {
					lanes[i].Device, lanes[i].DeviceBytes = c.Device, c.DeviceBytes
				}
			}
		}
	}
	return lanes
}

// Planner proposes lanes. Plan is called once before training (Results empty) and may be
// called again with results to refine; it returns lanes best first. A planner that cannot
// plan returns an error and the caller falls back to Rules.
type Planner interface {
	Plan(ctx context.Context, in Input) ([]Lane, error)
}
