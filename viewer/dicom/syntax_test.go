package dicom

import (
	"errors"
	"strings"
	"testing"

	"amid/viewer/volume"
)

// TestUnsupportedSyntaxNamesSupported checks that the error for a transfer syntax without a
// codec here names every syntax of SupportedTransferSyntaxes (JPEG 2000 among them), and
// that every supported syntax has a name in the DICOM dictionary to be named by.
// 1.2.840.10008.1.2.4.100 is MPEG2 Main Profile / Main Level (PS3.6 Annex A), a video
// syntax no codec here decodes.
func TestUnsupportedSyntaxNamesSupported(t *testing.T) {
	const mpeg2 = "1.2.840.10008.1.2.4.100"
	_, err := lookupSyntax(mpeg2)
	if !errors.Is(err, ErrUnsupported) || !errors.Is(err, volume.ErrFormat) {
		t.Fatalf("lookupSyntax(%s) = %v, want ErrUnsupported and ErrFormat", mpeg2, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, mpeg2) {
		t.Errorf("%q does not name the refused syntax %s", msg, mpeg2)
	}
	sup := SupportedTransferSyntaxes()
	if len(sup) != len(syntaxes) {
		t.Fatalf("SupportedTransferSyntaxes lists %d syntaxes, the table has %d", len(sup), len(syntaxes))
	}
	j2k := false
	for _, ts := range sup {
		name := SyntaxName(ts)
		if name == SyntaxName("") {
			t.Errorf("supported syntax %s has no name in the dictionary", ts)
		}
		if !strings.Contains(msg, name) {
			t.Errorf("%q does not name the supported %s (%s)", msg, name, ts)
		}
		j2k = j2k || ts == JPEG2000 || ts == JPEG2000Lossless
	}
	if !j2k {
		t.Errorf("JPEG 2000, decoded by viewer/dicom/codec/jpeg2000, is not in SupportedTransferSyntaxes")
	}
}
