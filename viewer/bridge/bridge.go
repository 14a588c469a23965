// Package bridge is the one place where background goroutines meet Fyne's goroutine: the
// only caller of fyne.Do in the program.
//
// Background code (a run's events, a file read, a rendered slice) posts state changes to a
// Bridge. Posts under the same key coalesce: only the newest runs, so a burst of progress
// events or slice changes shows its last state rather than queueing every one. The bridge
// applies what is pending in one flush on Fyne's goroutine, at most once per Interval
// (about 60 times a second), in the order of the posts; a post made while a flush runs
// waits for the next.
//
// Post never runs anything on the caller's goroutine and never waits for the UI goroutine:
// a flush is handed to fyne.Do from a goroutine of the bridge's own, which holds no lock of
// the caller's. So a caller may post while holding its own lock, which keeps its posts in
// the order it made them (a newer state can never be overtaken by an older one), and what
// a flush applies may take that lock: even when fyne.Do runs a function at once on the
// goroutine that calls it (as Fyne does while the app shuts down, and as its test driver
// does), no goroutine waits for itself.
//
// The package imports fyne.io/fyne/v2 but not its driver (fyne.io/fyne/v2/app), so the
// widgets (viewer/widget) and the screens (app/ui) that use it stay testable headless with
// fyne.io/fyne/v2/test; a test hands New a function that queues flushes for the goroutine
// standing in for the UI goroutine.
package bridge

import (
	"sync"
	"time"

	"fyne.io/fyne/v2"
)

// Interval is the shortest time between the starts of two flushes: about 60 a second.
const Interval = time.Second / 60

// Bridge applies posted state changes on the UI goroutine. Its methods are safe for
// concurrent use.
type Bridge struct {
	run func(func()) // hands a flush to the UI goroutine

	mu        sync.Mutex
	pending   []*post       // in the order posted; superseded ones have no apply
	byKey     map[any]*post // the pending post of each key
	scheduled bool          // a flush is on its way or running
	last      time.Time     // the start of the last flush
	flushes   int           // flushes run (tests)
}

// post is one posted change.
type post struct {
	apply func()
	done  chan struct{} // closed when it ran or was superseded (PostAndWait)
	ran   bool          // set before done closes
}

// New returns a bridge that hands its flushes to the UI goroutine with run: nil for
// fyne.Do; a test passes a function that queues them for its own stand-in goroutine.
func New(run func(func())) *Bridge {
	if run == nil {
		run = fyne.Do
	}
	return &Bridge{run: run, byKey: map[any]*post{}}
}

// Default is the program's bridge onto fyne.Do, made on first use: the app's screens and
// every widget not given another (SliceView.UseBridge) share it, so they flush together.
var Default = sync.OnceValue(func() *Bridge { return New(nil) })

// Post asks for apply to run on the UI goroutine with the next flush. A post replaces the
// pending post of the same key, which then never runs; a nil key is never replaced. Keys
// are compared with ==: a pointer to what the change is about, or a small struct naming it.
func (b *Bridge) Post(key any, apply func()) { b.add(key, &post{apply: apply}) }

// PostAndWait posts as Post does and waits: it returns true once apply has run, false when
// a newer post of key replaced it or stop closed first. It must not be called on the UI
// goroutine, which would wait for itself.
func (b *Bridge) PostAndWait(key any, apply func(), stop <-chan struct{}) bool {
	p := &post{apply: apply, done: make(chan struct{})}
	b.add(key, p)
	select {
	case <-p.done:
		return p.ran
	case <-stop:
		return false
	}
}

func (b *Bridge) add(key any, p *post) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if key != nil {
		if old := b.byKey[key]; old != nil {
			old.apply = nil
			if old.done != nil {
				close(old.done)
			}
		}
		b.byKey[key] = p
	}
	b.pending = append(b.pending, p)
	b.scheduleLocked()
}

// scheduleLocked hands a flush to the UI goroutine Interval after the last one started,
// from a timer's goroutine, unless one is on its way already.
func (b *Bridge) scheduleLocked() {
	if b.scheduled {
		return
	}
	b.scheduled = true
	time.AfterFunc(max(0, time.Until(b.last.Add(Interval))), func() { b.run(b.flush) })
}

// flush applies what is pending (UI goroutine). Posts made meanwhile wait for the next
// flush, which is scheduled once this one has finished, so flushes never overlap even
// when the runner runs them on goroutines of their own.
func (b *Bridge) flush() {
	b.mu.Lock()
	b.last = time.Now()
	b.flushes++
	todo := b.pending
	b.pending = nil
	clear(b.byKey)
	b.mu.Unlock()
	for _, p := range todo {
		if p.apply == nil { // superseded; its waiter was told then
			continue
		}
		p.apply()
		if p.done != nil {
			p.ran = true
			close(p.done)
		}
	}
	b.mu.Lock()
	b.scheduled = false
	if len(b.pending) > 0 {
		b.scheduleLocked()
	}
	b.mu.Unlock()
}
