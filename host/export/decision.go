package export

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"amid/viewer/fileio"
)

// Review decisions on a predicted case.
const (
	Approved = "approved"
	Rejected = "rejected"
)

// Check refuses a decision that is neither Approved nor Rejected, or names no case.
func (d Decision) Check() error {
	if d.Case == "" {
		return errors.New("review: the decision names no case")
	}
	if d.Decision != Approved && d.Decision != Rejected {
		return fmt.Errorf("review: decision %q is not %s or %s", d.Decision, Approved, Rejected)
	}
	return nil
}

// ReadDecisions reads the decisions file at path (every decision in the order made, as
// AppendDecision writes it) and returns the newest decision on each case, in the order
// the cases were first decided; none when the file does not exist.
func ReadDecisions(path string) ([]Decision, error) {
	var all []Decision
	err := fileio.ReadJSON(path, &all)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	latest := map[string]int{}
	var out []Decision
	for _, d := range all {
		if i, ok := latest[d.Case]; ok {
			out[i] = d
			continue
		}
		latest[d.Case] = len(out)
		out = append(out, d)
	}
	return out, nil
}

// AppendDecision appends d to the decisions file at path (atomically: the file holds the
// old list or the new one) and returns the hex sha256 of what it wrote, for the audit
// entry that records the decision.
func AppendDecision(path string, d Decision) (string, error) {
	var all []Decision
	if err := fileio.ReadJSON(path, &all); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	b, err := json.MarshalIndent(append(all, d), "", "  ")
	if err != nil {
		return "", err
	}
	b = append(b, '\n')
	if err := fileio.Write(path, b); err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
