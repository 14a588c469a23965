// Package volume is AMID's in-memory image model: a 2D or 3D image (optionally with several
// channels per voxel) stored as one flat, row-major slice in its native element type, with
// the geometry that places it in patient space.
//
// # Layout
//
// Dims are (X, Y, Z, C): X columns, Y rows, Z slices, C channels per voxel (1 for scalar
// images, 3 for RGB, 4 for RGBA, more for multi-channel or multi-timepoint data). The
// element for voxel (x, y, z), channel c lives at index ((z*Y+y)*X+x)*C+c: channels vary
// fastest, then x, then y, then z. A 2D image is a volume with Z = 1. Label maps are integer
// volumes on the same grid as the image they label.
//
// # Geometry
//
// World coordinates are in millimetres in the LPS patient frame (x grows to the patient's
// Left, y to Posterior, z to Superior), the convention of DICOM and ITK. Direction is a
// 3×3 matrix stored row-major whose column j is the unit vector, in LPS, along which voxel
// index j grows. The voxel↔world transform is
//
//	world = Origin + Direction · diag(Spacing) · index
//
// exactly as ITK's Image::TransformIndexToPhysicalPoint. Readers of RAS formats (NIfTI)
// convert to LPS by negating the first two rows of their affine.
package volume

import (
	"errors"
	"fmt"
	"math"
)

// DType is the native element type of a volume's data.
type DType uint8

// The element types a volume may hold. RGB and RGBA images are Uint8 with 3 or 4 channels.
const (
	Invalid DType = iota
	Uint8
	Int8
	Uint16
	Int16
	Uint32
	Int32
	Float32
	Float64
)

var dtypeNames = [...]string{"invalid", "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64"}

func (t DType) String() string {
	if int(t) < len(dtypeNames) {
		return dtypeNames[t]
	}
	return fmt.Sprintf("dtype(%d)", uint8(t))
}

// Size is the number of bytes of one element, 0 for Invalid.
func (t DType) Size() int {
	switch t {
	case Uint8, Int8:
		return 1
	case Uint16, Int16:
		return 2
	case Uint32, Int32, Float32:
		return 4
	case Float64:
		return 8
	}
	return 0
}

// IsInteger reports whether t holds integers (and so may be a label map).
func (t DType) IsInteger() bool { return t >= Uint8 && t <= Int32 }

// ParseDType is the inverse of DType.String.
func ParseDType(s string) (DType, error) {
	for i, n := range dtypeNames {
		if i > 0 && n == s {
			return DType(i), nil
		}
	}
	return Invalid, fmt.Errorf("unknown element type %q", s)
}

// Errors shared by every reader and writer. Format packages wrap them with the file name
// and the detail, so callers can test with errors.Is.
var (
	ErrTooLarge  = errors.New("image too large")
	ErrTruncated = errors.New("file truncated")
	ErrFormat    = errors.New("not a valid image file")
	ErrGeometry  = errors.New("invalid geometry")
	ErrDType     = errors.New("unsupported element type")
)

// Limits that every reader checks before it allocates, so an absurd header cannot exhaust
// memory. They are variables so that a program with more memory may raise them, before it
// reads anything; a reader takes them once per call (DefaultLimits), and the fuzz tests
// pass lower Limits to the readers' decode functions instead of changing these.
var (
	// MaxVoxels is the most voxels (times channels) a volume may hold: 2³¹, e.g.
	// 1024×1024×2048, far above any ReX-MLE case (the largest, PUMA tiles and SEG.A CTAs,
	// are under 2²⁸).
	MaxVoxels int64 = 1 << 31
	// MaxBytes is the most bytes a decoded volume may take: 8 GiB, a third of a 24 GiB
	// workstation.
	MaxBytes int64 = 8 << 30
)

// Volume is an image on a regular grid. See the package documentation for the layout and
// the geometry convention.
type Volume struct {
	Dims      [4]int     // X, Y, Z, C
	Spacing   [3]float64 // mm between voxel centres along X, Y, Z
	Origin    [3]float64 // LPS position of voxel (0,0,0), mm
	Direction [9]float64 // row-major 3×3; column j is axis j's unit vector in LPS
	// Data is one of []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32,
	// []float64, of length X·Y·Z·C.
	Data any
}

// Identity is the identity direction matrix.
var Identity = [9]float64{1, 0, 0, 0, 1, 0, 0, 0, 1}

// Limits bound what one read may allocate: voxels (times channels) and bytes.
type Limits struct {
	Voxels, Bytes int64
}

// DefaultLimits are the program's limits, MaxVoxels and MaxBytes.
func DefaultLimits() Limits { return Limits{Voxels: MaxVoxels, Bytes: MaxBytes} }

// CheckSize is DefaultLimits().Check.
func CheckSize(dims [4]int, t DType) error { return DefaultLimits().Check(dims, t) }

// Check returns an error wrapping ErrTooLarge or ErrGeometry when a volume of these dims
// and element type may not be allocated within l. Readers call it before allocating.
func (l Limits) Check(dims [4]int, t DType) error {
	if t.Size() == 0 {
		return fmt.Errorf("%w: %v", ErrDType, t)
	}
	n := int64(1)
	for i, d := range dims {
		if d <= 0 {
			return fmt.Errorf("%w: dimension %d is %d", ErrGeometry, i, d)
		}
		if n > l.Voxels/int64(d) {
			return fmt.Errorf("%w: %d×%d×%d×%d voxels exceed the limit of %d", ErrTooLarge, dims[0], dims[1], dims[2], dims[3], l.Voxels)
		}
		n *= int64(d)
	}
	if n > l.Voxels {
		return fmt.Errorf("%w: %d voxels exceed the limit of %d", ErrTooLarge, n, l.Voxels)
	}
	if n*int64(t.Size()) > l.Bytes {
		return fmt.Errorf("%w: %d bytes exceed the limit of %d", ErrTooLarge, n*int64(t.Size()), l.Bytes)
	}
	return nil
}

// New allocates a zeroed volume with unit spacing, zero origin and identity direction.
func New(t DType, dims [4]int) (*Volume, error) {
	if err := CheckSize(dims, t); err != nil {
		return nil, err
	}
	n := dims[0] * dims[1] * dims[2] * dims[3]
	v := &Volume{Dims: dims, Spacing: [3]float64{1, 1, 1}, Direction: Identity}
	v.Data = MakeData(t, n)
	return v, nil
}

// MakeData allocates a zeroed slice of n elements of type t; nil for Invalid.
func MakeData(t DType, n int) any {
	switch t {
	case Uint8:
		return make([]uint8, n)
	case Int8:
		return make([]int8, n)
	case Uint16:
		return make([]uint16, n)
	case Int16:
		return make([]int16, n)
	case Uint32:
		return make([]uint32, n)
	case Int32:
		return make([]int32, n)
	case Float32:
		return make([]float32, n)
	case Float64:
		return make([]float64, n)
	}
	return nil
}

// DataType reports the element type of a data slice, Invalid for anything else.
func DataType(data any) DType {
	switch data.(type) {
	case []uint8:
		return Uint8
	case []int8:
		return Int8
	case []uint16:
		return Uint16
	case []int16:
		return Int16
	case []uint32:
		return Uint32
	case []int32:
		return Int32
	case []float32:
		return Float32
	case []float64:
		return Float64
	}
	return Invalid
}

// DType is the element type of v's data.
func (v *Volume) DType() DType { return DataType(v.Data) }

// Len is the number of elements in Data (voxels times channels).
func (v *Volume) Len() int { return v.Dims[0] * v.Dims[1] * v.Dims[2] * v.Dims[3] }

// NumVoxels is X·Y·Z.
func (v *Volume) NumVoxels() int { return v.Dims[0] * v.Dims[1] * v.Dims[2] }

// Index is the position in Data of voxel (x, y, z), channel c.
func (v *Volume) Index(x, y, z, c int) int {
	return ((z*v.Dims[1]+y)*v.Dims[0]+x)*v.Dims[3] + c
}

// DataLen is the length of a data slice of any supported type, -1 for anything else.
func DataLen(data any) int {
	switch d := data.(type) {
	case []uint8:
		return len(d)
	case []int8:
		return len(d)
	case []uint16:
		return len(d)
	case []int16:
		return len(d)
	case []uint32:
		return len(d)
	case []int32:
		return len(d)
	case []float32:
		return len(d)
	case []float64:
		return len(d)
	}
	return -1
}

// Validate checks that the data matches the dims and that the geometry is usable: finite
// positive spacing, finite origin, and a finite, non-singular direction matrix.
func (v *Volume) Validate() error {
	t := v.DType()
	if t == Invalid {
		return fmt.Errorf("%w: data of Go type %T", ErrDType, v.Data)
	}
	if err := CheckSize(v.Dims, t); err != nil {
		return err
	}
	if n := DataLen(v.Data); n != v.Len() {
		return fmt.Errorf("%w: %d elements for dims %v", ErrGeometry, n, v.Dims)
	}
	for i, s := range v.Spacing {
		if !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("%w: spacing %d is %v", ErrGeometry, i, s)
		}
	}
	for i, o := range v.Origin {
		if math.IsNaN(o) || math.IsInf(o, 0) {
			return fmt.Errorf("%w: origin %d is %v", ErrGeometry, i, o)
		}
	}
	for _, d := range v.Direction {
		if math.IsNaN(d) || math.IsInf(d, 0) {
			return fmt.Errorf("%w: direction %v is not finite", ErrGeometry, v.Direction)
		}
	}
	if math.Abs(det3(v.Direction)) < 1e-6 {
		return fmt.Errorf("%w: direction %v is singular", ErrGeometry, v.Direction)
	}
	return nil
}

// At returns the value of voxel (x, y, z), channel c, as float64.
func (v *Volume) At(x, y, z, c int) float64 { return valueAt(v.Data, v.Index(x, y, z, c)) }

// AtIndex returns Data[i] as float64.
func (v *Volume) AtIndex(i int) float64 { return valueAt(v.Data, i) }

func valueAt(data any, i int) float64 {
	switch d := data.(type) {
	case []uint8:
		return float64(d[i])
	case []int8:
		return float64(d[i])
	case []uint16:
		return float64(d[i])
	case []int16:
		return float64(d[i])
	case []uint32:
		return float64(d[i])
	case []int32:
		return float64(d[i])
	case []float32:
		return float64(d[i])
	case []float64:
		return d[i]
	}
	panic(fmt.Sprintf("volume: data of Go type %T", data))
}

// SetIndex stores f at Data[i], converting to the element type (integers are rounded and
// clamped to their range).
func (v *Volume) SetIndex(i int, f float64) {
	switch d := v.Data.(type) {
	case []uint8:
		d[i] = uint8(clampRound(f, 0, math.MaxUint8))
	case []int8:
		d[i] = int8(clampRound(f, math.MinInt8, math.MaxInt8))
	case []uint16:
		d[i] = uint16(clampRound(f, 0, math.MaxUint16))
	case []int16:
		d[i] = int16(clampRound(f, math.MinInt16, math.MaxInt16))
	case []uint32:
		d[i] = uint32(clampRound(f, 0, math.MaxUint32))
	case []int32:
		d[i] = int32(clampRound(f, math.MinInt32, math.MaxInt32))
	case []float32:
		d[i] = float32(f)
	case []float64:
		d[i] = f
	default:
		panic(fmt.Sprintf("volume: data of Go type %T", v.Data))
	}
}

func clampRound(f, lo, hi float64) float64 {
	if math.IsNaN(f) {
		return 0
	}
	return math.Max(lo, math.Min(hi, math.Round(f)))
}

// Float32 returns the data converted to float32 (a copy, also when it is float32 already).
func (v *Volume) Float32() []float32 {
	out := make([]float32, v.Len())
	switch d := v.Data.(type) {
	case []float32:
		copy(out, d)
	default:
		for i := range out {
			out[i] = float32(valueAt(v.Data, i))
		}
	}
	return out
}

// Clone returns a deep copy.
func (v *Volume) Clone() *Volume {
	c := *v
	c.Data = MakeData(v.DType(), v.Len())
	copyData(c.Data, v.Data)
	return &c
}

func copyData(dst, src any) {
	switch d := dst.(type) {
	case []uint8:
		copy(d, src.([]uint8))
	case []int8:
		copy(d, src.([]int8))
	case []uint16:
		copy(d, src.([]uint16))
	case []int16:
		copy(d, src.([]int16))
	case []uint32:
		copy(d, src.([]uint32))
	case []int32:
		copy(d, src.([]int32))
	case []float32:
		copy(d, src.([]float32))
	case []float64:
		copy(d, src.([]float64))
	}
}

// SameGrid reports whether a and b have the same X, Y, Z dims and the same geometry within
// tol (mm for origin and spacing, cosine units for direction).
func SameGrid(a, b *Volume, tol float64) bool {
	for i := 0; i < 3; i++ {
		if a.Dims[i] != b.Dims[i] || math.Abs(a.Spacing[i]-b.Spacing[i]) > tol || math.Abs(a.Origin[i]-b.Origin[i]) > tol {
			return false
		}
	}
	for i := range a.Direction {
		if math.Abs(a.Direction[i]-b.Direction[i]) > tol {
			return false
		}
	}
	return true
}
