package widget

import "sync/atomic"

// frameRunner, when set, replaces fyne.DoAndWait for applying rendered frames in views
// that have no runner of their own.
var frameRunner atomic.Pointer[func(func())]

// RunFramesWith makes views apply their rendered frames through run instead of
// fyne.DoAndWait, until the returned function restores the default. It is a seam for
// headless tests of screens that hold views: Fyne's test driver has no UI goroutine, so a
// test supplies one (or discards frames when it checks no pixels). Call it before the
// views are shown.
func RunFramesWith(run func(func())) (restore func()) {
	frameRunner.Store(&run)
	return func() { frameRunner.Store(nil) }
}
