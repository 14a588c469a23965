package protocol

import (
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// TaskKinds are the task kinds the protocol knows.
var TaskKinds = []string{"segmentation", "detection", "classification", "iqa", "enhancement"}

// Validate checks a description against the protocol's rules; amid/plugins/protocol/schema
// also compiles its config schema. Errors wrap ErrMalformed.
func (r *DescribeResponse) Validate() error {
	switch {
	case !nameRE.MatchString(r.Name):
		return fmt.Errorf("%w: plugin name %q is not lower-case letters, digits and dashes", ErrMalformed, r.Name)
	case r.Version == "":
		return fmt.Errorf("%w: plugin %s has no version", ErrMalformed, r.Name)
	case r.ProtocolVersion != Version:
		return fmt.Errorf("%w: plugin %s speaks protocol %d, the host speaks %d", ErrMalformed, r.Name, r.ProtocolVersion, Version)
	case len(r.Tasks) == 0:
		return fmt.Errorf("%w: plugin %s lists no task kinds", ErrMalformed, r.Name)
	}
	for _, t := range r.Tasks {
		known := false
		for _, k := range TaskKinds {
			known = known || k == t.Kind
		}
		if !known {
			return fmt.Errorf("%w: plugin %s lists unknown task kind %q", ErrMalformed, r.Name, t.Kind)
		}
		for _, d := range t.Dims {
			if d != 2 && d != 3 {
				return fmt.Errorf("%w: plugin %s lists task %s with dimension %d (want 2 or 3)", ErrMalformed, r.Name, t.Kind, d)
			}
		}
	}
	return nil
}

// ConfigChecker checks a JSON configuration, as a compiled config schema
// (amid/plugins/protocol/schema) does.
type ConfigChecker interface {
	Check(config []byte) error
}

// Validate checks a plan: at least one candidate, each named, each config valid against s.
// Errors wrap ErrMalformed.
func (r *PlanResponse) Validate(s ConfigChecker) error {
	if len(r.Candidates) == 0 {
		return fmt.Errorf("%w: the plan has no candidates", ErrMalformed)
	}
	for i, c := range r.Candidates {
		if c.Name == "" {
			return fmt.Errorf("%w: plan candidate %d has no name", ErrMalformed, i)
		}
		if err := s.Check(c.Config); err != nil {
			return fmt.Errorf("%w: plan candidate %q: %w", ErrMalformed, c.Name, err)
		}
		if c.MaxSteps < 0 {
			return fmt.Errorf("%w: plan candidate %q can train at most %d steps", ErrMalformed, c.Name, c.MaxSteps)
		}
		if c.MemoryBytes < 0 {
			return fmt.Errorf("%w: plan candidate %q is planned for %d bytes of memory", ErrMalformed, c.Name, c.MemoryBytes)
		}
	}
	return nil
}

// Validate checks one progress event against the previous step: steps never go back and
// figures are finite. Errors wrap ErrMalformed.
func (p *Progress) Validate(prevStep int64) error {
	if p.Step < prevStep {
		return fmt.Errorf("%w: progress went back from step %d to %d", ErrMalformed, prevStep, p.Step)
	}
	for _, m := range []map[string]float64{p.Losses, p.Validation} {
		for k, v := range m {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("%w: step %d reports %s = %v", ErrMalformed, p.Step, k, v)
			}
		}
	}
	return nil
}

// Validate checks the shape of a final result: a checkpoint path and a 64-digit hex sha256.
// The host also checks the file itself. Errors wrap ErrMalformed.
func (r *TrainResult) Validate() error {
	if r.Checkpoint == "" {
		return fmt.Errorf("%w: the final result names no checkpoint", ErrMalformed)
	}
	if b, err := hex.DecodeString(r.SHA256); err != nil || len(b) != 32 {
		return fmt.Errorf("%w: checkpoint sha256 %q is not 64 hex digits", ErrMalformed, r.SHA256)
	}
	return nil
}
