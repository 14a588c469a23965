package predict

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"

	"amid/host/dicomweb"
)

// Sender stores DICOM objects where the inputs came from (a PACS: dicomweb.Client).
type Sender interface {
	Store(ctx context.Context, files []string) error
}

// FindStudies lists the Study Instance UIDs the PACS holds for the QIDO-RS filter (each
// value of a "key=value" list, PatientID=123 or StudyDate=20260101-), in the PACS's order.
func FindStudies(ctx context.Context, c *dicomweb.Client, query []string) ([]string, error) {
	filter := url.Values{}
	for _, q := range query {
		k, v, ok := cutEq(q)
		if !ok {
			return nil, fmt.Errorf("query %q is not key=value (PatientID=123, StudyDate=20260101-)", q)
		}
		filter.Add(k, v)
	}
	found, err := c.Studies(ctx, filter)
	if err != nil {
		return nil, err
	}
	uids := make([]string, len(found))
	for i, s := range found {
		uids[i] = s.UID
	}
	return uids, nil
}

func cutEq(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == '=' {
			return s[:i], s[i+1:], i > 0
		}
	}
	return "", "", false
}

// Retrieve fetches each study from the PACS into a folder of its own under dir, named by
// its Study Instance UID, and returns the folders: the inputs of Apply.
func Retrieve(ctx context.Context, c *dicomweb.Client, studies []string, dir string) ([]string, error) {
	var out []string
	for _, uid := range studies {
		d := filepath.Join(dir, uid)
		if _, err := c.Retrieve(ctx, uid, d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
