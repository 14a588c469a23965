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
	`{"lane":"cnn","grid":[1,32,32],"widths":[8,16],"batch":8,"steps":3,"loss":{"mse":1,"rank":1,"temperature":0.1},"folds":3,"snap":"off"}`,
	`{"lane":"cnn","grid":[8,16,16],"widths":[4],"batch":2,"steps":3,"intensity":"zscore","rot90":true}`,
	`{"lane":"cnn","grid":[1,32,32],"widths":[8],"batch":1,"steps":3,"loss":{"corr":1}}`,
	`{"lane":"cnn","loss":{"mse":-1}}`,
}
