package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"amid/host/planner"
	"amid/host/planner/llm"
)

// Planner kinds a run records and a resumed run rebuilds.
const (
	PlannerRules = "rules"
	PlannerLLM   = "llm"
)

// DefaultPingTimeout bounds the check that a resumed run's LLM endpoint still answers.
const DefaultPingTimeout = 15 * time.Second

// PlannerSpec is the planner that plans a run, as run.json records it: its kind and, for
// the LLM planner, the endpoint's identity. The API key is never recorded, only the name of
// the environment variable it is read from.
type PlannerSpec struct {
	Kind      string `json:"kind"` // PlannerRules or PlannerLLM
	BaseURL   string `json:"base_url,omitempty"`
	Model     string `json:"model,omitempty"`
	APIKeyEnv string `json:"api_key_env,omitempty"`
}

// LLMSpec is the specification of the LLM planner asking the endpoint of cfg.
func LLMSpec(cfg llm.Config) PlannerSpec {
	return PlannerSpec{Kind: PlannerLLM, BaseURL: cfg.BaseURL, Model: cfg.Model, APIKeyEnv: cfg.APIKeyEnv}
}

// Name is the planner's name in the run's log and audit: rules, or llm:<model>.
func (s PlannerSpec) Name() string {
	if s.Kind == PlannerLLM {
		return PlannerLLM + ":" + s.Model
	}
	return s.Kind
}

// LLMConfig is the endpoint configuration of an LLM planner's specification.
func (s PlannerSpec) LLMConfig() llm.Config {
	return llm.Config{BaseURL: s.BaseURL, Model: s.Model, APIKeyEnv: s.APIKeyEnv}
}

// NewPlanner builds the planner of spec: nil for the rules (the runner's default), an LLM
// planner falling back to the rules for PlannerLLM. log receives the LLM planner's events and
// may be nil.
func NewPlanner(spec PlannerSpec, log func(event string, fields map[string]any)) (planner.Planner, error) {
	switch spec.Kind {
	case PlannerRules, "":
		return nil, nil
	case PlannerLLM:
		cfg := spec.LLMConfig()
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("planner: %w", err)
		}
		return llm.New(cfg, planner.Rules{}, log), nil
	}
	return nil, fmt.Errorf("planner %q is not %s or %s", spec.Kind, PlannerRules, PlannerLLM)
}

// ResumeOptions say how a resumed run's planner is rebuilt.
type ResumeOptions struct {
	// Planner, when set (PlannerRules or PlannerLLM), replaces the planner the run recorded.
	Planner string
	// LLM is the endpoint as the settings give it now; its non-empty fields replace those
	// the run recorded.
	LLM llm.Config
	// Log receives the LLM planner's events; it may be nil.
	Log func(event string, fields map[string]any)
	// PingTimeout bounds the check that the endpoint answers (DefaultPingTimeout when zero).
	PingTimeout time.Duration
}

// Reopen returns the runner of an existing run folder, to resume it with the planner the
// run was started with, rebuilt from the recorded identity and the current settings. When
// that planner is the LLM one and its endpoint is not configured or does not answer, the
// run continues with the rules, and the first session of Run says so in its log, its notes
// and the audit log. A state written before planners were recorded resumes with the rules.
func Reopen(ctx context.Context, dir string, o ResumeOptions, env Env) (*Runner, error) {
	if o.Planner != "" && o.Planner != PlannerRules && o.Planner != PlannerLLM {
		return nil, fmt.Errorf("resume %s: planner %q is not %s or %s", dir, o.Planner, PlannerRules, PlannerLLM)
	}
	r, err := Open(dir, nil, env)
	if err != nil {
		return nil, err
	}
	st := r.st
	spec := PlannerSpec{Kind: PlannerRules}
	if st.PlannerSpec != nil {
		spec = *st.PlannerSpec
	}
	if o.Planner != "" {
		spec.Kind = o.Planner
	}
	if spec.Kind == PlannerLLM {
		spec = mergeLLM(spec, o.LLM)
	}
	switch {
	case spec.Kind == PlannerRules:
	case phaseIndex(st.Phase) > phaseIndex(PhaseExplore):
		// Only planning and the refinement after exploration ask the planner.
	case spec.Kind != PlannerLLM:
		r.resumeNote = fmt.Sprintf("The run's planner %q cannot be rebuilt, so the run continues with the rules planner.", spec.Kind)
		spec = PlannerSpec{Kind: PlannerRules}
	default:
		p, err := reachable(ctx, spec, o)
		if errors.Is(err, errNotConfigured) {
			r.resumeNote = "The LLM planner is no longer configured (no endpoint or model is set), so the run continues with the rules planner."
			return r, nil
		}
		if err != nil {
			r.resumeNote = fmt.Sprintf("The LLM planner (model %q at %q) is not available (%v), so the run continues with the rules planner.", spec.Model, spec.BaseURL, err)
			return r, nil // the recorded planner stays, for a later resume
		}
		r.planner = p
	}
	if st.PlannerSpec != nil || spec.Kind != PlannerRules {
		st.PlannerSpec = &spec
		st.Planner = spec.Name()
	}
	return r, nil
}

// errNotConfigured means the LLM planner has no endpoint or no model.
var errNotConfigured = errors.New("no LLM endpoint or model is configured")

// mergeLLM fills spec's endpoint with the non-empty fields of the current settings.
func mergeLLM(spec PlannerSpec, cur llm.Config) PlannerSpec {
	if cur.BaseURL != "" {
		spec.BaseURL = cur.BaseURL
	}
	if cur.Model != "" {
		spec.Model = cur.Model
	}
	if cur.APIKeyEnv != "" {
		spec.APIKeyEnv = cur.APIKeyEnv
	}
	return spec
}

// reachable builds the LLM planner of spec once its endpoint has answered.
func reachable(ctx context.Context, spec PlannerSpec, o ResumeOptions) (planner.Planner, error) {
	if spec.BaseURL == "" || spec.Model == "" {
		return nil, errNotConfigured
	}
	p, err := NewPlanner(spec, o.Log)
	if err != nil {
		return nil, err
	}
	wait := o.PingTimeout
	if wait <= 0 {
		wait = DefaultPingTimeout
	}
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := llm.Ping(pctx, spec.LLMConfig()); err != nil {
		return nil, err
	}
	return p, nil
}
