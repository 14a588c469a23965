// Package atomicfile writes files so that a reader never sees a half-written one: the
// bytes go to a temporary file beside the target, which is renamed over it when complete.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write writes the parts, in order, to path with mode 0644. On error the target is left as
// it was and the temporary file is removed.
func Write(path string, parts ...[]byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	for _, p := range parts {
		if _, err = f.Write(p); err != nil {
			break
		}
	}
	if err == nil {
		err = f.Chmod(0o644) // CreateTemp makes it 0600
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", filepath.Base(path), err)
	}
	return nil
}
