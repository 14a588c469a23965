//go:build unix

package engine

import (
	"fmt"
	"syscall"
)

func execSelf(exe string, args, env []string) error {
	if err := syscall.Exec(exe, args, env); err != nil {
		return fmt.Errorf("engine: restart %s with OPENBLAS_CORETYPE: %w", exe, err)
	}
	return nil
}
