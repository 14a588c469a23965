package jpeg2000

import (
	"errors"
	"fmt"
)

// Errors returned by Decode and DecodeConfig, each wrapped with what and where (marker,
// tile, byte offset); test them with errors.Is.
var (
	// ErrFormat: the data is not a JPEG 2000 codestream or JP2 file, or breaks one of its
	// rules (a marker segment of the wrong length, a value out of range, a packet header
	// that contradicts the main header).
	ErrFormat = errors.New("jpeg2000: invalid codestream")
	// ErrTruncated: the codestream ends before all its packets. Decode then also returns
	// the image decoded from the packets that are there.
	ErrTruncated = errors.New("jpeg2000: codestream truncated")
	// ErrUnsupported: a valid feature this decoder does not implement (Part 2 extensions,
	// High-Throughput code-blocks, JP2 palettes).
	ErrUnsupported = errors.New("jpeg2000: unsupported feature")
	// ErrTooLarge: the header declares more samples than MaxSamples.
	ErrTooLarge = errors.New("jpeg2000: image too large")
)

// formatErr returns an ErrFormat error.
func formatErr(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrFormat}, a...)...)
}
