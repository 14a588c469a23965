//go:build unix

package lanejob

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockWait takes an exclusive lock on path (flock; over NFS the kernel turns it into a
// POSIX lock the server keeps), waiting while another process holds it, calling waiting
// every interval of the wait. The lock goes with the process: a killed process leaves
// none behind.
func lockWait(ctx context.Context, path string, every time.Duration, waiting func()) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	said := time.Time{}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Since(said) >= every {
			said = time.Now()
			waiting()
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
