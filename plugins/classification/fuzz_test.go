package main

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParseConfig: parseConfig never panics, and a configuration it accepts survives a
// round trip through JSON unchanged (what a checkpoint records is what prediction reads).
func FuzzParseConfig(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, dims := range []int{0, 2, 3} {
			c, err := parseConfig(b, dims)
			if err != nil {
				continue
			}
			out, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			c2, err := parseConfig(out, dims)
			if err != nil {
				t.Fatalf("%s accepted, its re-encoding %s refused: %v", b, out, err)
			}
			if !reflect.DeepEqual(c, c2) {
				t.Fatalf("%s: %+v became %+v", b, c, c2)
			}
		}
	})
}

var seeds = []string{
	`{"lane":"prior"}`,
	`{"lane":"cnn","grid":[16,16,16],"widths":[4,8],"batch":2,"steps":3,"heads":"attributes","roi":[[0,1],[0.2,0.8],[0,0.5]]}`,
	`{"lane":"cnn","grid":[1,32,32],"widths":[4],"batch":2,"steps":3,"class_weights":"none","flip":[false,true,true],"jitter":true}`,
	`{"lane":"cnn","grid":[0,16,16],"widths":[],"batch":0,"steps":3}`,
}
