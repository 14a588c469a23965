package bridge

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"fyne.io/fyne/v2/test"
)

// queue stands in for the UI goroutine: the bridge hands it flushes and the test runs them.
type queue chan func()

func (q queue) run(f func()) { q <- f }

// next runs the next flush handed over, failing after 10 s (far beyond Interval).
func (q queue) next(t *testing.T) {
	t.Helper()
	select {
	case f := <-q:
		f()
	case <-time.After(10 * time.Second):
		t.Fatal("no flush within 10 s")
	}
}

// A flush applies the newest post of each key, once, in the order of the posts that are
// applied; posts with a nil key all run.
func TestCoalesceAndOrder(t *testing.T) {
	q := make(queue, 1)
	b := New(q.run)
	var got []string
	add := func(key any, s string) { b.Post(key, func() { got = append(got, s) }) }
	add("a", "a1")
	add("b", "b1")
	add(nil, "n1")
	add("a", "a2") // replaces a1 and runs after b1 and n1
	add(nil, "n2")
	add("b", "b2") // replaces b1
	q.next(t)
	want := []string{"n1", "a2", "n2", "b2"}
	if len(got) != len(want) {
		t.Fatalf("applied %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("applied %v, want %v", got, want)
		}
	}
	select {
	case <-q:
		t.Error("a second flush for posts already applied")
	case <-time.After(5 * Interval):
	}
}

// Posts made while a flush runs (by what it applies, or by other goroutines) wait for the
// next flush, which starts at least Interval after this one started.
func TestPostDuringFlush(t *testing.T) {
	q := make(queue, 1)
	b := New(q.run)
	var starts []time.Time
	var apply func()
	n := 0
	apply = func() {
		starts = append(starts, b.last) // this flush's start: written by this goroutine
		if n++; n < 4 {
			b.Post("k", apply)
		}
	}
	b.Post("k", apply)
	for range 4 {
		q.next(t)
	}
	for i := 1; i < len(starts); i++ {
		if d := starts[i].Sub(starts[i-1]); d < Interval {
			t.Errorf("flush %d started %v after the one before, want %v or more", i, d, Interval)
		}
	}
	if b.flushes != 4 {
		t.Errorf("%d flushes, want 4", b.flushes)
	}
}

// A flood of posts from several goroutines for 300 ms, with Fyne's test driver running each flush at
// once on the goroutine that hands it over (as the real driver does while the app shuts
// down), flushes at most once per Interval and ends on the newest state: no stale state
// overtakes a newer one, and no goroutine spins.
func TestFloodUnderTestDriver(t *testing.T) {
	test.NewTempApp(t)
	b := New(nil) // fyne.Do, which the test driver runs at once
	var (
		mu    sync.Mutex // the poster's own lock, held while posting, as the Monitor does
		state int
		shown atomic.Int64
		bad   atomic.Int64
	)
	last := int64(-1)
	show := func(v int) func() {
		return func() {
			if int64(v) < last {
				bad.Add(1)
			}
			last = int64(v) // flushes never overlap: no lock needed
			shown.Store(int64(v))
			mu.Lock() // what a flush applies may take the poster's lock
			_ = state
			mu.Unlock()
		}
	}
	began := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(began) < 300*time.Millisecond {
				mu.Lock()
				state++
				b.Post("state", show(state))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if !b.PostAndWait(nil, func() {}, nil) { // every earlier post has been applied or replaced
		t.Fatal("the closing post did not run")
	}
	elapsed := time.Since(began)
	if got := shown.Load(); got != int64(state) {
		t.Errorf("the screen shows state %d, want the newest, %d", got, state)
	}
	if n := bad.Load(); n > 0 {
		t.Errorf("%d older states shown after newer ones", n)
	}
	b.mu.Lock()
	flushes := b.flushes
	b.mu.Unlock()
	// Flush k starts at least (k-1)·Interval after the first, and all started before now.
	if limit := int(elapsed/Interval) + 1; flushes > limit {
		t.Errorf("%d flushes in %v, want at most %d (one per %v)", flushes, elapsed, limit, Interval)
	}
	t.Logf("%d posts from 4 goroutines: %d flushes in %v", state, flushes, elapsed.Round(time.Millisecond))
}

// PostAndWait reports whether its change ran: true once applied, false when replaced by a
// newer post of its key or when stop closes first.
func TestPostAndWait(t *testing.T) {
	q := make(queue, 1)
	b := New(q.run)
	res := make(chan bool, 2)
	go func() { res <- b.PostAndWait("frame", func() {}, nil) }()
	time.Sleep(10 * time.Millisecond) // let it post first
	go func() { res <- b.PostAndWait("frame", func() {}, nil) }()
	time.Sleep(10 * time.Millisecond)
	q.next(t)
	a, c := <-res, <-res
	if a == c || (!a && !c) {
		t.Errorf("two waits on one key: %v and %v, want one replaced (false) and one run (true)", a, c)
	}
	stop := make(chan struct{})
	close(stop)
	if b.PostAndWait("other", func() {}, stop) {
		t.Error("PostAndWait with stop closed reported its change ran")
	}
	q.next(t) // the stopped post still runs with the next flush
}

// Default hands flushes to fyne.Do.
func TestDefault(t *testing.T) {
	test.NewTempApp(t)
	if a, b := Default(), Default(); a != b {
		t.Fatal("Default is not one bridge")
	}
	done := make(chan struct{})
	Default().Post(nil, func() { close(done) })
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the default bridge never flushed")
	}
}
