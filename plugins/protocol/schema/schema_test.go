package schema

import (
	"errors"
	"strings"
	"testing"

	"amid/plugins/protocol"
)

// desc is a valid description whose schema requires a number "lr".
var desc = &protocol.DescribeResponse{
	Name: "fake", Version: "0.1.0", ProtocolVersion: protocol.Version,
	Tasks:        []protocol.TaskKind{{Kind: "segmentation", Dims: []int{2, 3}}},
	Metrics:      []string{"dice"},
	ConfigSchema: []byte(`{"type":"object","properties":{"lr":{"type":"number"}},"required":["lr"]}`),
	Hardware:     []string{"cpu"},
}

func TestDescribe(t *testing.T) {
	s, err := Describe(desc)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Check([]byte(`{"lr":0.1}`)); err != nil {
		t.Errorf("valid config: %v", err)
	}
	if err := s.Check([]byte(`{"lr":"fast"}`)); err == nil || !strings.Contains(err.Error(), "does not match the schema") {
		t.Errorf("lr not a number: err = %v", err)
	}
	if err := s.Check([]byte(`{`)); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("broken JSON: err = %v", err)
	}
	plan := &protocol.PlanResponse{Candidates: []protocol.Candidate{{Name: "x", Config: []byte(`{}`)}}}
	if err := plan.Validate(s); !errors.Is(err, protocol.ErrMalformed) || !strings.Contains(err.Error(), `plan candidate "x"`) {
		t.Errorf("config missing lr: err = %v", err)
	}
}

func TestDescribeRejects(t *testing.T) {
	for name, change := range map[string]func(d *protocol.DescribeResponse){
		"protocol mismatch":       func(d *protocol.DescribeResponse) { d.ProtocolVersion = protocol.Version + 1 },
		"schema not JSON":         func(d *protocol.DescribeResponse) { d.ConfigSchema = []byte(`{`) },
		"schema does not compile": func(d *protocol.DescribeResponse) { d.ConfigSchema = []byte(`{"type": 12}`) },
		"schema loads a file":     func(d *protocol.DescribeResponse) { d.ConfigSchema = []byte(`{"$ref":"file:///etc/hostname"}`) },
	} {
		d := *desc
		change(&d)
		if _, err := Describe(&d); !errors.Is(err, protocol.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}
