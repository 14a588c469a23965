package dicom

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"amid/viewer/volume"
)

// file is one parsed DICOM file.
type file struct {
	path string
	ts   string
	h    *header
	px   *pixels
}

// Files up to wholeSize are read in one go. Of larger ones, headSize bytes (usually the
// whole header) are read first; when the native pixel data runs past them, exactly as much
// as the pixel data needs is read next, so that what follows the pixel data (padding,
// signatures) is never read. Files that need more (an encapsulated or deflated data set, a
// header larger than headSize) are read whole.
const (
	wholeSize = 1 << 20
	headSize  = 64 << 10
)

// readFile parses one file and decodes its pixels. Errors name the file.
func readFile(path string) (*file, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("dicom: %s: %w: a folder, not a file", path, volume.ErrFormat)
	}
	size := st.Size()
	n := size
	if size > wholeSize {
		n = headSize
	}
	var b []byte
	for {
		// Read bytes len(b)…n, keeping what was read before.
		nb := make([]byte, n)
		copy(nb, b)
		if _, err := fh.ReadAt(nb[len(b):], int64(len(b))); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("dicom: %s: %w", path, err)
		}
		b = nb
		f, err := parseFile(b)
		if err == nil {
			f.path = path
			return f, nil
		}
		if n == size {
			return nil, fmt.Errorf("dicom: %s: %w", path, err)
		}
		var se *shortError
		if errors.As(err, &se) && se.need > n && se.need <= size {
			n = se.need
		} else {
			n = size
		}
	}
}

// parseFile parses the bytes of one file.
func parseFile(b []byte) (*file, error) {
	l, err := scan(b)
	if err != nil {
		return nil, err
	}
	s, err := lookupSyntax(l.ts)
	if err != nil {
		return nil, err
	}
	h, err := parseHeader(l)
	if err != nil {
		return nil, err
	}
	if !l.hasPixels {
		return nil, fmt.Errorf("%w: no pixel data element (7FE0,0010)", volume.ErrFormat)
	}
	px, err := decodePixels(h, l, s.codec)
	if err != nil {
		return nil, err
	}
	return &file{ts: l.ts, h: h, px: px}, nil
}

// ReadFile reads one DICOM file: a single slice (Z = 1) or a multi-frame image whose frames
// become Z. The package documentation describes values and geometry.
func ReadFile(path string) (*volume.Volume, *Meta, error) {
	f, err := readFile(path)
	if err != nil {
		return nil, nil, err
	}
	v, m, err := assemble([]*file{f})
	if err != nil {
		return nil, nil, fmt.Errorf("dicom: %s: %w", path, err)
	}
	return v, m, nil
}

// decode reads the bytes of one file (the fuzz target's entry).
func decode(b []byte, path string) (*volume.Volume, *Meta, error) {
	f, err := parseFile(b)
	if err != nil {
		return nil, nil, err
	}
	f.path = path
	return assemble([]*file{f})
}

// ReadSeries reads every DICOM file in dir (not its subfolders; hidden files and DICOMDIR
// are skipped), in parallel, splits them by Series Instance UID and assembles each series
// into a volume. Series are sorted by UID. Any file that cannot be read, or any series
// that cannot be assembled (missing slice, uneven spacing, …), is an error.
func ReadSeries(dir string) ([]Series, error) {
	groups, err := readGroups(dir)
	if err != nil {
		return nil, err
	}
	out := make([]Series, 0, len(groups))
	for _, g := range groups {
		v, m, err := assemble(g.files)
		if err != nil {
			return nil, fmt.Errorf("dicom: %s: series %s: %w", dir, g.uid, err)
		}
		out = append(out, Series{UID: g.uid, Files: len(g.files), Volume: v, Meta: m})
	}
	return out, nil
}

// ReadDir reads the one series in dir as a volume. A folder holding several series is an
// error that names each of them.
func ReadDir(dir string) (*volume.Volume, *Meta, error) {
	groups, err := readGroups(dir)
	if err != nil {
		return nil, nil, err
	}
	if len(groups) > 1 {
		names := make([]string, len(groups))
		for i, g := range groups {
			names[i] = fmt.Sprintf("%s (%d files)", g.uid, len(g.files))
		}
		return nil, nil, fmt.Errorf("dicom: %s: %w: the folder holds %d series, not one: %s; use ReadSeries",
			dir, volume.ErrFormat, len(groups), strings.Join(names, ", "))
	}
	v, m, err := assemble(groups[0].files)
	if err != nil {
		return nil, nil, fmt.Errorf("dicom: %s: series %s: %w", dir, groups[0].uid, err)
	}
	return v, m, nil
}

// maxErrors is how many file errors a folder read reports one by one.
const maxErrors = 5

type group struct {
	uid   string
	files []*file
}

// readGroups parses the files of dir on GOMAXPROCS goroutines and groups them by series.
func readGroups(dir string) ([]group, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	var paths []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") || strings.EqualFold(n, "DICOMDIR") {
			continue
		}
		paths = append(paths, filepath.Join(dir, n))
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("dicom: %s: %w: the folder holds no files", dir, volume.ErrFormat)
	}
	files := make([]*file, len(paths))
	errs := make([]error, len(paths))
	parallel(len(paths), func(i int) { files[i], errs[i] = readFile(paths[i]) })
	var bad []error
	for _, err := range errs {
		if err != nil {
			bad = append(bad, err)
		}
	}
	if len(bad) > maxErrors {
		// A folder of thousands of non-DICOM files should not give thousands of lines.
		bad = append(bad[:maxErrors], fmt.Errorf("dicom: %s: %d more files could not be read", dir, len(bad)-maxErrors))
	}
	if err := errors.Join(bad...); err != nil {
		return nil, err
	}
	byUID := map[string][]*file{}
	for _, f := range files {
		byUID[f.h.seriesUID] = append(byUID[f.h.seriesUID], f)
	}
	groups := make([]group, 0, len(byUID))
	for uid, fs := range byUID {
		groups = append(groups, group{uid: uid, files: fs})
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].uid < groups[j].uid })
	return groups, nil
}

// parallel calls f(0), …, f(n−1) on up to GOMAXPROCS goroutines, each taking the next
// index as it finishes the last, and returns when all calls have returned.
func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(runtime.GOMAXPROCS(0), n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}
