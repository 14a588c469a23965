// Package dicomweb is AMID's client of a PACS over DICOMweb (PS3.18): QIDO-RS to find
// studies, WADO-RS to retrieve one, STOW-RS to store objects back (a prediction's DICOM
// SEG). It is what `amid predict --pacs` talks through; Orthanc with its DICOMweb plugin
// is the server its tests run against.
//
// Faults are errors of one sentence that name the PACS by its address (never its
// credentials) and say what failed. Reads are retried on a refused connection, a timeout
// and the server errors 429, 502, 503 and 504, with a doubling wait; so are stores, which
// are safe to repeat (a PACS keeps one object per SOP Instance UID). A retrieved study is
// written into a folder of its own only once every part has arrived, so nothing is left
// half-written.
package dicomweb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrPACS marks a failure of the PACS or of talking to it.
var ErrPACS = errors.New("PACS")

// MaxObject bounds one retrieved DICOM object (a part of a WADO-RS response).
const MaxObject = 2 << 30

// Client talks to one DICOMweb service.
type Client struct {
	// URL is the service root, such as http://pacs:8042/dicom-web/.
	URL            string
	User, Password string
	// HTTP is the client requests go through (http.DefaultClient when nil).
	HTTP *http.Client
	// Tries is how many times a request is made before its failure counts (3 when 0);
	// Wait the first wait between tries (0.5 s when 0), doubling after each.
	Tries int
	Wait  time.Duration
}

// Study is one study a query found.
type Study struct {
	UID        string   `json:"uid"`
	Modalities []string `json:"modalities,omitempty"`
	Series     int      `json:"series"`
	Instances  int      `json:"instances"`
}

// DICOM JSON model tags (PS3.18 F.2) the client reads.
const (
	tagStudyUID         = "0020000D"
	tagModalities       = "00080061"
	tagSeriesCount      = "00201206"
	tagInstancesCount   = "00201208"
	tagFailedSOPs       = "00081198"
	tagFailureReason    = "00081197"
	tagReferencedSOPUID = "00081155"
)

// where names the PACS in errors: its address without credentials or query.
func (c *Client) where() string {
	u, err := url.Parse(c.URL)
	if err != nil {
		return "the PACS"
	}
	u.User, u.RawQuery = nil, ""
	return u.String()
}

func (c *Client) endpoint(path string, q url.Values) string {
	u := strings.TrimRight(c.URL, "/") + "/" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// do makes the request that build makes, retrying what is safe to retry, and returns
// the response of status 2xx (the caller closes its body).
func (c *Client) do(ctx context.Context, what string, build func() (*http.Request, error)) (*http.Response, error) {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	tries, wait := c.Tries, c.Wait
	if tries <= 0 {
		tries = 3
	}
	if wait <= 0 {
		wait = 500 * time.Millisecond
	}
	var last error
	for i := range tries {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
			wait *= 2
		}
		req, err := build()
		if err != nil {
			return nil, err
		}
		req = req.WithContext(ctx)
		if c.User != "" || c.Password != "" {
			req.SetBasicAuth(c.User, c.Password)
		}
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // the URL is named once, without credentials
			}
			last = fmt.Errorf("%w %s: %s: %v", ErrPACS, c.where(), what, err)
			continue
		}
		if resp.StatusCode/100 == 2 {
			return resp, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		last = fmt.Errorf("%w %s: %s: %s%s", ErrPACS, c.where(), what, resp.Status, said(body))
		switch resp.StatusCode {
		case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			continue
		}
		return nil, last
	}
	return nil, last
}

// said is a server's short error text, on one line, or "".
func said(body []byte) string {
	s := strings.Join(strings.Fields(string(body)), " ")
	if s == "" {
		return ""
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return " (" + s + ")"
}

// Studies finds the studies that match the QIDO-RS filter (PatientID, StudyDate,
// ModalitiesInStudy, StudyInstanceUID, … as PS3.18 names the attributes).
func (c *Client) Studies(ctx context.Context, filter url.Values) ([]Study, error) {
	q := url.Values{}
	for k, v := range filter {
		q[k] = v
	}
	q.Set("includefield", strings.Join([]string{tagModalities, tagSeriesCount, tagInstancesCount}, ","))
	resp, err := c.do(ctx, "finding studies", func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodGet, c.endpoint("studies", q), nil)
		if err == nil {
			req.Header.Set("Accept", "application/dicom+json")
		}
		return req, err
	})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%w %s: finding studies: the answer broke off: %v", ErrPACS, c.where(), err)
	}
	s, err := studiesOf(b)
	if err != nil {
		return nil, fmt.Errorf("%w %s: finding studies: %v", ErrPACS, c.where(), err)
	}
	return s, nil
}

// studiesOf reads a QIDO-RS answer: a DICOM JSON array of studies (empty: none).
func studiesOf(b []byte) ([]Study, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var objs []map[string]element
	if err := json.Unmarshal(b, &objs); err != nil {
		return nil, fmt.Errorf("the answer is not DICOM JSON: %v", err)
	}
	out := make([]Study, 0, len(objs))
	for _, o := range objs {
		s := Study{UID: o[tagStudyUID].str(), Modalities: o[tagModalities].strs(), Series: o[tagSeriesCount].num(), Instances: o[tagInstancesCount].num()}
		if s.UID == "" {
			return nil, errors.New("a study without its Study Instance UID")
		}
		out = append(out, s)
	}
	return out, nil
}

// element is one attribute in the DICOM JSON model.
type element struct {
	VR    string            `json:"vr"`
	Value []json.RawMessage `json:"Value"`
}

func (e element) strs() []string {
	var out []string
	for _, v := range e.Value {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

func (e element) str() string {
	if s := e.strs(); len(s) > 0 {
		return s[0]
	}
	return ""
}

func (e element) num() int {
	for _, v := range e.Value {
		var n float64
		if json.Unmarshal(v, &n) == nil {
			return int(n)
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			var k int
			if _, err := fmt.Sscan(s, &k); err == nil {
				return k
			}
		}
	}
	return 0
}

// Retrieve fetches every instance of the study by WADO-RS into the folder dir, which it
// creates, one file per instance, and returns their paths. dir appears only once the
// whole study has arrived.
func (c *Client) Retrieve(ctx context.Context, study, dir string) ([]string, error) {
	what := "retrieving a study"
	resp, err := c.do(ctx, what, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodGet, c.endpoint("studies/"+url.PathEscape(study), nil), nil)
		if err == nil {
			req.Header.Set("Accept", `multipart/related; type="application/dicom"`)
		}
		return req, err
	})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return nil, fmt.Errorf("%w %s: %s: the answer is %q, not multipart/related DICOM", ErrPACS, c.where(), what, resp.Header.Get("Content-Type"))
	}
	partial := dir + ".partial"
	if err := os.RemoveAll(partial); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(partial, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(partial)
	mr := multipart.NewReader(resp.Body, params["boundary"])
	var names []string
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w %s: %s: the answer broke off after %d objects: %v", ErrPACS, c.where(), what, len(names), err)
		}
		name := fmt.Sprintf("%06d.dcm", len(names)+1)
		f, err := os.Create(filepath.Join(partial, name))
		if err != nil {
			return nil, err
		}
		n, err := io.Copy(f, io.LimitReader(p, MaxObject+1))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("%w %s: %s: object %d broke off: %v", ErrPACS, c.where(), what, len(names)+1, err)
		}
		if n > MaxObject {
			return nil, fmt.Errorf("%w %s: %s: object %d is larger than %d bytes", ErrPACS, c.where(), what, len(names)+1, int64(MaxObject))
		}
		if err := isDICOM(filepath.Join(partial, name)); err != nil {
			return nil, fmt.Errorf("%w %s: %s: object %d: %v", ErrPACS, c.where(), what, len(names)+1, err)
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w %s: %s: the study holds no object", ErrPACS, c.where(), what)
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.Rename(partial, dir); err != nil {
		return nil, err
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = filepath.Join(dir, n)
	}
	return out, nil
}

// isDICOM checks the Part 10 preamble's "DICM".
func isDICOM(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var head [132]byte
	if _, err := io.ReadFull(f, head[:]); err != nil || string(head[128:]) != "DICM" {
		return errors.New("not a DICOM Part 10 file")
	}
	return nil
}

// Store sends the DICOM files to the PACS by STOW-RS, all in one request, and returns an
// error naming each object the PACS refused and why.
func (c *Client) Store(ctx context.Context, files []string) error {
	what := "storing objects"
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Type", "application/dicom")
		w, err := mw.CreatePart(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	if err := mw.Close(); err != nil {
		return err
	}
	payload := body.Bytes()
	resp, err := c.do(ctx, what, func() (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPost, c.endpoint("studies", nil), bytes.NewReader(payload))
		if err == nil {
			req.Header.Set("Content-Type", fmt.Sprintf(`multipart/related; type="application/dicom"; boundary=%s`, mw.Boundary()))
			req.Header.Set("Accept", "application/dicom+json")
		}
		return req, err
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var answer map[string]json.RawMessage
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		return nil // a 2xx without a DICOM JSON answer: stored
	}
	var failed struct {
		Value []map[string]element `json:"Value"`
	}
	if raw, ok := answer[tagFailedSOPs]; ok {
		if err := json.Unmarshal(raw, &failed); err == nil && len(failed.Value) > 0 {
			var why []string
			for _, f := range failed.Value {
				why = append(why, fmt.Sprintf("%s (failure reason %d)", f[tagReferencedSOPUID].str(), f[tagFailureReason].num()))
			}
			return fmt.Errorf("%w %s: %s: %d of %d objects refused: %s", ErrPACS, c.where(), what, len(failed.Value), len(files), strings.Join(why, "; "))
		}
	}
	return nil
}
