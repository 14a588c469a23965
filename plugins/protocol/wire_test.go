package protocol

import (
	"reflect"
	"testing"
	"time"
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
