package widget

import (
	"encoding/json"
	"fmt"
	"image/color"

	"amid/assets"
)

// ParseColors reads a label colour table in the format of assets/colors/labels.json:
// {"colors": [[r, g, b, a], …]} indexed by label value.
func ParseColors(name string, b []byte) ([]color.RGBA, error) {
	var doc struct {
		Colors [][]int `json:"colors"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: colour table is not valid JSON: %w", name, err)
	}
	if len(doc.Colors) < 2 {
		return nil, fmt.Errorf("%s: colour table has %d entries, want at least 2", name, len(doc.Colors))
	}
	out := make([]color.RGBA, len(doc.Colors))
	for i, c := range doc.Colors {
		if len(c) != 4 {
			return nil, fmt.Errorf("%s: colour %d has %d components, want 4 (r, g, b, a)", name, i, len(c))
		}
		for _, x := range c {
			if x < 0 || x > 255 {
				return nil, fmt.Errorf("%s: colour %d component %d is outside 0..255", name, i, x)
			}
		}
		out[i] = color.RGBA{uint8(c[0]), uint8(c[1]), uint8(c[2]), uint8(c[3])}
	}
	return out, nil
}

// DefaultColors returns the bundled label colour table (assets.LabelColors).
func DefaultColors() []color.RGBA {
	c, err := ParseColors("assets/colors/labels.json", assets.LabelColors)
	if err != nil {
		panic(err) // the embedded table is tested; failure is a build defect
	}
	return c
}
