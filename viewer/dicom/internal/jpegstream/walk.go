package jpegstream

import "fmt"

// Stuffing is how a scan's entropy-coded data escapes 0xFF: T.81 follows it with 0x00,
// T.87 (JPEG-LS) with a byte whose top bit is 0.
type Stuffing int

// The two stuffings.
const (
	T81 Stuffing = iota
	T87
)

// A Handler is a decoder as Walk and ReadConfig drive it.
type Handler interface {
	// Marker handles a marker segment outside scans: the frame header, tables, and the
	// segments the decoder ignores.
	Marker(m byte, seg []byte) error
	// Frame returns the frame header, nil until Marker has read it.
	Frame() *Frame
	// Scan decodes the entropy-coded data that follows a scan header, and returns how
	// many of its bytes it read.
	Scan(s *Scan, data []byte) (int, error)
}

// ReadConfig reads a stream's markers up to its frame header.
func ReadConfig(data []byte, h Handler) (Config, error) {
	r, err := NewReader(data)
	if err != nil {
		return Config{}, err
	}
	for h.Frame() == nil {
		m, seg, err := r.Next()
		if err != nil {
			return Config{}, err
		}
		if m == EOI || m == SOS {
			return Config{}, fmt.Errorf("%w: no frame header before marker FF%02X", ErrFormat, m)
		}
		if err := h.Marker(m, seg); err != nil {
			return Config{}, err
		}
	}
	f := h.Frame()
	return Config{Width: f.Width, Height: f.Height, Components: len(f.Components), Precision: f.Precision}, nil
}

// Walk decodes a stream: marker segments go to the handler's Marker, and each scan, once
// its header is parsed and checked against the frame and the components coded before, to
// its Scan. Walk returns at the end-of-image marker, or at the end of the data once every
// component is coded (a missing end-of-image marker loses nothing), and checks that every
// component was coded in exactly one scan.
func Walk(data []byte, stuffing Stuffing, h Handler) error {
	r, err := NewReader(data)
	if err != nil {
		return err
	}
	var done []bool
	complete := func() bool {
		for _, d := range done {
			if !d {
				return false
			}
		}
		return done != nil
	}
	for {
		m, seg, err := r.Next()
		if err != nil {
			if complete() {
				break
			}
			return err
		}
		if m == EOI {
			break
		}
		if m != SOS {
			if err := h.Marker(m, seg); err != nil {
				return err
			}
			continue
		}
		f := h.Frame()
		if f == nil {
			return fmt.Errorf("%w: scan before the frame header", ErrFormat)
		}
		if done == nil {
			done = make([]bool, len(f.Components))
		}
		s, err := ParseScan(seg, f)
		if err != nil {
			return err
		}
		for _, c := range s.Components {
			if done[c.Index] {
				return fmt.Errorf("%w: component %d is coded in two scans", ErrFormat, f.Components[c.Index].ID)
			}
		}
		n, err := h.Scan(s, r.Rest())
		if err != nil {
			return err
		}
		if stuffing == T87 {
			r.SkipEntropyLS(n)
		} else {
			r.SkipEntropy(n)
		}
		for _, c := range s.Components {
			done[c.Index] = true
		}
	}
	if done == nil {
		return fmt.Errorf("%w: no scan", ErrFormat)
	}
	for c, d := range done {
		if !d {
			return fmt.Errorf("%w: component %d has no scan", ErrTruncated, c+1)
		}
	}
	return nil
}
