package assets

import _ "embed"

// LabelColors is the label colour table (JSON: {"description": …, "colors": [[r,g,b,a], …]},
// index = label value, 0 transparent, 256 entries), written by assets/colors/gen.py.
//
//go:embed colors/labels.json
var LabelColors []byte
