package dicom

import (
	"encoding/binary"
	"errors"
	"fmt"

	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/uid"
)

// ErrUnsupported is wrapped by errors about valid DICOM content this package does not
// decode: compressed transfer syntaxes other than RLE Lossless and JPEG Baseline, palette
// colour and other photometric interpretations, 1-bit pixels.
var ErrUnsupported = errors.New("unsupported DICOM encoding")

// codec is how the pixel data of a transfer syntax is decoded.
type codec uint8

const (
	native codec = iota
	rle
	jpegBaseline
)

type syntax struct {
	bo       binary.ByteOrder
	implicit bool
	deflate  bool
	codec    codec
}

// Transfer syntax UIDs this package reads (PS3.6 Annex A).
const (
	ImplicitVRLittleEndian = "1.2.840.10008.1.2"
	ExplicitVRLittleEndian = "1.2.840.10008.1.2.1"
	DeflatedExplicitVRLE   = "1.2.840.10008.1.2.1.99"
	ExplicitVRBigEndian    = "1.2.840.10008.1.2.2"
	JPEGBaseline           = "1.2.840.10008.1.2.4.50"
	RLELossless            = "1.2.840.10008.1.2.5"
)

var syntaxes = map[string]syntax{
	ImplicitVRLittleEndian: {bo: binary.LittleEndian, implicit: true},
	ExplicitVRLittleEndian: {bo: binary.LittleEndian},
	DeflatedExplicitVRLE:   {bo: binary.LittleEndian, deflate: true},
	ExplicitVRBigEndian:    {bo: binary.BigEndian},
	JPEGBaseline:           {bo: binary.LittleEndian, codec: jpegBaseline},
	RLELossless:            {bo: binary.LittleEndian, codec: rle},
}

// SupportedTransferSyntaxes lists the transfer syntax UIDs whose pixel data this package
// decodes.
func SupportedTransferSyntaxes() []string {
	return []string{ImplicitVRLittleEndian, ExplicitVRLittleEndian, DeflatedExplicitVRLE,
		ExplicitVRBigEndian, JPEGBaseline, RLELossless}
}

// SyntaxName returns the name of a transfer syntax UID from the DICOM dictionary, or
// "unknown transfer syntax" when the UID is not one.
func SyntaxName(ts string) string {
	if e, err := uid.Lookup(ts); err == nil && e.Type == uid.TypeTransferSyntax {
		return e.Name
	}
	return "unknown transfer syntax"
}

// lookupSyntax returns how to read a transfer syntax, or an error naming it when this
// package cannot decode its pixel data.
func lookupSyntax(ts string) (syntax, error) {
	if s, ok := syntaxes[ts]; ok {
		return s, nil
	}
	return syntax{}, fmt.Errorf("%w: %w: transfer syntax %s (%s) is not supported; supported are native (implicit/explicit little, explicit big endian, deflated), RLE Lossless and JPEG Baseline", ErrUnsupported, volume.ErrFormat, SyntaxName(ts), ts)
}

// syntaxFor names the native transfer syntax of a data set read without meta information.
func syntaxFor(bo binary.ByteOrder, implicit bool) string {
	switch {
	case bo == binary.BigEndian:
		return ExplicitVRBigEndian
	case implicit:
		return ImplicitVRLittleEndian
	}
	return ExplicitVRLittleEndian
}
