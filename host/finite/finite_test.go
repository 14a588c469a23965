package finite

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

type inner struct {
	Score float64            `json:"score"`
	Extra map[string]float64 `json:"extra,omitempty"`
}

type record struct {
	Name  string          `json:"name"`
	Lanes []*inner        `json:"lanes"`
	Raw   json.RawMessage `json:"raw,omitempty"`
	Skip  float64         `json:"-"`
	inner
}

// TestCheck: every place a float lives in a record (a field, a slice, a map, behind a
// pointer, an embedded struct), each non-finite value named with its JSON path; and a
// record without one passes, as json.Marshal agrees.
func TestCheck(t *testing.T) {
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		for _, c := range []struct {
			r    record
			path string
		}{
			{record{Lanes: []*inner{{}, {Score: bad}}}, "lanes[1].score"},
			{record{Lanes: []*inner{{Extra: map[string]float64{"plcc": bad}}}}, "lanes[0].extra.plcc"},
			{record{inner: inner{Score: bad}}, "score"},
		} {
			err := Check(&c.r)
			if err == nil || !strings.HasPrefix(err.Error(), c.path+" is ") {
				t.Errorf("%v at %s: %v", bad, c.path, err)
			}
			if _, jerr := json.Marshal(&c.r); jerr == nil {
				t.Errorf("json.Marshal took %v at %s", bad, c.path)
			}
		}
	}
	if err := Check(math.NaN()); err == nil || !strings.HasPrefix(err.Error(), "the value is NaN") {
		t.Errorf("a bare NaN: %v", err)
	}
	ok := record{Name: "x", Lanes: []*inner{nil, {Score: 1, Extra: map[string]float64{"a": 0}}}, Raw: json.RawMessage(`{"v":1}`), Skip: math.NaN()}
	if err := Check(&ok); err != nil {
		t.Errorf("a finite record: %v", err)
	}
	if _, err := json.Marshal(&ok); err != nil {
		t.Errorf("json.Marshal of the finite record: %v", err)
	}
}
