//go:build ignore

// Command sample writes the bundled sample study, assets/sample/head_ct.nii.gz and
// head_ct_labels.nii.gz, from synth.SampleStudy. Run from the module root:
// go run assets/gen/sample.go
package main

import (
	"log"
	"os"

	"amid/host/synth"
	"amid/viewer/nifti"
)

func main() {
	ct, labels, err := synth.SampleStudy()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll("assets/sample", 0o755); err != nil {
		log.Fatal(err)
	}
	if err := nifti.Write("assets/sample/head_ct.nii.gz", ct); err != nil {
		log.Fatal(err)
	}
	if err := nifti.Write("assets/sample/head_ct_labels.nii.gz", labels); err != nil {
		log.Fatal(err)
	}
}
