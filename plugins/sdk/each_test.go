package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// Every case is visited once, each error lands at its case's index, and FirstError is
// the lowest index's whatever order the workers ran in.
func TestEachCase(t *testing.T) {
	var calls atomic.Int64
	errs, err := EachCase(context.Background(), 100, func(i int) error {
		calls.Add(1)
		if i%7 == 3 {
			return fmt.Errorf("case %d", i)
		}
		return nil
	})
	if err != nil || calls.Load() != 100 || len(errs) != 100 {
		t.Fatalf("%d calls, %d errors, %v", calls.Load(), len(errs), err)
	}
	for i, e := range errs {
		if (e != nil) != (i%7 == 3) {
			t.Fatalf("case %d: %v", i, e)
		}
	}
	if got := FirstError(errs); got == nil || got.Error() != "case 3" {
		t.Fatalf("first error %v, want case 3's", got)
	}
	if FirstError(make([]error, 3)) != nil {
		t.Fatal("no errors gave one")
	}
	// A cancelled context hands out no case and says so.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls.Store(0)
	if _, err := EachCase(ctx, 10, func(int) error { calls.Add(1); return nil }); !errors.Is(err, context.Canceled) || calls.Load() != 0 {
		t.Fatalf("cancelled: %d calls, %v", calls.Load(), err)
	}
	if errs, err := EachCase(context.Background(), 0, func(int) error { return nil }); err != nil || len(errs) != 0 {
		t.Fatalf("no cases: %v %v", errs, err)
	}
}

// TestEachWithWorkers checks that EachWith makes at most workers calls at a time, and one
// when asked for none.
func TestEachWithWorkers(t *testing.T) {
	for _, workers := range []int{0, 1, 2, 3} {
		var now, most atomic.Int32
		if _, err := EachWith(context.Background(), 12, workers, func(int) error {
			n := now.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(5 * time.Millisecond)
			now.Add(-1)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if want := int32(max(workers, 1)); most.Load() > want {
			t.Errorf("%d workers: %d calls at once", workers, most.Load())
		}
	}
}
