package forest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// magic opens an encoded forest.
const magic = "AMIDRF1\n"

// Limits of a decoded forest, far above what the plugins grow (a few dozen trees of a few
// thousand nodes on tens of features), so that a corrupt file cannot make the decoder
// allocate without bound.
const (
	maxFeatures = 4096
	maxClasses  = 256
	maxTrees    = 4096
	maxNodes    = 1 << 22
)

// ErrFormat reports bytes that are not an encoded forest.
var ErrFormat = errors.New("forest: not an encoded forest")

// MarshalBinary encodes f: the magic, then little-endian counts and values.
func (f *Forest) MarshalBinary() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(magic)
	w := func(v any) { _ = binary.Write(&b, binary.LittleEndian, v) }
	w(uint32(f.Classes))
	w(uint32(len(f.Binner.Edges)))
	for _, e := range f.Binner.Edges {
		w(uint32(len(e)))
		w(e)
	}
	w(uint32(len(f.Trees)))
	for _, t := range f.Trees {
		w(uint32(len(t.nodes)))
		w(t.nodes)
		w(uint32(len(t.Probs)))
		w(t.Probs)
	}
	return b.Bytes(), nil
}

// UnmarshalBinary decodes what MarshalBinary wrote, checking every count and index, and
// fails with ErrFormat otherwise.
func (f *Forest) UnmarshalBinary(data []byte) error {
	r := bytes.NewReader(data)
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(r, head); err != nil || string(head) != magic {
		return fmt.Errorf("%w: no %q header", ErrFormat, magic[:len(magic)-1])
	}
	count := func(what string, limit int) (int, error) {
		var n uint32
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
			return 0, fmt.Errorf("%w: %s: %w", ErrFormat, what, err)
		}
		if int64(n) > int64(limit) || int64(n) > int64(r.Len()) {
			return 0, fmt.Errorf("%w: %d %s, more than the file or the limit of %d holds", ErrFormat, n, what, limit)
		}
		return int(n), nil
	}
	read := func(what string, v any) error {
		if err := binary.Read(r, binary.LittleEndian, v); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrFormat, what, err)
		}
		return nil
	}
	var out Forest
	var err error
	if out.Classes, err = count("classes", maxClasses); err != nil {
		return err
	}
	if out.Classes < 1 {
		return fmt.Errorf("%w: no classes", ErrFormat)
	}
	nf, err := count("features", maxFeatures)
	if err != nil {
		return err
	}
	out.Binner = &Binner{Edges: make([][]float32, nf)}
	for i := range nf {
		ne, err := count("bin edges", MaxBins-1)
		if err != nil {
			return err
		}
		e := make([]float32, ne)
		if err := read("bin edges", e); err != nil {
			return err
		}
		for j := range e {
			if math.IsNaN(float64(e[j])) || (j > 0 && e[j] <= e[j-1]) {
				return fmt.Errorf("%w: feature %d's bin edges are not ascending", ErrFormat, i)
			}
		}
		out.Binner.Edges[i] = e
	}
	nt, err := count("trees", maxTrees)
	if err != nil {
		return err
	}
	for t := range nt {
		nn, err := count("nodes", maxNodes)
		if err != nil {
			return err
		}
		nodes := make([]node, nn)
		if err := read("nodes", nodes); err != nil {
			return err
		}
		np, err := count("leaf values", maxNodes*maxClasses)
		if err != nil {
			return err
		}
		probs := make([]float32, np)
		if err := read("leaf values", probs); err != nil {
			return err
		}
		if err := check(nodes, len(probs), nf, out.Classes); err != nil {
			return fmt.Errorf("%w: tree %d: %w", ErrFormat, t, err)
		}
		out.Trees = append(out.Trees, Tree{nodes: nodes, Probs: probs})
	}
	if r.Len() != 0 {
		return fmt.Errorf("%w: %d bytes after the last tree", ErrFormat, r.Len())
	}
	*f = out
	return nil
}

// check makes sure a decoded tree's walk ends at a leaf from every node: children lie
// after their parent (so there is no cycle), features and leaf offsets are in range.
func check(nodes []node, probs, features, classes int) error {
	if len(nodes) == 0 {
		return errors.New("no nodes")
	}
	for i, nd := range nodes {
		if nd.Leaf >= 0 {
			if int(nd.Leaf)+classes > probs {
				return fmt.Errorf("node %d's leaf values lie past the tree's %d", i, probs)
			}
			continue
		}
		if nd.Feature < 0 || int(nd.Feature) >= features {
			return fmt.Errorf("node %d splits feature %d of %d", i, nd.Feature, features)
		}
		if int(nd.Left) <= i || int(nd.Right) <= i || int(nd.Left) >= len(nodes) || int(nd.Right) >= len(nodes) {
			return fmt.Errorf("node %d's children %d and %d", i, nd.Left, nd.Right)
		}
	}
	return nil
}
