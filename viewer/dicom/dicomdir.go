package dicom

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"amid/viewer/volume"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// maxDICOMDIR bounds the size of a DICOMDIR file read (a media directory of a large
// archive holds a few megabytes).
const maxDICOMDIR = 64 << 20

// dicomdirKeep are the top-level elements of a DICOMDIR this package reads.
var dicomdirKeep = map[tag.Tag]bool{tag.SpecificCharacterSet: true, tag.DirectoryRecordSequence: true}

// readDICOMDIR returns the files the DICOMDIR at path lists, as paths in its folder, in
// record order. A listed file that is not there is an error naming it; file IDs are
// matched without regard to case when the exact name is absent (media written in upper
// case are often copied to file systems that lower it).
func readDICOMDIR(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	if st.Size() > maxDICOMDIR {
		return nil, fmt.Errorf("dicom: %s: %w: a DICOMDIR of %d bytes is larger than %d", path, volume.ErrTooLarge, st.Size(), maxDICOMDIR)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	ids, err := parseDICOMDIR(b, defaultLimits)
	if err != nil {
		return nil, fmt.Errorf("dicom: %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		p, err := findFile(dir, id)
		if err != nil {
			return nil, fmt.Errorf("dicom: %s lists %s: %w", path, strings.Join(id, `\`), err)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseDICOMDIR returns the Referenced File IDs of a DICOMDIR's directory records (each as
// its path components), in record order, checking that none leaves the folder; lim bounds
// what its bytes may inflate to.
func parseDICOMDIR(b []byte, lim fileLimits) (ids [][]string, err error) {
	defer func() {
		// The library panics on some malformed values; that is bad input.
		if r := recover(); r != nil {
			ids, err = nil, fmt.Errorf("%w: parsing the DICOMDIR: %v", volume.ErrFormat, r)
		}
	}()
	l, err := scan(b, scanMode{keep: dicomdirKeep, lim: lim})
	if err != nil {
		return nil, err
	}
	el, err := parseElements(l)
	if err != nil {
		return nil, err
	}
	if el[tag.DirectoryRecordSequence] == nil {
		return nil, fmt.Errorf("%w: a DICOMDIR without a Directory Record Sequence (0004,1220)", volume.ErrFormat)
	}
	seen := map[string]bool{}
	for i, rec := range el.items(tag.DirectoryRecordSequence) {
		id := rec.strs(tag.ReferencedFileID)
		if len(id) == 0 {
			continue // patient, study and series records name no file
		}
		for _, c := range id {
			if c == "" || c == "." || c == ".." || strings.ContainsAny(c, `/\:`) {
				return nil, fmt.Errorf("%w: directory record %d names the file %q, which is not a path inside the folder", volume.ErrFormat, i+1, strings.Join(id, `\`))
			}
		}
		if k := strings.Join(id, "/"); !seen[k] {
			seen[k] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// findFile finds the file with path components id under dir, exactly or else ignoring case.
func findFile(dir string, id []string) (string, error) {
	p := filepath.Join(append([]string{dir}, id...)...)
	if st, err := os.Stat(p); err == nil && !st.IsDir() {
		return p, nil
	}
	cur := dir
	for i, c := range id {
		ents, err := os.ReadDir(cur)
		if err != nil {
			return "", fmt.Errorf("%w: the file is missing", volume.ErrFormat)
		}
		found := ""
		for _, e := range ents {
			if strings.EqualFold(e.Name(), c) && e.IsDir() == (i < len(id)-1) {
				found = e.Name()
				break
			}
		}
		if found == "" {
			return "", fmt.Errorf("%w: the file is missing", volume.ErrFormat)
		}
		cur = filepath.Join(cur, found)
	}
	return cur, nil
}
