package dicom

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"amid/viewer/volume"
)

// file is one parsed DICOM file.
type file struct {
	path string
	ts   string
	h    *header
	px   *pixels // nil when only the header was read
	// Of a file whose header alone was read (readHead): its size, whether it has pixel
	// data, and where the value of native pixel data lies (pixOff −1 when not known).
	size      int64
	hasPixels bool
	pixOff    int64
	pixLen    uint32
}

// headStart is how much of a file readHead reads first; it doubles until the header is
// read. Most headers take a few KiB (Siemens' private CSA headers tens of KiB).
const headStart = 16 << 10

// readHead parses the header of one file (everything before its pixel data), reading as
// little of the file as it can. Errors name the file; a file that is not DICOM at all
// gives an error wrapping errNotDICOM.
func readHead(path string) (*file, error) {
	fh, size, err := open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var b []byte
	for n := min(size, headStart); ; n = min(2*n, size) {
		if b, err = extend(fh, b, n); err != nil {
			return nil, fmt.Errorf("dicom: %s: %w", path, err)
		}
		l, err := scan(b, scanMode{headerOnly: true})
		if err == nil && (l.hasPixels || n == size) {
			h, err := parseHeader(l)
			if err != nil {
				return nil, fmt.Errorf("dicom: %s: %w", path, err)
			}
			return &file{path: path, ts: l.ts, h: h, size: size, hasPixels: l.hasPixels, pixOff: l.pixelOffset, pixLen: l.pixelLen}, nil
		}
		if n == size || errors.Is(err, errNotDICOM) {
			return nil, fmt.Errorf("dicom: %s: %w", path, err)
		}
	}
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

// open opens a file to read and returns its size; a folder is an error.
func open(path string) (*os.File, int64, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("dicom: %w", err)
	}
	st, err := fh.Stat()
	if err == nil && st.IsDir() {
		err = fmt.Errorf("%s: %w: a folder, not a file", path, volume.ErrFormat)
	}
	if err != nil {
		fh.Close()
		return nil, 0, fmt.Errorf("dicom: %w", err)
	}
	return fh, st.Size(), nil
}

// extend returns b, the first bytes of fh, grown to its first n bytes.
func extend(fh *os.File, b []byte, n int64) ([]byte, error) {
	nb := make([]byte, n)
	copy(nb, b)
	if _, err := fh.ReadAt(nb[len(b):], int64(len(b))); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return nb, nil
}

// readFile parses one file and decodes its pixels. Errors name the file.
func readFile(path string) (*file, error) {
	fh, size, err := open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	n := size
	if size > wholeSize {
		n = headSize
	}
	var b []byte
	for {
		if b, err = extend(fh, b, n); err != nil {
			return nil, fmt.Errorf("dicom: %s: %w", path, err)
		}
		f, err := parseFile(b, defaultLimits)
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

// parseFile parses the bytes of one file within lim.
func parseFile(b []byte, lim fileLimits) (*file, error) {
	l, err := scan(b, scanMode{lim: lim})
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

// decode reads the bytes of one file within lim (the fuzz target's entry).
func decode(b []byte, path string, lim fileLimits) (*volume.Volume, *Meta, error) {
	f, err := parseFile(b, lim)
	if err != nil {
		return nil, nil, err
	}
	f.path = path
	return assemble([]*file{f})
}

// maxErrors is how many file errors a folder read reports one by one.
const maxErrors = 5

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
