// Package rawtail positions a reader at the last bytes of a data stream, for the raw
// formats whose header says "the data are the last N bytes of the file" (MetaImage's
// HeaderSize = -1, NRRD's byte skip: -1).
package rawtail

import (
	"bytes"
	"fmt"
	"io"

	"amid/viewer/volume"
)

// Last returns a reader of the last n bytes of src. remain is how many bytes src still
// holds, or negative when unknown (a compressed or piped stream): then src is read whole,
// up to volume.MaxBytes. A stream shorter than n is volume.ErrTruncated.
func Last(src io.Reader, remain, n int64) (io.Reader, error) {
	if remain >= 0 {
		if remain < n {
			return nil, fmt.Errorf("%w: holds %d bytes of data, %d needed", volume.ErrTruncated, remain, n)
		}
		if _, err := io.CopyN(io.Discard, src, remain-n); err != nil {
			return nil, fmt.Errorf("%w: %v", volume.ErrTruncated, err)
		}
		return src, nil
	}
	all, err := io.ReadAll(io.LimitReader(src, volume.MaxBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(all)) < n {
		return nil, fmt.Errorf("%w: holds %d bytes of data, %d needed", volume.ErrTruncated, len(all), n)
	}
	return bytes.NewReader(all[int64(len(all))-n:]), nil
}
