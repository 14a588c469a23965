// Package rawio reads the raw data blocks of header-plus-data formats (MetaImage, NRRD)
// without trusting the header's sizes: exact reads that allocate only what arrives, and the
// "data are the last N bytes" rule (MetaImage's HeaderSize = -1, NRRD's byte skip: -1).
package rawio

import (
	"bytes"
	"fmt"
	"io"

	"amid/viewer/volume"
)

// Last returns a reader of the last n bytes of src. remain is how many bytes src still
// holds, or negative when unknown (a compressed or piped stream): then src is read whole,
// up to max bytes (the reader's volume.Limits). A stream shorter than n is
// volume.ErrTruncated.
func Last(src io.Reader, remain, n, max int64) (io.Reader, error) {
	if remain >= 0 {
		if remain < n {
			return nil, fmt.Errorf("%w: holds %d bytes of data, %d needed", volume.ErrTruncated, remain, n)
		}
		if _, err := io.CopyN(io.Discard, src, remain-n); err != nil {
			return nil, fmt.Errorf("%w: %v", volume.ErrTruncated, err)
		}
		return src, nil
	}
	all, err := io.ReadAll(io.LimitReader(src, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(all)) < n {
		return nil, fmt.Errorf("%w: holds %d bytes of data, %d needed", volume.ErrTruncated, len(all), n)
	}
	return bytes.NewReader(all[int64(len(all))-n:]), nil
}

// ReadN reads exactly n bytes. When the source is known to hold them (sized) the buffer is
// allocated at once; otherwise it grows as data arrive, so a short stream that claims a
// huge image allocates little.
func ReadN(r io.Reader, n int64, sized bool) ([]byte, error) {
	if sized {
		b := make([]byte, n)
		if k, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("got %d of %d bytes: %w", k, n, err)
		}
		return b, nil
	}
	b, err := io.ReadAll(io.LimitReader(r, n))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) < n {
		return nil, fmt.Errorf("got %d of %d bytes", len(b), n)
	}
	return b, nil
}
