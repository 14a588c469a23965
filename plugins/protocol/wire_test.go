package protocol

import (
	"reflect"
	"testing"
	"time"

	"amid/plugins/compute"
)

// TestTrainRequestWire checks that every field of a TrainRequest, the time limit
// included, survives the trip through the wire types.
func TestTrainRequestWire(t *testing.T) {
	in := &TrainRequest{
		LaneID: "l1", Task: Task{Kind: "segmentation", Dims: 3, Metric: "dice", Spec: []byte(`{}`)},
		Config: []byte(`{"a":1}`), Train: []Case{{ID: "a", Images: []string{"/x"}, Label: "/y"}},
		Validation: []Case{{ID: "b", Images: []string{"/z"}}}, WorkDir: "/w", ResumeFrom: "/w/c",
		Seed: 7, TimeLimit: 1500 * time.Millisecond,
	}
	out := trainRequestFromPB(trainRequestToPB(in))
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
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
	p := &PredictResponse{Predictions: []Prediction{{CaseID: "a", Files: []string{"/a"}}}, Compute: id}
	if got := predictFromPB(predictToPB(p)); !reflect.DeepEqual(got, p) {
		t.Errorf("predict:\n got %+v\nwant %+v", got, p)
	}
	if got := predictFromPB(predictToPB(&PredictResponse{Predictions: []Prediction{}})); !got.Compute.IsZero() {
		t.Errorf("no identity reported, got %+v", got.Compute)
	}
}
