package protocol

import (
	"reflect"
	"testing"
	"time"

	"amid/plugins/compute"
)

// TestTrainRequestWire checks that every field of a TrainRequest, the time limit and the
// stop step included, survives the trip through the wire types.
func TestTrainRequestWire(t *testing.T) {
	in := &TrainRequest{
		LaneID: "l1", Task: Task{Kind: "segmentation", Dims: 3, Metric: "dice", Spec: []byte(`{}`)},
		Config: []byte(`{"a":1}`), Train: []Case{{ID: "a", Images: []string{"/x"}, Label: "/y"}},
		Validation: []Case{{ID: "b", Images: []string{"/z"}}}, WorkDir: "/w", ResumeFrom: "/w/c",
		Seed: 7, TimeLimit: 1500 * time.Millisecond, Until: 120,
	}
	out := trainRequestFromPB(trainRequestToPB(in))
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
}

// TestPlanWire checks that a plan's step costs, memory, step caps, skipped lanes and calibration
// survive the wire, and the calibration a request sends back.
func TestPlanWire(t *testing.T) {
	req := &PlanRequest{Fingerprint: []byte(`{}`), Task: Task{Kind: "segmentation", Dims: 3, Spec: []byte(`{}`)}, Calibration: []byte(`{"2d":1}`)}
	if got := planRequestFromPB(planRequestToPB(req)); !reflect.DeepEqual(got, req) {
		t.Errorf("plan request:\n got %+v\nwant %+v", got, req)
	}
	resp := &PlanResponse{
		Candidates: []Candidate{{Name: "2d", Config: []byte(`{}`), Rationale: "r", StepSeconds: 0.25, MemoryBytes: 1 << 30}, {Name: "forest", Config: []byte(`{}`), MaxSteps: 64}},
		Skipped:    []string{"3d_fullres: too slow"}, Calibration: []byte(`{"2d":1}`),
	}
	if got := planFromPB(planToPB(resp)); !reflect.DeepEqual(got, resp) {
		t.Errorf("plan:\n got %+v\nwant %+v", got, resp)
	}
}

// TestComputeWire checks that the compute identity survives the wire in every response
// that carries it, and that a plugin that reports none stays zero.
func TestComputeWire(t *testing.T) {
	id := compute.Identity{Engine: "0.2.0", Device: "cpu", BLAS: "openblas 0.3.21", Core: "Haswell", Workers: 2}
	d := &DescribeResponse{Name: "p", Tasks: []TaskKind{{Kind: "segmentation", Dims: []int{3}}}, Metrics: []string{}, Compute: id}
	if got := describeFromPB(describeToPB(d)); !reflect.DeepEqual(got, d) {
		t.Errorf("describe:\n got %+v\nwant %+v", got, d)
	}
	r := &TrainResult{Checkpoint: "/c", SHA256: "ab", Steps: 3, Validation: map[string]float64{"dice": 0.5}, Compute: id}
	if got := resultFromPB(resultToPB(r)); !reflect.DeepEqual(got, r) {
		t.Errorf("result:\n got %+v\nwant %+v", got, r)
	}
	// A confidence travels, 0 included; none stays none (a plugin that does not say); so
	// does a probability map.
	zero, sure := 0.0, 0.93
	p := &PredictResponse{Predictions: []Prediction{{CaseID: "a", Files: []string{"/a"}}, {CaseID: "b", Files: []string{"/b"}, Confidence: &sure, Probabilities: "/b_probabilities.nii.gz"},
		{CaseID: "c", Files: []string{"/c"}, Confidence: &zero}}, Compute: id}
	if got := predictFromPB(predictToPB(p)); !reflect.DeepEqual(got, p) {
		t.Errorf("predict:\n got %+v\nwant %+v", got, p)
	}
	for _, asked := range []bool{false, true} {
		q := &PredictRequest{Task: Task{Kind: "segmentation", Dims: 3}, Config: []byte("{}"), Checkpoint: "/k", Cases: []Case{{ID: "a", Images: []string{"/a"}}}, OutputDir: "/o", Probabilities: asked}
		if got := predictRequestFromPB(predictRequestToPB(q)); !reflect.DeepEqual(got, q) {
			t.Errorf("predict request:\n got %+v\nwant %+v", got, q)
		}
	}
	if got := predictFromPB(predictToPB(&PredictResponse{Predictions: []Prediction{}})); !got.Compute.IsZero() {
		t.Errorf("no identity reported, got %+v", got.Compute)
	}
}
