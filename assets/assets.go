// Package assets holds the files AMID ships inside its binaries: the application icon and
// the bundled sample study (a generated head CT with its label map, made by host/synth and
// written by assets/gen/sample.go; licence-clean).
package assets

import _ "embed"

// Icon is the application icon (PNG, 256×256), drawn by assets/gen/icon.go.
//
//go:embed icon.png
var Icon []byte

// SampleCT is the sample head CT (NIfTI-1, gzip, int16 HU) and SampleLabels its label map
// (uint8; the values of synth.HeadCTLabels).
var (
	//go:embed sample/head_ct.nii.gz
	SampleCT []byte
	//go:embed sample/head_ct_labels.nii.gz
	SampleLabels []byte
)

// Sample file paths relative to the module root, for programs run from a checkout.
const (
	SampleCTPath     = "assets/sample/head_ct.nii.gz"
	SampleLabelsPath = "assets/sample/head_ct_labels.nii.gz"
)
