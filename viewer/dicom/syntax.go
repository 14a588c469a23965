package dicom

import (
	"amid/viewer/dicom/internal/encoding"

	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"

	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/uid"
)

// ErrUnsupported is wrapped by errors about valid DICOM content this package does not
// decode: transfer syntaxes outside SupportedTransferSyntaxes (MPEG, HEVC, JPEG XL,
// High-Throughput JPEG 2000, …), palette colour and other
// photometric interpretations, 1-bit pixels, and the rare codings the JPEG decoders
// refuse (see their packages).
var ErrUnsupported = errors.New("unsupported DICOM encoding")

type syntax struct {
	bo       binary.ByteOrder
	implicit bool
	deflate  bool
	codec    *codec // nil for native pixel data
}

// Transfer syntax UIDs this package reads (PS3.6 Annex A).
const (
	ImplicitVRLittleEndian = encoding.ImplicitVRLittleEndian
	ExplicitVRLittleEndian = encoding.ExplicitVRLittleEndian
	DeflatedExplicitVRLE   = encoding.DeflatedExplicitVRLE
	ExplicitVRBigEndian    = encoding.ExplicitVRBigEndian
	JPEGBaseline           = "1.2.840.10008.1.2.4.50"
	JPEGExtended           = "1.2.840.10008.1.2.4.51" // processes 2 and 4: 8- and 12-bit DCT
	JPEGLossless           = "1.2.840.10008.1.2.4.57" // process 14, any predictor
	JPEGLosslessSV1        = "1.2.840.10008.1.2.4.70" // process 14, predictor 1
	JPEGLSLossless         = "1.2.840.10008.1.2.4.80"
	JPEGLSNearLossless     = "1.2.840.10008.1.2.4.81"
	JPEG2000Lossless       = "1.2.840.10008.1.2.4.90"
	JPEG2000               = "1.2.840.10008.1.2.4.91" // lossless or lossy
	RLELossless            = "1.2.840.10008.1.2.5"
)

var syntaxes = map[string]syntax{
	ImplicitVRLittleEndian: {bo: binary.LittleEndian, implicit: true},
	ExplicitVRLittleEndian: {bo: binary.LittleEndian},
	DeflatedExplicitVRLE:   {bo: binary.LittleEndian, deflate: true},
	ExplicitVRBigEndian:    {bo: binary.BigEndian},
	JPEGBaseline:           {bo: binary.LittleEndian, codec: jpegBaselineCodec},
	JPEGExtended:           {bo: binary.LittleEndian, codec: jpegExtendedCodec},
	JPEGLossless:           {bo: binary.LittleEndian, codec: jpegLosslessCodec},
	JPEGLosslessSV1:        {bo: binary.LittleEndian, codec: jpegLosslessCodec},
	JPEGLSLossless:         {bo: binary.LittleEndian, codec: jpegLSCodec},
	JPEGLSNearLossless:     {bo: binary.LittleEndian, codec: jpegLSCodec},
	JPEG2000Lossless:       {bo: binary.LittleEndian, codec: jpeg2000Codec},
	JPEG2000:               {bo: binary.LittleEndian, codec: jpeg2000Codec},
	RLELossless:            {bo: binary.LittleEndian, codec: rleCodec},
}

// SupportedTransferSyntaxes lists the transfer syntax UIDs whose pixel data this package
// decodes, sorted.
func SupportedTransferSyntaxes() []string {
	out := make([]string, 0, len(syntaxes))
	for ts := range syntaxes {
		out = append(out, ts)
	}
	sort.Strings(out)
	return out
}

// SyntaxName returns the name of a transfer syntax UID from the DICOM dictionary, or
// "unknown transfer syntax" when the UID is not one.
func SyntaxName(ts string) string {
	if e, err := uid.Lookup(ts); err == nil && e.Type == uid.TypeTransferSyntax {
		return e.Name
	}
	return "unknown transfer syntax"
}

// lookupSyntax returns how to read a transfer syntax, or an error naming it, and every
// syntax this package decodes (supportedList), when this package cannot decode its pixel
// data.
func lookupSyntax(ts string) (syntax, error) {
	if s, ok := syntaxes[ts]; ok {
		return s, nil
	}
	return syntax{}, fmt.Errorf("%w: %w: transfer syntax %s (%s) is not supported; supported are %s", ErrUnsupported, volume.ErrFormat, SyntaxName(ts), ts, supportedList)
}

// supportedList names the syntaxes of the table syntaxes, in the order of
// SupportedTransferSyntaxes, for lookupSyntax's error.
var supportedList = func() string {
	var names []string
	for _, ts := range SupportedTransferSyntaxes() {
		names = append(names, SyntaxName(ts))
	}
	return strings.Join(names, "; ") // the names hold commas
}()
