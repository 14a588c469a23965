//go:build !unix

package engine

import "fmt"

func execSelf(exe string, _, _ []string) error {
	return fmt.Errorf("engine: OpenBLAS chose a weaker core than this CPU supports; start %s with OPENBLAS_CORETYPE set (restart is not supported on this system)", exe)
}
