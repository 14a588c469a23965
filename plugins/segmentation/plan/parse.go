package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Limits on a parsed fingerprint.
const (
	maxCases = 1 << 20
	maxDim   = 1 << 20
)

// ParseFingerprint decodes a fingerprint from JSON (the form of Fingerprint's field tags)
// and checks it. Fields it does not know are ignored, so the host's richer profile
// (amid/host/profile: task kind, case counts, median shape, intensity percentiles, ...)
// is accepted as it is. No cases, non-positive or non-finite spacings, sizes beyond 2^20
// voxels per axis or 2^20 cases are errors wrapping ErrFingerprint.
func ParseFingerprint(data []byte) (Fingerprint, error) {
	var f Fingerprint
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return Fingerprint{}, fmt.Errorf("%w: %v", ErrFingerprint, err)
	}
	if dec.More() {
		return Fingerprint{}, fmt.Errorf("%w: data after the fingerprint object", ErrFingerprint)
	}
	if len(f.Cases) > maxCases {
		return Fingerprint{}, fmt.Errorf("%w: %d cases, at most %d", ErrFingerprint, len(f.Cases), maxCases)
	}
	for i, c := range f.Cases {
		for a := range 3 {
			if c.Dims[a] > maxDim {
				return Fingerprint{}, fmt.Errorf("%w: case %d has %d voxels on axis %s, at most %d", ErrFingerprint, i, c.Dims[a], axisName[a], maxDim)
			}
		}
	}
	if err := f.check(); err != nil {
		return Fingerprint{}, err
	}
	return f, nil
}
