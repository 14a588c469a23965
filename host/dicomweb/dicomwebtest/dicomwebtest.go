// Package dicomwebtest starts the test PACS of .ci/orthanc.sh (Debian's Orthanc with its
// DICOMweb plugin, on loopback) for a test package, and loads studies into it with dcmtk's
// storescu, as a modality sends them.
package dicomwebtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Server is a running test PACS.
type Server struct {
	URL, User, Password string
	// DICOM is the DIMSE address "host:port:AE" storescu sends to.
	DICOM string
	dir   string
	env   []string
}

// script is .ci/orthanc.sh, found from the working folder up to the module root.
func script() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, ".ci", "orthanc.sh"), nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working folder")
		}
		dir = up
	}
}

// Start starts a test PACS of its own for one test package, on HTTP port port (and the
// DICOM port after it), its files in a new temporary folder. The error says what is
// missing: make deps installs orthanc, orthanc-dicomweb and dcmtk.
func Start(port int) (*Server, error) {
	sh, err := script()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "amid-orthanc-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, env: append(os.Environ(), "AMID_ORTHANC_DIR="+filepath.Join(dir, "pacs"), "AMID_ORTHANC_PORT="+strconv.Itoa(port))}
	cmd := exec.Command(sh, "start")
	cmd.Env = s.env
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("no test PACS (make deps installs orthanc and orthanc-dicomweb; .ci/orthanc.sh start): %v\n%s", err, out)
	}
	cmd = exec.Command(sh, "env")
	cmd.Env = s.env
	out, err := cmd.Output()
	if err != nil {
		s.Stop()
		return nil, err
	}
	for _, kv := range strings.Fields(string(out)) {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "AMID_TEST_PACS":
			s.URL = v
		case "AMID_TEST_PACS_USER":
			s.User = v
		case "AMID_TEST_PACS_PASSWORD":
			s.Password = v
		case "AMID_TEST_PACS_DICOM":
			s.DICOM = v
		}
	}
	return s, nil
}

// Stop stops the PACS and removes its files.
func (s *Server) Stop() error {
	sh, err := script()
	if err != nil {
		return err
	}
	cmd := exec.Command(sh, "stop")
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	os.RemoveAll(s.dir)
	if err != nil {
		return fmt.Errorf("stopping the test PACS: %v\n%s", err, out)
	}
	return nil
}

// Send loads every DICOM file under dir into the PACS with storescu (DIMSE C-STORE).
func (s *Server) Send(dir string) error {
	parts := strings.Split(s.DICOM, ":")
	if len(parts) != 3 {
		return fmt.Errorf("the test PACS's DICOM address %q is not host:port:AE", s.DICOM)
	}
	out, err := exec.Command("storescu", "-aec", parts[2], "+sd", "+r", parts[0], parts[1], dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("storescu %s: %v\n%s", dir, err, out)
	}
	return nil
}
