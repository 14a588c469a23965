// Package inv3 reads InVesalius 3 projects (.inv3): a gzip-compressed tar holding XML
// property lists and raw arrays. main.plist names the CT matrix (element type, shape as
// z, y, x, and spacing as x, y, z) and one plist per mask; each mask is raw uint8 one voxel
// larger on every axis, whose first plane, row and column are padding, with values 0 and
// 255 (InVesalius' own layout).
//
// The project stores no position or orientation: volumes come back with origin 0 and the
// identity direction, slices in file order. Masks come back as uint8 0/1 on the CT's grid.
package inv3

import (
	"archive/tar"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"amid/viewer/volume"
)

// Project is an InVesalius project's image and masks.
type Project struct {
	Modality string
	CT       *volume.Volume
	Masks    []Mask
}

// Mask is one of the project's masks.
type Mask struct {
	Name string
	// Threshold is the HU range the mask was thresholded with (InVesalius' threshold_range).
	Threshold [2]float64
	Labels    *volume.Volume // uint8, 1 inside
}

// maxPlist caps a property-list file: real ones are about 1 KB.
const maxPlist = 1 << 20

// Read reads a project from an .inv3 file or from a folder where one was unpacked.
func Read(p string) (*Project, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	var files fileSource
	if st.IsDir() {
		files = dirSource(p)
	} else {
		files, err = readArchive(p)
		if err != nil {
			return nil, err
		}
	}
	proj, err := decode(files)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return proj, nil
}

// fileSource opens a member of the project by name; size is the member's byte length.
type fileSource interface {
	open(name string) (rc io.ReadCloser, size int64, err error)
}

type dirSource string

func (d dirSource) open(name string) (io.ReadCloser, int64, error) {
	f, err := os.Open(filepath.Join(string(d), filepath.Base(name)))
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// memSource holds the members of an archive. The tar is streamed once; members are kept
// in memory, as the project's files are needed in an order the archive does not follow.
type memSource map[string][]byte

func (m memSource) open(name string) (io.ReadCloser, int64, error) {
	b, ok := m[path.Base(name)]
	if !ok {
		return nil, 0, fmt.Errorf("%s is missing from the project", name)
	}
	return io.NopCloser(strings.NewReader(string(b))), int64(len(b)), nil
}

func readArchive(p string) (memSource, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: not gzip-compressed (%v)", p, volume.ErrFormat, err)
	}
	tr := tar.NewReader(gz)
	m := memSource{}
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %v", p, volume.ErrTruncated, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		total += h.Size
		if h.Size < 0 || total > volume.MaxBytes {
			return nil, fmt.Errorf("%s: %w: archive members exceed %d bytes", p, volume.ErrTooLarge, volume.MaxBytes)
		}
		b := make([]byte, h.Size)
		if _, err := io.ReadFull(tr, b); err != nil {
			return nil, fmt.Errorf("%s: %w: member %s: %v", p, volume.ErrTruncated, h.Name, err)
		}
		m[path.Base(h.Name)] = b
	}
	return m, nil
}

func readPlist(src fileSource, name string) (map[string]any, error) {
	rc, size, err := src.open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if size > maxPlist {
		return nil, fmt.Errorf("%s: %w: property list of %d bytes", name, volume.ErrFormat, size)
	}
	v, err := decodePlist(io.LimitReader(rc, maxPlist))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	d, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: %w: top level is not a dictionary", name, volume.ErrFormat)
	}
	return d, nil
}

func decode(src fileSource) (*Project, error) {
	main, err := readPlist(src, "main.plist")
	if err != nil {
		return nil, err
	}
	matrix, _ := main["matrix"].(map[string]any)
	if matrix == nil {
		return nil, fmt.Errorf("main.plist: %w: no matrix entry", volume.ErrFormat)
	}
	shape, err := ints(matrix["shape"], 3)
	if err != nil {
		return nil, fmt.Errorf("main.plist: matrix shape: %w", err)
	}
	spacing, err := floats(main["spacing"], 3)
	if err != nil {
		return nil, fmt.Errorf("main.plist: spacing: %w", err)
	}
	dt, _ := matrix["dtype"].(string)
	t, err := volume.ParseDType(dt)
	if err != nil {
		return nil, fmt.Errorf("main.plist: %w: %v", volume.ErrDType, err)
	}
	fname, _ := matrix["filename"].(string)
	dims := [4]int{shape[2], shape[1], shape[0], 1}
	ct, err := readRaw(src, fname, t, dims)
	if err != nil {
		return nil, err
	}
	copy(ct.Spacing[:], spacing)
	if err := ct.Validate(); err != nil {
		return nil, fmt.Errorf("main.plist: %w", err)
	}
	proj := &Project{CT: ct}
	proj.Modality, _ = main["modality"].(string)
	masks, _ := main["masks"].(map[string]any)
	for i := 0; i < len(masks); i++ {
		name, _ := masks[fmt.Sprint(i)].(string)
		if name == "" {
			return nil, fmt.Errorf("main.plist: %w: mask %d is not listed", volume.ErrFormat, i)
		}
		m, err := readMask(src, name, ct)
		if err != nil {
			return nil, err
		}
		proj.Masks = append(proj.Masks, m)
	}
	return proj, nil
}

func readMask(src fileSource, name string, ct *volume.Volume) (Mask, error) {
	d, err := readPlist(src, name)
	if err != nil {
		return Mask{}, err
	}
	shape, err := ints(d["mask_shape"], 3)
	if err != nil {
		return Mask{}, fmt.Errorf("%s: mask_shape: %w", name, err)
	}
	if shape[0] != ct.Dims[2]+1 || shape[1] != ct.Dims[1]+1 || shape[2] != ct.Dims[0]+1 {
		return Mask{}, fmt.Errorf("%s: %w: mask shape %v does not pad the CT's %d×%d×%d by one", name, volume.ErrGeometry, shape, ct.Dims[2], ct.Dims[1], ct.Dims[0])
	}
	file, _ := d["mask_file"].(string)
	padded, err := readRaw(src, file, volume.Uint8, [4]int{shape[2], shape[1], shape[0], 1})
	if err != nil {
		return Mask{}, err
	}
	m := Mask{}
	m.Name, _ = d["name"].(string)
	if th, err := floats(d["threshold_range"], 2); err == nil {
		m.Threshold = [2]float64{th[0], th[1]}
	}
	m.Labels, _ = volume.New(volume.Uint8, ct.Dims)
	m.Labels.Spacing = ct.Spacing
	out, in := m.Labels.Data.([]uint8), padded.Data.([]uint8)
	X, Y, Z := ct.Dims[0], ct.Dims[1], ct.Dims[2]
	i := 0
	for z := 1; z <= Z; z++ {
		for y := 1; y <= Y; y++ {
			row := in[(z*(Y+1)+y)*(X+1)+1:]
			for x := 0; x < X; x++ {
				if row[x] != 0 {
					out[i] = 1
				}
				i++
			}
		}
	}
	return m, nil
}

// readRaw reads a little-endian C-order array (InVesalius writes numpy memmaps).
func readRaw(src fileSource, name string, t volume.DType, dims [4]int) (*volume.Volume, error) {
	if err := volume.CheckSize(dims, t); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rc, size, err := src.open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	// Compare sizes before allocating, so a wrong shape costs nothing.
	want := int64(dims[0]*dims[1]*dims[2]*dims[3]) * int64(t.Size())
	if size != want {
		return nil, fmt.Errorf("%s: %w: %d bytes for a %d×%d×%d %s array of %d bytes", name, volume.ErrTruncated, size, dims[2], dims[1], dims[0], t, want)
	}
	v, _ := volume.New(t, dims)
	if err := binary.Read(rc, binary.LittleEndian, v.Data); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, volume.ErrTruncated, err)
	}
	return v, nil
}

func ints(v any, n int) ([]int, error) {
	f, err := floats(v, n)
	if err != nil {
		return nil, err
	}
	out := make([]int, n)
	for i, x := range f {
		if x != float64(int(x)) {
			return nil, fmt.Errorf("%w: %v is not an integer", volume.ErrFormat, x)
		}
		out[i] = int(x)
	}
	return out, nil
}

func floats(v any, n int) ([]float64, error) {
	a, ok := v.([]any)
	if !ok || len(a) != n {
		return nil, fmt.Errorf("%w: want an array of %d numbers, got %v", volume.ErrFormat, n, v)
	}
	out := make([]float64, n)
	for i, x := range a {
		switch x := x.(type) {
		case int64:
			out[i] = float64(x)
		case float64:
			out[i] = x
		default:
			return nil, fmt.Errorf("%w: %v is not a number", volume.ErrFormat, x)
		}
	}
	return out, nil
}
