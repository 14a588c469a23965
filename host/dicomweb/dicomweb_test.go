package dicomweb

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"amid/assets/ci"
	"amid/host/dicomweb/dicomwebtest"
	"amid/host/synth"
)

// pacs is the test PACS of this package, started by the first test that needs it (so that
// fuzz workers, which run no such test, start none) and stopped by TestMain; nil with
// pacsErr saying why.
var (
	pacs     *dicomwebtest.Server
	pacsErr  error
	pacsOnce sync.Once
)

// pacsPort is this package's Orthanc's HTTP port: test packages that start a PACS each use
// their own, as `go test ./...` runs packages at once.
const pacsPort = 18142

func TestMain(m *testing.M) {
	code := m.Run()
	if pacs != nil {
		if err := pacs.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

func needPACS(t *testing.T) *Client {
	t.Helper()
	pacsOnce.Do(func() {
		if testing.Short() {
			pacsErr = errors.New("-short: no test PACS")
			return
		}
		pacs, pacsErr = dicomwebtest.Start(pacsPort)
	})
	if pacsErr != nil {
		ci.Missing(t, pacsErr.Error())
	}
	return &Client{URL: pacs.URL, User: pacs.User, Password: pacs.Password}
}

// dicomFiles counts the files under dir.
func dicomFiles(t *testing.T, dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// TestRoundTrip loads a generated CT study (two series and a localizer, amid demo --dicom
// --studies) into Orthanc with storescu, as a modality sends it, then finds it by QIDO-RS,
// retrieves it by WADO-RS (every object, each a DICOM file) and stores it back by STOW-RS
// (the same SOP instances again: a PACS keeps one of each, so a repeated store succeeds).
func TestRoundTrip(t *testing.T) {
	c := needPACS(t)
	data := t.TempDir()
	if err := synth.DemoDICOM(data, 4, 3, synth.DICOMOptions{Studies: true}); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(data, "test", "images"))
	study := filepath.Join(data, "test", "images", ents[0].Name())
	if err := pacs.Send(study); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	found, err := c.Studies(ctx, nil)
	if err != nil || len(found) != 1 {
		t.Fatalf("studies: %+v %v", found, err)
	}
	s := found[0]
	sent := dicomFiles(t, study)
	if s.Series != 3 || s.Instances != sent || strings.Join(s.Modalities, ",") != "CT" {
		t.Errorf("study %+v: want 3 series (two CT and a localizer) of %d instances", s, sent)
	}
	if none, err := c.Studies(ctx, url.Values{"StudyInstanceUID": {"1.2.3.4"}}); err != nil || len(none) != 0 {
		t.Errorf("a UID the PACS lacks: %+v %v", none, err)
	}
	dir := filepath.Join(t.TempDir(), "study")
	files, err := c.Retrieve(ctx, s.UID, dir)
	if err != nil || len(files) != sent {
		t.Fatalf("retrieved %d objects, %v; sent %d", len(files), err, sent)
	}
	if _, err := os.Stat(dir + ".partial"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the partial folder stayed: %v", err)
	}
	if err := c.Store(ctx, files[:3]); err != nil {
		t.Errorf("storing three objects again: %v", err)
	}
	if again, err := c.Studies(ctx, nil); err != nil || len(again) != 1 || again[0].Instances != sent {
		t.Errorf("after storing again: %+v %v", again, err)
	}
	// Objects that are not DICOM are refused, and the error says so without credentials.
	junk := filepath.Join(t.TempDir(), "junk.dcm")
	os.WriteFile(junk, []byte("not DICOM"), 0o644)
	err = c.Store(ctx, []string{junk})
	if !errors.Is(err, ErrPACS) || strings.Contains(err.Error(), c.Password) {
		t.Errorf("storing a non-DICOM object: %v", err)
	}
	t.Logf("storing a non-DICOM object: %v", err)
	// A wrong password is refused at once (no retry), and not repeated in the error.
	bad := *c
	bad.Password, bad.Wait = "wrong-password", time.Hour
	_, err = bad.Studies(ctx, nil)
	if !errors.Is(err, ErrPACS) || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "wrong-password") {
		t.Errorf("a wrong password: %v", err)
	}
}

// TestFaults: a PACS that is down, one that is busy for a while, one that breaks off a
// study, one that answers what is not DICOM.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	// Down: a port nobody listens on; two tries, then the error names the address.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	c := &Client{URL: "http://user:secret@" + addr + "/dicom-web/", Tries: 2, Wait: time.Millisecond}
	_, err := c.Studies(ctx, nil)
	if !errors.Is(err, ErrPACS) || !strings.Contains(err.Error(), "http://"+addr+"/dicom-web/: finding studies") || strings.Contains(err.Error(), "secret") {
		t.Errorf("a PACS that is down: %v", err)
	}
	// Busy twice (503), then the answer: three tries succeed.
	var calls atomic.Int32
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/dicom+json")
		fmt.Fprint(w, `[{"0020000D": {"vr": "UI", "Value": ["1.2.3"]}, "00201206": {"vr": "IS", "Value": [2]}}]`)
	}))
	defer busy.Close()
	c = &Client{URL: busy.URL + "/dicom-web/", Wait: time.Millisecond}
	if s, err := c.Studies(ctx, nil); err != nil || len(s) != 1 || s[0].UID != "1.2.3" || s[0].Series != 2 || calls.Load() != 3 {
		t.Errorf("a busy PACS: %+v %v after %d calls", s, err, calls.Load())
	}
	// A study that breaks off after its first object: no folder is left.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", `multipart/related; type="application/dicom"; boundary=XX`)
		pre := make([]byte, 128)
		fmt.Fprintf(w, "--XX\r\nContent-Type: application/dicom\r\n\r\n%sDICM\x02\x00\x00\x00\r\n--XX\r\nContent-Type: application/dicom\r\n\r\n%sDI", pre, pre)
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer cut.Close()
	c = &Client{URL: cut.URL + "/dicom-web/", Tries: 1}
	dir := filepath.Join(t.TempDir(), "study")
	if _, err := c.Retrieve(ctx, "1.2.3", dir); !errors.Is(err, ErrPACS) || !strings.Contains(err.Error(), "retrieving a study") {
		t.Errorf("a study broken off: %v", err)
	}
	for _, p := range []string{dir, dir + ".partial"} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is left: %v", p, err)
		}
	}
	// An answer that is not multipart DICOM.
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>login</html>")
	}))
	defer html.Close()
	c = &Client{URL: html.URL + "/dicom-web/", Tries: 1}
	if _, err := c.Retrieve(ctx, "1.2.3", dir); !errors.Is(err, ErrPACS) || !strings.Contains(err.Error(), `the answer is "text/html", not multipart/related DICOM`) {
		t.Errorf("an HTML answer: %v", err)
	}
	if _, err := c.Studies(ctx, nil); !errors.Is(err, ErrPACS) || !strings.Contains(err.Error(), "not DICOM JSON") {
		t.Errorf("an HTML answer to a query: %v", err)
	}
}

// FuzzStudies: any answer to a query is studies or an error, never a panic.
func FuzzStudies(f *testing.F) {
	f.Add([]byte(`[{"0020000D": {"vr": "UI", "Value": ["1.2.3"]}, "00080061": {"vr": "CS", "Value": ["CT", "SEG"]}, "00201208": {"vr": "IS", "Value": ["12"]}}]`))
	f.Add([]byte(`[{"0020000D": {"vr": "UI"}}]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := studiesOf(b)
		if err == nil {
			for _, x := range s {
				if x.UID == "" {
					t.Fatal("a study without a UID")
				}
			}
		}
	})
}
