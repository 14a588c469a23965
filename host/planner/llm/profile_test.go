package llm

import (
	"encoding/json"
	"reflect"
	"testing"

	"amid/host/profile"
	"amid/plugins/taskspec"
)

// fill sets every field of v to a value that is not zero: strings "CT", numbers 2 (or 0.5),
// one element per slice and one entry per map, keyed by key.
func fill(v reflect.Value, key string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("CT")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(2)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(2)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), key)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), key)
			}
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), key)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), key)
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, key)
		v.SetMapIndex(reflect.ValueOf(key), e)
	}
}

// Every member of the profiler's fingerprint reaches the request: its keys are known, and
// the maps keyed by the task's class and attribute names (or their concatenations) pass
// when the task names them.
func TestProfileFingerprintPasses(t *testing.T) {
	var fp profile.Fingerprint
	fill(reflect.ValueOf(&fp).Elem(), "benignround")
	b, err := json.Marshal(fp)
	if err != nil {
		t.Fatal(err)
	}
	in := testInput()
	in.Fingerprint = b
	in.Task = json.RawMessage(`{"attributes":[{"name":"shape","classes":["round","oval"],"group":"g"},{"name":"kind","classes":["benign","malignant"],"group":"g"}]}`)
	msg, rep, err := build(NewScrubber(nil, nil), in)
	if err != nil {
		t.Fatal(err)
	}
	var u payload
	if err := json.Unmarshal(msg, &u); err != nil {
		t.Fatal(err)
	}
	if got, want := compact(t, u.Fingerprint), compact(t, b); got != want || rep.Dropped != 0 {
		t.Errorf("fingerprint sent (%d dropped):\n got %s\nwant %s", rep.Dropped, got, want)
	}

	// Without the task naming them, the map keys do not pass.
	in.Task = json.RawMessage(`{"attributes":[]}`)
	msg, rep, err = build(NewScrubber(nil, nil), in)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(msg, &u); err != nil {
		t.Fatal(err)
	}
	if rep.Dropped == 0 || compact(t, u.Fingerprint) == compact(t, b) {
		t.Errorf("keys the task does not name passed: %s", u.Fingerprint)
	}
}

// The plugin-facing task spec the run sends as the task passes whole.
func TestTaskSpecPasses(t *testing.T) {
	spec := taskspec.Spec{ID: "isles22", Kind: "segmentation", Dims: 3, Modality: "MR", Channels: []string{"dwi", "adc", "flair"},
		Labels: []taskspec.Label{{Value: 0, Name: "background"}, {Value: 1, Name: "lesion"}}, Output: ".nii.gz", Metric: "dice",
		Attributes: []taskspec.Attribute{{Name: "quadrant", Classes: []string{"q1", "q2"}}}}
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	out, rep := NewScrubber(nil, nil).Document(b)
	if compact(t, out) != compact(t, b) || rep != (Report{}) {
		t.Errorf("task spec sent as %s (%+v), want %s", out, rep, b)
	}
}
