package jpegstream

import (
	"errors"
	"testing"
)

// TestBits reads entropy-coded bytes: 0xFF 0x00 is a stuffed 0xFF, a marker ends the data
// (zeros follow), and using bits past the end is reported as truncation.
func TestBits(t *testing.T) {
	var b Bits
	b.Reset([]byte{0xA5, 0xFF, 0x00, 0x3C, 0xFF, 0xD0, 0x11})
	for i, want := range []int32{0xA5, 0xFF, 0x3C} {
		if got := b.Receive(8); got != want {
			t.Fatalf("byte %d: %#x, want %#x", i, got, want)
		}
	}
	if err := b.Err(); err != nil {
		t.Fatalf("after the data: %v", err)
	}
	if got := b.Receive(4); got != 0 {
		t.Errorf("past the marker: %#x, want zeros", got)
	}
	if err := b.Err(); !errors.Is(err, ErrTruncated) {
		t.Errorf("reading past the marker: %v, want ErrTruncated", err)
	}
	// Restart moves past RST0 and starts afresh.
	b.Reset([]byte{0xF0, 0xFF, 0xD0, 0x81})
	b.Receive(4)
	if err := b.Restart(0); err != nil {
		t.Fatal(err)
	}
	if got := b.Receive(8); got != 0x81 {
		t.Errorf("after the restart: %#x, want 0x81", got)
	}
	b.Reset([]byte{0xF0, 0xFF, 0xD3, 0x81})
	if err := b.Restart(0); !errors.Is(err, ErrFormat) {
		t.Errorf("RST3 where RST0 was due: %v", err)
	}
}

// TestHuffman builds the table of T.81 Table K.3 (the example luminance DC table) and
// decodes its codes; a table with more codes of a length than fit is refused.
func TestHuffman(t *testing.T) {
	// K.3: lengths 2 (1 code), 3 (5 codes), 4, 5, 6, 7, 8, 9 (1 each): symbols 0…11.
	seg := []byte{0x00, 0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	var tabs Tables
	if err := tabs.ParseDHT(seg); err != nil {
		t.Fatal(err)
	}
	// Codes: 00 → 0, 010 → 1, 011 → 2, 100 → 3, 101 → 4, 110 → 5, 1110 → 6, 11110 → 7,
	// 111110 → 8, 1111110 → 9, 11111110 → 10, 111111110 → 11.
	// The bits 00 010 111110 111111110 then padding 1s: 0001 0111 1101 1111 1110 1111.
	var b Bits
	b.Reset([]byte{0x17, 0xDF, 0xEF})
	for _, want := range []int{0, 1, 8, 11} {
		if got := b.Decode(tabs[0][0]); got != want {
			t.Errorf("decoded %d, want %d", got, want)
		}
	}
	// Three codes of length 1, where only two fit.
	over := []byte{0x10, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3}
	if err := tabs.ParseDHT(over); !errors.Is(err, ErrFormat) {
		t.Errorf("overfull table: %v", err)
	}
}
