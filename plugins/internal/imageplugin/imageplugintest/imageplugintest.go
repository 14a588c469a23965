// Package imageplugintest is the test setup AMID's image-level plugins (classification,
// image quality) share: writing label files ([WriteLabel]) and the fuzz test of a plugin's
// configuration parser ([FuzzConfig]). Building the plugin once for the tests that start
// it is plugintest.Main, which every plugin's TestMain calls.
package imageplugintest

import (
	"encoding/json"
	"reflect"
	"testing"

	"amid/plugins/taskspec"
)

// WriteLabel writes the annotation a as the label file at path.
func WriteLabel(t testing.TB, path string, a *taskspec.Annotation) {
	t.Helper()
	if err := a.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// FuzzConfig fuzzes a plugin's configuration parser from seeds: parse never panics, and a
// configuration it accepts for a task of 0 (unknown), 2 or 3 dimensions survives a round
// trip through JSON unchanged (what a checkpoint records is what prediction reads).
func FuzzConfig[C any](f *testing.F, seeds []string, parse func(b []byte, dims int) (C, error)) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, dims := range []int{0, 2, 3} {
			c, err := parse(b, dims)
			if err != nil {
				continue
			}
			out, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			c2, err := parse(out, dims)
			if err != nil {
				t.Fatalf("%s accepted, its re-encoding %s refused: %v", b, out, err)
			}
			if !reflect.DeepEqual(c, c2) {
				t.Fatalf("%s: %+v became %+v", b, c, c2)
			}
		}
	})
}
