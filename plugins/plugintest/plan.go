package plugintest

import (
	"context"
	"strings"
	"testing"

	"amid/plugins/protocol"
	"amid/plugins/protocol/schema"
)

// Planner is what CheckPlan needs of a plugin, in process or over gRPC: its description
// (the configuration schema) and its planning.
type Planner interface {
	Describe(ctx context.Context, req *protocol.DescribeRequest) (*protocol.DescribeResponse, error)
	Plan(ctx context.Context, req *protocol.PlanRequest) (*protocol.PlanResponse, error)
}

// CheckPlan plans req with p and fails the test unless the plan is valid against the
// configuration schema p describes, and every candidate has a rationale and a
// configuration parse accepts (the plugin's own parser, with its defaults). It returns the
// plan and its candidates' names, joined by spaces, for the plugin's own checks.
func CheckPlan(t testing.TB, p Planner, req *protocol.PlanRequest, parse func(config []byte) error) (*protocol.PlanResponse, string) {
	t.Helper()
	d, err := p.Describe(context.Background(), &protocol.DescribeRequest{})
	if err != nil {
		t.Fatalf("plan: Describe: %v", err)
	}
	s, err := schema.Describe(d)
	if err != nil {
		t.Fatalf("plan: the configuration schema: %v", err)
	}
	r, err := p.Plan(context.Background(), req)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if err := r.Validate(s); err != nil {
		t.Fatalf("plan: %v", err)
	}
	var names []string
	for _, c := range r.Candidates {
		names = append(names, c.Name)
		if err := parse(c.Config); err != nil {
			t.Errorf("plan: candidate %s: %v", c.Name, err)
		}
		if c.Rationale == "" {
			t.Errorf("plan: candidate %s has no rationale", c.Name)
		}
	}
	return r, strings.Join(names, " ")
}
