// Package ckpt saves and loads training checkpoints of the engine's U-Nets: parameters,
// batch norm running statistics and optimizer state (Adam moments or SGD momentum, step
// count) behind a JSON manifest that records the architecture, the training configuration,
// the engine version, the epoch and step, and the SHA-256 of the payload.
//
// A checkpoint is one file: the magic "AMIDCKPT", the format version and the manifest
// length as little-endian uint32, the manifest JSON, then the payload: every tensor the
// manifest lists, in order, as little-endian float32, and after them the extra bytes the
// manifest counts (a model that is not tensors: the segmentation plugin's forest keeps its
// trees there, under the same SHA-256; none for a network). Files are written atomically and
// durably (amid/assets/fileio), so a crash leaves the old checkpoint or the new one, never
// half of one.
package ckpt

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"amid/assets/fileio"
	"amid/plugins/engine"
)

// Format is the version of the file layout this package writes and reads.
const Format = 1

const (
	magic       = "AMIDCKPT"
	headerLen   = len(magic) + 8
	maxManifest = 16 << 20
)

// Errors of Load, wrapped with the file and the problem.
var (
	// ErrFormat reports a file that is not a checkpoint or is damaged.
	ErrFormat = errors.New("ckpt: not a valid checkpoint")
	// ErrMismatch reports a checkpoint made for another architecture or optimizer.
	ErrMismatch = errors.New("ckpt: checkpoint does not fit the model")
)

// Model is what a checkpoint saves of a network (an *engine.Net or *engine.UNet).
type Model interface {
	Params() []*engine.Param
	Buffers() []engine.Buffer
}

// Optimizer is an optimizer whose state a checkpoint saves (*engine.Adam, *engine.SGD).
type Optimizer interface {
	State() engine.OptimState
	SetState(engine.OptimState) error
}

// Tensor describes one tensor of the payload.
type Tensor struct {
	// Name is the parameter or buffer name; optimizer slots are "<slot>/<parameter>".
	Name string `json:"name"`
	// Kind is "param", "buffer" or "optim".
	Kind  string `json:"kind"`
	Shape []int  `json:"shape"`
}

// Manifest is a checkpoint's JSON header.
type Manifest struct {
	Format        int               `json:"format"`
	EngineVersion string            `json:"engine_version"`
	Arch          engine.UNetConfig `json:"arch"`
	// Train is the training configuration as the trainer gave it.
	Train json.RawMessage `json:"train,omitempty"`
	Epoch int             `json:"epoch"`
	Step  int             `json:"step"`
	// Optimizer is the optimizer kind ("adam", "sgd") and its own step count; empty
	// without optimizer state.
	Optimizer     string `json:"optimizer,omitempty"`
	OptimizerStep int    `json:"optimizer_step,omitempty"`
	// DataState is the state of the training data's order where it is not a function of
	// the step alone (a random generator's, for one), so that a resumed run draws what an
	// uninterrupted one would; empty when there is none.
	DataState []byte   `json:"data_state,omitempty"`
	Tensors   []Tensor `json:"tensors"`
	// ExtraBytes is the length of the bytes the payload carries after the tensors
	// ([Checkpoint.Extra]); 0 for a network's checkpoint.
	ExtraBytes   int64  `json:"extra_bytes,omitempty"`
	PayloadBytes int64  `json:"payload_bytes"`
	SHA256       string `json:"sha256"`
}

// Checkpoint is what Save writes.
type Checkpoint struct {
	Arch engine.UNetConfig
	// Train is any JSON-encodable training configuration.
	Train       any
	Epoch, Step int
	Model       Model
	// Opt may be nil: weights only.
	Opt Optimizer
	// DataState, when not empty, is recorded as the manifest's DataState.
	DataState []byte
	// Extra are bytes a model keeps beside its tensors (a forest's trees), written after
	// them in the payload, under its SHA-256; [Read] returns them.
	Extra []byte
}

// slots lists an optimizer state's slot names in a fixed order.
func slots(s engine.OptimState) []string {
	names := make([]string, 0, len(s.Slots))
	for k := range s.Slots {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Save writes c to path atomically and durably (amid/assets/fileio).
func Save(path string, c Checkpoint) error {
	m := Manifest{Format: Format, EngineVersion: engine.Version, Arch: c.Arch, Epoch: c.Epoch, Step: c.Step, DataState: c.DataState}
	if c.Train != nil {
		raw, err := json.Marshal(c.Train)
		if err != nil {
			return fmt.Errorf("checkpoint %s: encoding the training configuration: %w", path, err)
		}
		m.Train = raw
	}
	var data [][]float32
	add := func(name, kind string, shape []int, d []float32) {
		m.Tensors = append(m.Tensors, Tensor{Name: name, Kind: kind, Shape: shape})
		data = append(data, d)
	}
	params := c.Model.Params()
	for _, p := range params {
		add(p.Name, "param", p.Shape, p.Data)
	}
	for _, b := range c.Model.Buffers() {
		add(b.Name, "buffer", []int{len(b.Data)}, b.Data)
	}
	if c.Opt != nil {
		st := c.Opt.State()
		m.Optimizer, m.OptimizerStep = st.Kind, st.Step
		for _, s := range slots(st) {
			bufs := st.Slots[s]
			if len(bufs) != len(params) {
				return fmt.Errorf("checkpoint %s: optimizer slot %q has %d buffers for %d parameters: %w", path, s, len(bufs), len(params), ErrMismatch)
			}
			for i, b := range bufs {
				add(s+"/"+params[i].Name, "optim", params[i].Shape, b)
			}
		}
	}
	var n int
	for _, d := range data {
		n += len(d)
	}
	payload := make([]byte, 4*n, 4*n+len(c.Extra))
	off := 0
	for _, d := range data {
		for _, v := range d {
			binary.LittleEndian.PutUint32(payload[off:], math.Float32bits(v))
			off += 4
		}
	}
	payload = append(payload, c.Extra...)
	m.ExtraBytes = int64(len(c.Extra))
	sum := sha256.Sum256(payload)
	m.PayloadBytes, m.SHA256 = int64(len(payload)), hex.EncodeToString(sum[:])
	man, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return fmt.Errorf("checkpoint %s: encoding the manifest: %w", path, err)
	}
	var head [headerLen]byte
	copy(head[:], magic)
	binary.LittleEndian.PutUint32(head[len(magic):], Format)
	binary.LittleEndian.PutUint32(head[len(magic)+4:], uint32(len(man)))
	if err := fileio.Write(path, head[:], man, payload); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return nil
}

// ReadManifest reads only the manifest of the checkpoint at path.
func ReadManifest(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	defer f.Close()
	m, _, err := readHeader(f)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return m, nil
}

// readHeader parses the fixed header and the manifest and returns the manifest and its
// length in bytes with the header.
func readHeader(r io.Reader) (*Manifest, int64, error) {
	var head [headerLen]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, 0, fmt.Errorf("%w: header cut short (%v)", ErrFormat, err)
	}
	if string(head[:len(magic)]) != magic {
		return nil, 0, fmt.Errorf("%w: no %q magic", ErrFormat, magic)
	}
	if v := binary.LittleEndian.Uint32(head[len(magic):]); v != Format {
		return nil, 0, fmt.Errorf("%w: format %d, this build reads format %d", ErrFormat, v, Format)
	}
	n := binary.LittleEndian.Uint32(head[len(magic)+4:])
	if n > maxManifest {
		return nil, 0, fmt.Errorf("%w: manifest of %d bytes exceeds %d", ErrFormat, n, maxManifest)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, 0, fmt.Errorf("%w: manifest cut short (%v)", ErrFormat, err)
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(buf))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, 0, fmt.Errorf("%w: manifest: %v", ErrFormat, err)
	}
	if err := m.check(); err != nil {
		return nil, 0, err
	}
	return &m, int64(headerLen) + int64(n), nil
}

// check verifies the manifest's own consistency: tensor sizes add up to the payload.
func (m *Manifest) check() error {
	if m.Format != Format {
		return fmt.Errorf("%w: manifest format %d, want %d", ErrFormat, m.Format, Format)
	}
	if len(m.SHA256) != 64 {
		return fmt.Errorf("%w: manifest sha256 %q is not 64 hex digits", ErrFormat, m.SHA256)
	}
	if _, err := hex.DecodeString(m.SHA256); err != nil {
		return fmt.Errorf("%w: manifest sha256 %q is not hex", ErrFormat, m.SHA256)
	}
	var total int64
	for _, t := range m.Tensors {
		n := int64(1)
		for _, d := range t.Shape {
			if d < 0 || (d > 0 && n > math.MaxInt32/int64(d)) {
				return fmt.Errorf("%w: tensor %q has shape %v", ErrFormat, t.Name, t.Shape)
			}
			n *= int64(d)
		}
		total += 4 * n
		if total > math.MaxInt64/2 {
			return fmt.Errorf("%w: tensors too large", ErrFormat)
		}
	}
	if m.ExtraBytes < 0 || m.ExtraBytes > math.MaxInt64/2 {
		return fmt.Errorf("%w: %d extra bytes", ErrFormat, m.ExtraBytes)
	}
	if total+m.ExtraBytes != m.PayloadBytes {
		return fmt.Errorf("%w: tensors hold %d bytes and %d more follow, manifest says %d", ErrFormat, total, m.ExtraBytes, m.PayloadBytes)
	}
	return nil
}

func (t Tensor) size() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Load reads the checkpoint at path into model and, when opt is not nil, into the
// optimizer. It verifies the payload's SHA-256 and refuses a checkpoint whose
// architecture differs from arch (the model's) with an error naming the first difference.
// Nothing of model or opt changes unless the whole checkpoint fits.
func Load(path string, arch engine.UNetConfig, model Model, opt Optimizer) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	m, err := decode(f, st.Size(), arch, model, opt)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return m, nil
}

// decode reads a checkpoint of size bytes from r.
func decode(r io.Reader, size int64, arch engine.UNetConfig, model Model, opt Optimizer) (*Manifest, error) {
	m, off, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	if want := off + m.PayloadBytes; size != want {
		return nil, fmt.Errorf("%w: file has %d bytes, manifest and payload need %d (truncated or padded)", ErrFormat, size, want)
	}
	payload, err := readPayload(r, m)
	if err != nil {
		return nil, err
	}
	if err := SameArch(m.Arch, arch); err != nil {
		return nil, err
	}
	// Destinations, in the order Save writes them.
	type dst struct {
		t Tensor
		d []float32
	}
	var want []dst
	params := model.Params()
	for _, p := range params {
		want = append(want, dst{Tensor{p.Name, "param", p.Shape}, p.Data})
	}
	for _, b := range model.Buffers() {
		want = append(want, dst{Tensor{b.Name, "buffer", []int{len(b.Data)}}, b.Data})
	}
	var ost engine.OptimState
	if opt != nil {
		if m.Optimizer == "" {
			return nil, fmt.Errorf("%w: checkpoint has no optimizer state", ErrMismatch)
		}
		cur := opt.State()
		if cur.Kind != m.Optimizer {
			return nil, fmt.Errorf("%w: checkpoint has %s optimizer state, optimizer is %s", ErrMismatch, m.Optimizer, cur.Kind)
		}
		ost = engine.OptimState{Kind: m.Optimizer, Step: m.OptimizerStep, Slots: map[string][][]float32{}}
		for _, s := range slots(cur) {
			for _, p := range params {
				b := make([]float32, len(p.Data))
				ost.Slots[s] = append(ost.Slots[s], b)
				want = append(want, dst{Tensor{s + "/" + p.Name, "optim", p.Shape}, b})
			}
		}
	}
	// The checkpoint may hold optimizer state that is not wanted (loading weights only).
	have := m.Tensors
	if opt == nil {
		have = slices.DeleteFunc(slices.Clone(have), func(t Tensor) bool { return t.Kind == "optim" })
	}
	if len(have) != len(want) {
		return nil, fmt.Errorf("%w: checkpoint has %d tensors, model and optimizer have %d", ErrMismatch, len(have), len(want))
	}
	for i, w := range want {
		h := have[i]
		if h.Name != w.t.Name || h.Kind != w.t.Kind || !slices.Equal(h.Shape, w.t.Shape) {
			return nil, fmt.Errorf("%w: tensor %d is %s %q %v in the checkpoint, %s %q %v in the model", ErrMismatch, i, h.Kind, h.Name, h.Shape, w.t.Kind, w.t.Name, w.t.Shape)
		}
	}
	// Stage every value, then copy, so a failure leaves the model untouched.
	staged := make([][]float32, len(want))
	pos, wi := 0, 0
	for _, t := range m.Tensors {
		n := t.size()
		if opt == nil && t.Kind == "optim" {
			pos += 4 * n
			continue
		}
		v := make([]float32, n)
		for j := range v {
			v[j] = math.Float32frombits(binary.LittleEndian.Uint32(payload[pos+4*j:]))
		}
		pos += 4 * n
		staged[wi] = v
		wi++
	}
	if opt != nil {
		// Optimizer buffers were allocated above as destinations: fill them first.
		for i, w := range want {
			if w.t.Kind == "optim" {
				copy(w.d, staged[i])
			}
		}
		if err := opt.SetState(ost); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMismatch, err)
		}
	}
	for i, w := range want {
		if w.t.Kind != "optim" {
			copy(w.d, staged[i])
		}
	}
	return m, nil
}

// readPayload reads m's payload from r and verifies its SHA-256.
func readPayload(r io.Reader, m *Manifest) ([]byte, error) {
	payload := make([]byte, m.PayloadBytes)
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, fmt.Errorf("%w: payload cut short (%v)", ErrFormat, err)
	}
	sum := sha256.Sum256(payload)
	if got := hex.EncodeToString(sum[:]); got != m.SHA256 {
		return nil, fmt.Errorf("%w: payload sha256 %s, manifest says %s (corrupt file)", ErrFormat, got, m.SHA256)
	}
	return payload, nil
}

// Stored is a checkpoint's parameters and buffers on the host, in the order the file
// holds them, without the network they belong to: a Model to save again (a frozen network
// carried inside another's checkpoint) or to copy into a network built for it.
type Stored struct {
	params []*engine.Param
	bufs   []engine.Buffer
	// Extra are the bytes the checkpoint carries after its tensors ([Checkpoint.Extra]).
	Extra []byte
}

// Params implements Model.
func (s *Stored) Params() []*engine.Param { return s.params }

// Buffers implements Model.
func (s *Stored) Buffers() []engine.Buffer { return s.bufs }

// Read reads the manifest and the parameters and buffers (not the optimizer state) of the
// checkpoint at path, verifying the payload's SHA-256, without building its network.
func Read(path string) (*Manifest, *Stored, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	m, off, err := readHeader(f)
	if err == nil && st.Size() != off+m.PayloadBytes {
		err = fmt.Errorf("%w: file has %d bytes, manifest and payload need %d (truncated or padded)", ErrFormat, st.Size(), off+m.PayloadBytes)
	}
	var payload []byte
	if err == nil {
		payload, err = readPayload(f, m)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	s := &Stored{}
	pos := 0
	for _, t := range m.Tensors {
		n := t.size()
		if t.Kind != "optim" {
			v := make([]float32, n)
			for j := range v {
				v[j] = math.Float32frombits(binary.LittleEndian.Uint32(payload[pos+4*j:]))
			}
			switch t.Kind {
			case "param":
				s.params = append(s.params, &engine.Param{Name: t.Name, Shape: slices.Clone(t.Shape), Data: v})
			case "buffer":
				s.bufs = append(s.bufs, engine.Buffer{Name: t.Name, Data: v})
			default:
				return nil, nil, fmt.Errorf("checkpoint %s: %w: tensor %q has kind %q", path, ErrFormat, t.Name, t.Kind)
			}
		}
		pos += 4 * n
	}
	s.Extra = payload[pos:]
	return m, s, nil
}
