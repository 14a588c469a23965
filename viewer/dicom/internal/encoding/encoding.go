// Package encoding holds what the two DICOM readers of this module share about a file's
// bytes before its data set: the native transfer syntaxes, where the file meta information
// starts, and the guess of a data set's encoding when there is none. viewer/dicom's
// scanner (fast, for pixel data) and viewer/dicom/dataset's parser (every element, for
// SEG, RTSTRUCT and de-identification) both start here, so a file is recognised the same
// way by both.
package encoding

import "encoding/binary"

// The native transfer syntax UIDs (PS3.6 Annex A).
const (
	ImplicitVRLittleEndian = "1.2.840.10008.1.2"
	ExplicitVRLittleEndian = "1.2.840.10008.1.2.1"
	DeflatedExplicitVRLE   = "1.2.840.10008.1.2.1.99"
	ExplicitVRBigEndian    = "1.2.840.10008.1.2.2"
)

// Start says where a file's meta information (group 0002) begins: after the 128-byte
// preamble and "DICM" (132), at byte 0 for a file written without the preamble, or
// meta false when the file holds a bare data set, whose encoding Guess tells.
func Start(b []byte) (off int, meta bool) {
	switch {
	case len(b) >= 132 && string(b[128:132]) == "DICM":
		return 132, true
	case len(b) >= 8 && binary.LittleEndian.Uint16(b) == 0x0002 && IsVR(b[4:6]):
		return 0, true
	}
	return 0, false
}

// IsVR reports whether two bytes look like a value representation (two upper-case letters).
func IsVR(b []byte) bool {
	return len(b) == 2 && b[0] >= 'A' && b[0] <= 'Z' && b[1] >= 'A' && b[1] <= 'Z'
}

// Guess guesses the byte order and VR encoding of a data set without meta information
// from its first element, whose group should be small (0008 in practice), as other
// toolkits do for such legacy files; ok is false when the bytes do not look like one.
func Guess(b []byte) (bo binary.ByteOrder, implicit, ok bool) {
	if len(b) < 8 {
		return nil, false, false
	}
	explicit := IsVR(b[4:6])
	if g := binary.LittleEndian.Uint16(b); g >= 0x0002 && g <= 0x0028 {
		return binary.LittleEndian, !explicit, true
	}
	if g := binary.BigEndian.Uint16(b); g >= 0x0002 && g <= 0x0028 && explicit {
		return binary.BigEndian, false, true
	}
	return nil, false, false
}

// Syntax names the native transfer syntax of a data set read without meta information.
func Syntax(bo binary.ByteOrder, implicit bool) string {
	switch {
	case bo == binary.BigEndian:
		return ExplicitVRBigEndian
	case implicit:
		return ImplicitVRLittleEndian
	}
	return ExplicitVRLittleEndian
}

// AllZero reports whether b holds only zero bytes (the padding some writers leave after
// the last element).
func AllZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
