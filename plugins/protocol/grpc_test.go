package protocol

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
)

// fake is an in-process Plugin whose Train sends steps progress events and then either a
// result or an error.
type fake struct {
	steps   int
	failErr error
}

var fakeDesc = &DescribeResponse{
	Name: "fake", Version: "0.1.0", ProtocolVersion: Version,
	Tasks:        []TaskKind{{Kind: "segmentation", Dims: []int{2, 3}}},
	Metrics:      []string{"dice"},
	ConfigSchema: []byte(`{"type":"object","properties":{"lr":{"type":"number"}},"required":["lr"]}`),
	Hardware:     []string{"cpu"},
}

func (f *fake) Describe(context.Context, *DescribeRequest) (*DescribeResponse, error) {
	return fakeDesc, nil
}

func (f *fake) Plan(_ context.Context, r *PlanRequest) (*PlanResponse, error) {
	return &PlanResponse{Candidates: []Candidate{{Name: r.Task.Kind, Config: []byte(`{"lr":0.1}`), Rationale: string(r.Fingerprint), Device: "vulkan:0 GPU", MemoryBytes: 3 << 30}}}, nil
}

func (f *fake) Train(_ context.Context, r *TrainRequest, report func(*Progress) error) (*TrainResult, error) {
	for i := 1; i <= f.steps; i++ {
		if err := report(&Progress{Step: int64(i), TotalSteps: int64(f.steps), Losses: map[string]float64{"dice": 1 / float64(i)}, ETA: 1500 * time.Millisecond}); err != nil {
			return nil, err
		}
	}
	if f.failErr != nil {
		return nil, f.failErr
	}
	return &TrainResult{Checkpoint: r.WorkDir + "/ck", SHA256: "ab", Steps: int64(f.steps)}, nil
}

func (f *fake) Predict(_ context.Context, r *PredictRequest) (*PredictResponse, error) {
	out := &PredictResponse{}
	for _, c := range r.Cases {
		out.Predictions = append(out.Predictions, Prediction{CaseID: c.ID, Files: []string{r.OutputDir + "/" + c.ID}})
	}
	return out, nil
}

func dispense(t *testing.T, impl Plugin) Plugin {
	t.Helper()
	c, _ := plugin.TestPluginGRPCConn(t, false, PluginSet(impl))
	t.Cleanup(func() { c.Close() })
	raw, err := c.Dispense(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(Plugin)
}

func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	p := dispense(t, &fake{steps: 3})
	d, err := p.Describe(ctx, &DescribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d, fakeDesc) {
		t.Errorf("Describe = %+v, want %+v", d, fakeDesc)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan(ctx, &PlanRequest{Fingerprint: []byte(`{"n":2}`), Task: Task{Kind: "segmentation", Dims: 3}})
	if err != nil {
		t.Fatal(err)
	}
	var checked checker
	if err := plan.Validate(&checked); err != nil {
		t.Fatal(err)
	}
	if len(checked.configs) != 1 || string(checked.configs[0]) != `{"lr":0.1}` {
		t.Errorf("configurations checked: %q", checked.configs)
	}
	if c := plan.Candidates[0]; c.Device != "vulkan:0 GPU" || c.MemoryBytes != 3<<30 {
		t.Errorf("candidate planned for %q, %d bytes over the wire", c.Device, c.MemoryBytes)
	}
	if plan.Candidates[0].Rationale != `{"n":2}` {
		t.Errorf("fingerprint did not travel: %+v", plan)
	}
	var got []*Progress
	res, err := p.Train(ctx, &TrainRequest{WorkDir: "/w"}, func(pr *Progress) error { got = append(got, pr); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[2].Step != 3 || got[1].Losses["dice"] != 0.5 || got[0].ETA != 1500*time.Millisecond {
		t.Errorf("progress = %+v", got)
	}
	if res.Checkpoint != "/w/ck" || res.Steps != 3 {
		t.Errorf("result = %+v", res)
	}
	pr, err := p.Predict(ctx, &PredictRequest{OutputDir: "/o", Cases: []Case{{ID: "a"}, {ID: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Predictions) != 2 || pr.Predictions[1].Files[0] != "/o/b" {
		t.Errorf("Predict = %+v", pr)
	}
}

func TestTrainWithoutResultIsIncomplete(t *testing.T) {
	p := dispense(t, &fake{steps: 2, failErr: errors.New("out of memory")})
	n := 0
	_, err := p.Train(context.Background(), &TrainRequest{}, func(*Progress) error { n++; return nil })
	if !errors.Is(err, ErrIncomplete) {
		t.Fatalf("err = %v, want ErrIncomplete", err)
	}
	if n != 2 {
		t.Errorf("got %d progress events before the failure, want 2", n)
	}
}

// checker is a ConfigChecker that records the configurations it checks and returns err.
type checker struct {
	configs [][]byte
	err     error
}

func (c *checker) Check(config []byte) error {
	c.configs = append(c.configs, config)
	return c.err
}

func TestValidateRejects(t *testing.T) {
	bad := *fakeDesc
	bad.ProtocolVersion = Version + 1
	if err := bad.Validate(); !errors.Is(err, ErrMalformed) {
		t.Errorf("protocol mismatch: err = %v", err)
	}
	bad = *fakeDesc
	bad.Tasks = []TaskKind{{Kind: "segmentation", Dims: []int{4}}}
	if err := bad.Validate(); !errors.Is(err, ErrMalformed) {
		t.Errorf("dimension 4: err = %v", err)
	}
	if err := (&PlanResponse{Candidates: []Candidate{{Name: "x", Config: []byte(`{}`)}}}).Validate(&checker{err: errors.New("missing lr")}); !errors.Is(err, ErrMalformed) {
		t.Errorf("config the checker refuses: err = %v", err)
	}
	if err := (&PlanResponse{Candidates: []Candidate{{Name: "x", Config: []byte(`{}`), MaxSteps: -1}}}).Validate(&checker{}); !errors.Is(err, ErrMalformed) {
		t.Errorf("a negative step cap: %v", err)
	}
	if err := (&PlanResponse{}).Validate(&checker{}); !errors.Is(err, ErrMalformed) {
		t.Errorf("empty plan: err = %v", err)
	}
	if err := (&Progress{Step: 3}).Validate(4); !errors.Is(err, ErrMalformed) {
		t.Errorf("step going back: err = %v", err)
	}
	if err := (&TrainResult{Checkpoint: "c", SHA256: "xyz"}).Validate(); !errors.Is(err, ErrMalformed) {
		t.Errorf("bad sha: err = %v", err)
	}
}
