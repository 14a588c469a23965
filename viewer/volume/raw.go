package volume

import (
	"encoding/binary"
	"math"
)

// DecodeBytes converts len(b)/t.Size() elements of type t stored in byte order o into a new
// data slice of that type (nil for Invalid). Readers of raw formats share it.
func DecodeBytes(b []byte, t DType, o binary.ByteOrder) any {
	if t.Size() == 0 {
		return nil
	}
	n := len(b) / t.Size()
	switch t {
	case Uint8:
		out := make([]uint8, n)
		copy(out, b)
		return out
	case Int8:
		out := make([]int8, n)
		for i := range out {
			out[i] = int8(b[i])
		}
		return out
	case Uint16:
		out := make([]uint16, n)
		for i := range out {
			out[i] = o.Uint16(b[2*i:])
		}
		return out
	case Int16:
		out := make([]int16, n)
		for i := range out {
			out[i] = int16(o.Uint16(b[2*i:]))
		}
		return out
	case Uint32:
		out := make([]uint32, n)
		for i := range out {
			out[i] = o.Uint32(b[4*i:])
		}
		return out
	case Int32:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(o.Uint32(b[4*i:]))
		}
		return out
	case Float32:
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(o.Uint32(b[4*i:]))
		}
		return out
	case Float64:
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(o.Uint64(b[8*i:]))
		}
		return out
	}
	return nil
}

// EncodeBytes is the inverse of DecodeBytes: the elements of a data slice as bytes in order o.
func EncodeBytes(data any, o binary.ByteOrder) []byte {
	t := DataType(data)
	n := DataLen(data)
	b := make([]byte, n*t.Size())
	switch d := data.(type) {
	case []uint8:
		copy(b, d)
	case []int8:
		for i, x := range d {
			b[i] = byte(x)
		}
	case []uint16:
		for i, x := range d {
			o.PutUint16(b[2*i:], x)
		}
	case []int16:
		for i, x := range d {
			o.PutUint16(b[2*i:], uint16(x))
		}
	case []uint32:
		for i, x := range d {
			o.PutUint32(b[4*i:], x)
		}
	case []int32:
		for i, x := range d {
			o.PutUint32(b[4*i:], uint32(x))
		}
	case []float32:
		for i, x := range d {
			o.PutUint32(b[4*i:], math.Float32bits(x))
		}
	case []float64:
		for i, x := range d {
			o.PutUint64(b[8*i:], math.Float64bits(x))
		}
	}
	return b
}
