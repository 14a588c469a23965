package widget

import (
	"testing"

	"amid/assets"
)

// FuzzParseColors checks that ParseColors never panics and that what it accepts is a table
// of at least two colours; seeded with the bundled table and small hand-written ones.
func FuzzParseColors(f *testing.F) {
	f.Add(assets.LabelColors)
	f.Add([]byte(`{"colors":[[0,0,0,0],[255,0,0,255]]}`))
	f.Add([]byte(`{"colors":[[0,0,0,0],[255,0,0]]}`))
	f.Add([]byte(`{"colors":[[0,0,0,0],[-1,0,0,255]]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseColors("fuzz.json", b)
		if err == nil && len(c) < 2 {
			t.Fatalf("accepted %d colours", len(c))
		}
	})
}
