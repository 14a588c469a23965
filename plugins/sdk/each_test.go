package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
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
