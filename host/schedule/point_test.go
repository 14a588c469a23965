package schedule

import (
	"encoding/json"
	"testing"
)

// TestPointUndefinedIsNull: a curve's undefined point is written with a null score (issue
// 32: undefined is a value, not a 0), a defined one with its score, and both read back.
func TestPointUndefinedIsNull(t *testing.T) {
	for _, tc := range []struct {
		p    Point
		want string
	}{
		{Point{Step: 10, Score: 0.25}, `{"step":10,"score":0.25}`},
		{Point{Step: 20, Undefined: true}, `{"step":20,"undefined":true,"score":null}`},
	} {
		b, err := json.Marshal(tc.p)
		if err != nil || string(b) != tc.want {
			t.Errorf("%+v: %s (%v), want %s", tc.p, b, err, tc.want)
		}
		var back Point
		if err := json.Unmarshal(b, &back); err != nil || back != tc.p {
			t.Errorf("%s read back as %+v (%v)", b, back, err)
		}
	}
}
