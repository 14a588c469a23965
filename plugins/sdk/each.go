package sdk

import (
	"context"
	"runtime"
	"sync"
)

// EachCase calls f(i) for every i below n, as many at a time as there are CPUs, and
// returns each call's error by index (nil where it succeeded): what reading or featurising
// every case of a request in parallel needs. Once ctx is done it hands out no more cases
// and returns ctx's error.
func EachCase(ctx context.Context, n int, f func(i int) error) ([]error, error) {
	return EachWith(ctx, n, runtime.GOMAXPROCS(0), f)
}

// EachWith is EachCase with at most workers calls at a time (at least one): for work that
// is not bound by this process's CPUs, such as the host's benchmark running whole runs.
func EachWith(ctx context.Context, n, workers int, f func(i int) error) ([]error, error) {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(max(workers, 1), n) {
		wg.Go(func() {
			for i := range next {
				errs[i] = f(i)
			}
		})
	}
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return errs, ctx.Err()
}

// FirstError is the error of the lowest index in errs, the one a loop in order would have
// met first, whatever order the calls ran in; nil when there is none.
func FirstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
