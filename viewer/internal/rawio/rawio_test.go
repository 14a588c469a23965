package rawio

import (
	"errors"
	"io"
	"strings"
	"testing"

	"amid/viewer/volume"
)

func TestLast(t *testing.T) {
	for _, remain := range []int64{10, -1} { // known length, and a stream of unknown length
		r, err := Last(strings.NewReader("headerDATA"), remain, 4, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r)
		if string(b) != "DATA" {
			t.Fatalf("remain %d: %q", remain, b)
		}
		if _, err := Last(strings.NewReader("abc"), min(remain, 3), 4, 1<<20); !errors.Is(err, volume.ErrTruncated) {
			t.Fatalf("remain %d: short stream gave %v", remain, err)
		}
	}
}

func TestReadN(t *testing.T) {
	for _, sized := range []bool{true, false} {
		b, err := ReadN(strings.NewReader("abcdef"), 4, sized)
		if err != nil || string(b) != "abcd" {
			t.Fatalf("sized %v: %q %v", sized, b, err)
		}
		if _, err := ReadN(strings.NewReader("ab"), 4, sized); err == nil {
			t.Fatalf("sized %v: a short stream was accepted", sized)
		}
	}
}
