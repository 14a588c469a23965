package vk

import (
	"fmt"
	"testing"
)

// FuzzParseFaults: any string is refused or read; what is read reads back the same when
// written out again.
func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{"", "mem-cap=1048576", "lost-after=3,mem-cap=0", "mem-cap", "x=1", "mem-cap=-1", " lost-after=2 ,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseFaults(s)
		if err != nil {
			return
		}
		if o.MemoryCap < 0 || o.LoseAfter < 0 {
			t.Fatalf("%q read as %+v", s, o)
		}
		again, err := ParseFaults(fmt.Sprintf("mem-cap=%d,lost-after=%d", o.MemoryCap, o.LoseAfter))
		if err != nil || again != o {
			t.Fatalf("%q read as %+v, written and read again as %+v, %v", s, o, again, err)
		}
	})
}
