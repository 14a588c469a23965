//go:build !unix

package lanejob

import (
	"context"
	"fmt"
	"os"
	"time"
)

// lockWait creates path exclusively, waiting while it exists: a process that dies leaves
// the file behind, which the host's requeue then waits for; remove it by hand.
func lockWait(ctx context.Context, path string, every time.Duration, waiting func()) (func(), error) {
	said := time.Time{}
	for {
		f, err := os.OpenFile(path+".held", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			f.Close()
			return func() { os.Remove(path + ".held") }, nil
		}
		if !os.IsExist(err) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Since(said) >= every {
			said = time.Now()
			waiting()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
