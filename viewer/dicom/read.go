package dicom

import (
	"errors"
	"fmt"
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

// readFile parses one file and decodes its pixels. Errors name the file.
func readFile(path string) (*file, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	f, err := parseFile(b)
	if err != nil {
		return nil, fmt.Errorf("dicom: %s: %w", path, err)
	}
	f.path = path
	return f, nil
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
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("dicom: %w", err)
	}
	v, m, err := decode(b, path)
	if err != nil {
		return nil, nil, fmt.Errorf("dicom: %s: %w", path, err)
	}
	return v, m, nil
}

// decode reads the bytes of one file.
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
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(paths)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				files[i], errs[i] = readFile(paths[i])
			}
		}()
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
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
