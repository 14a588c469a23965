package protocol

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// TaskKinds are the task kinds the protocol knows.
var TaskKinds = []string{"segmentation", "detection", "classification", "iqa", "enhancement"}

// Validate checks a description against the protocol's rules and compiles its config
// schema. Errors wrap ErrMalformed.
func (r *DescribeResponse) Validate() (*Schema, error) {
	switch {
	case !nameRE.MatchString(r.Name):
		return nil, fmt.Errorf("%w: plugin name %q is not lower-case letters, digits and dashes", ErrMalformed, r.Name)
	case r.Version == "":
		return nil, fmt.Errorf("%w: plugin %s has no version", ErrMalformed, r.Name)
	case r.ProtocolVersion != Version:
		return nil, fmt.Errorf("%w: plugin %s speaks protocol %d, the host speaks %d", ErrMalformed, r.Name, r.ProtocolVersion, Version)
	case len(r.Tasks) == 0:
		return nil, fmt.Errorf("%w: plugin %s lists no task kinds", ErrMalformed, r.Name)
	}
	for _, t := range r.Tasks {
		known := false
		for _, k := range TaskKinds {
			known = known || k == t.Kind
		}
		if !known {
			return nil, fmt.Errorf("%w: plugin %s lists unknown task kind %q", ErrMalformed, r.Name, t.Kind)
		}
		for _, d := range t.Dims {
			if d != 2 && d != 3 {
				return nil, fmt.Errorf("%w: plugin %s lists task %s with dimension %d (want 2 or 3)", ErrMalformed, r.Name, t.Kind, d)
			}
		}
	}
	s, err := CompileSchema(r.ConfigSchema)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", r.Name, err)
	}
	return s, nil
}

// Schema is a compiled configuration schema.
type Schema struct{ s *jsonschema.Schema }

// CompileSchema compiles a JSON Schema. Errors wrap ErrMalformed.
func CompileSchema(doc []byte) (*Schema, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("%w: config schema is not JSON: %w", ErrMalformed, err)
	}
	c := jsonschema.NewCompiler()
	// A plugin's schema may not make the host read files or URLs: no loaders.
	c.UseLoader(jsonschema.SchemeURLLoader{})
	if err := c.AddResource("config.schema.json", v); err != nil {
		return nil, fmt.Errorf("%w: config schema: %w", ErrMalformed, err)
	}
	s, err := c.Compile("config.schema.json")
	if err != nil {
		return nil, fmt.Errorf("%w: config schema does not compile: %w", ErrMalformed, err)
	}
	return &Schema{s: s}, nil
}

// Check validates a JSON configuration against the schema.
func (s *Schema) Check(config []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(config))
	if err != nil {
		return fmt.Errorf("configuration is not JSON: %w", err)
	}
	if err := s.s.Validate(v); err != nil {
		return fmt.Errorf("configuration does not match the schema: %w", err)
	}
	return nil
}

// Validate checks a plan: at least one candidate, each named, each config valid against s.
// Errors wrap ErrMalformed.
func (r *PlanResponse) Validate(s *Schema) error {
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
