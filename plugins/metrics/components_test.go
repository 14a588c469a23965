package metrics

import (
	"fmt"
	"testing"
)

func TestComponentsGolden(t *testing.T) {
	g := loadVolGolden(t)
	for _, c := range g.Binary {
		t.Run(c.Name, func(t *testing.T) {
			gt, pred := binarise(paintVol(c.Dims, c.GT)), binarise(paintVol(c.Dims, c.Pred))
			for _, conn := range []Connectivity{Conn6, Conn18, Conn26} {
				for _, m := range []struct {
					name string
					mask []uint8
				}{{"gt", gt}, {"pred", pred}} {
					n, err := CountComponents(m.mask, c.Dims, conn)
					if err != nil {
						t.Fatal(err)
					}
					check(t, c.Want, fmt.Sprintf("cc%d_%s", conn, m.name), float64(n))
				}
			}
			l, _, err := Label(gt, c.Dims, Conn26)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sha32(l), c.Want["label26_gt_sha256"]; got != want {
				t.Errorf("26-connected labels of gt differ from scipy.ndimage.label (sha256 %s, want %s)", got, want)
			}
			l, _, err = Label(pred, c.Dims, Conn6)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sha32(l), c.Want["label6_pred_sha256"]; got != want {
				t.Errorf("6-connected labels of pred differ from scipy.ndimage.label (sha256 %s, want %s)", got, want)
			}
		})
	}
}

func TestComponentsEdges(t *testing.T) {
	dims := [3]int{3, 3, 3}
	m := make([]uint8, 27)
	// two voxels touching only at a corner: one component at 26, two at 6 and 18
	m[0], m[26] = 0, 0
	m[0+0] = 1
	m[(1*3+1)*3+1] = 1
	for conn, want := range map[Connectivity]int{Conn6: 2, Conn18: 2, Conn26: 1} {
		n, err := CountComponents(m, dims, conn)
		if err != nil || n != want {
			t.Errorf("conn %d: %d components (%v), want %d", conn, n, err, want)
		}
	}
	// edge neighbours: joined at 18 and 26 only
	e := make([]uint8, 27)
	e[0], e[(0*3+1)*3+1] = 1, 1
	for conn, want := range map[Connectivity]int{Conn6: 2, Conn18: 1, Conn26: 1} {
		n, _ := CountComponents(e, dims, conn)
		if n != want {
			t.Errorf("edge pair, conn %d: %d components, want %d", conn, n, want)
		}
	}
	if _, err := CountComponents(m, dims, 8); err == nil {
		t.Error("connectivity 8 accepted")
	}
	if _, err := CountComponents(m[:5], dims, Conn6); err == nil {
		t.Error("short mask accepted")
	}
	c, _ := NewComponents(e, dims, Conn26)
	if s := c.Sizes(); len(s) != 1 || s[0] != 2 {
		t.Errorf("sizes %v, want [2]", s)
	}
	n, _ := CountComponents(make([]uint8, 27), dims, Conn26)
	if n != 0 {
		t.Errorf("empty mask has %d components", n)
	}
}

func FuzzComponents(f *testing.F) {
	f.Add([]byte{1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 0, 1, 0, 0, 1}, uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, w uint8) {
		nx := int(w%7) + 1
		if len(b) < nx {
			return
		}
		ny := 2
		nz := len(b) / (nx * ny)
		if nz == 0 {
			return
		}
		dims := [3]int{nx, ny, nz}
		m := b[:nx*ny*nz]
		for _, conn := range []Connectivity{Conn6, Conn18, Conn26} {
			n, err := CountComponents(m, dims, conn)
			if err != nil {
				t.Fatal(err)
			}
			if want := bruteComponents(m, dims, conn); n != want {
				t.Fatalf("conn %d: %d components, flood fill finds %d", conn, n, want)
			}
		}
	})
}

// bruteComponents counts components by flood fill, the definition itself.
func bruteComponents(m []uint8, dims [3]int, conn Connectivity) int {
	nx, ny, nz := dims[0], dims[1], dims[2]
	seen := make([]bool, len(m))
	n := 0
	for s := range m {
		if m[s] == 0 || seen[s] {
			continue
		}
		n++
		stack := []int{s}
		seen[s] = true
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			x, y, z := i%nx, i/nx%ny, i/(nx*ny)
			for dz := -1; dz <= 1; dz++ {
				for dy := -1; dy <= 1; dy++ {
					for dx := -1; dx <= 1; dx++ {
						k := abs3(dx) + abs3(dy) + abs3(dz)
						if k == 0 || (conn == Conn6 && k > 1) || (conn == Conn18 && k > 2) {
							continue
						}
						xx, yy, zz := x+dx, y+dy, z+dz
						if xx < 0 || yy < 0 || zz < 0 || xx >= nx || yy >= ny || zz >= nz {
							continue
						}
						j := (zz*ny+yy)*nx + xx
						if m[j] != 0 && !seen[j] {
							seen[j] = true
							stack = append(stack, j)
						}
					}
				}
			}
		}
	}
	return n
}
