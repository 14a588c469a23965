package engine

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/cpu"
)

// Vector levels of OpenBLAS kernels, ordered.
const (
	levelGeneric = iota // SSE-era kernels (Prescott, Core2, Nehalem, generic)
	levelAVX            // Sandybridge, Bulldozer family
	levelAVX2           // Haswell, Zen
	levelAVX512         // SkylakeX and newer
)

// coreLevel ranks an OpenBLAS core name by the widest vector instructions its SGEMM uses.
func coreLevel(name string) int {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "skylakex", "cooperlake", "sapphirerapids":
		return levelAVX512
	case "haswell", "zen", "zen 2", "zen2", "skylake", "excavator":
		return levelAVX2
	case "sandybridge", "bulldozer", "piledriver", "steamroller":
		return levelAVX
	}
	return levelGeneric
}

// cpuFlags are the features that decide which OpenBLAS core type this CPU can run.
type cpuFlags struct {
	avx512 bool // AVX512F, VL, BW and DQ, with OS support
	avx2   bool // AVX2 and FMA
}

func hostFlags() cpuFlags {
	x := cpu.X86
	return cpuFlags{
		avx512: x.HasAVX512F && x.HasAVX512VL && x.HasAVX512BW && x.HasAVX512DQ,
		avx2:   x.HasAVX2 && x.HasFMA,
	}
}

// bestCore is the strongest OpenBLAS core type the CPU supports and its level.
func bestCore(f cpuFlags) (string, int) {
	switch {
	case f.avx512:
		return "SkylakeX", levelAVX512
	case f.avx2:
		return "Haswell", levelAVX2
	}
	return "", levelGeneric
}

// coreFix returns the core type to force when OpenBLAS's choice (current) is weaker than
// the CPU allows, or one the CPU lacks (which would crash on an illegal instruction).
func coreFix(current string, f cpuFlags) (string, bool) {
	best, level := bestCore(f)
	if best == "" {
		return "", false
	}
	if cur := coreLevel(current); cur != level {
		return best, true
	}
	return "", false
}

// reexecGuard marks a process that EnsureCoreType has already re-executed.
const reexecGuard = "AMID_OPENBLAS_REEXEC"

// EnsureCoreType makes sure OpenBLAS runs the kernels this CPU supports. OpenBLAS reads
// OPENBLAS_CORETYPE once, when the library loads, before any Go code runs: setting it with
// os.Setenv is too late. So when OpenBLAS chose a core weaker than the CPU's feature flags
// allow (or one the CPU lacks), EnsureCoreType re-executes the current binary with the
// variable set and does not return. Call it first thing in main, before any output,
// goroutine or open file that must not be duplicated. It returns nil when nothing needs
// fixing or without OpenBLAS, and an error when the re-executed process still has the
// wrong core or exec fails.
func EnsureCoreType() error {
	if !HaveOpenBLAS {
		return nil
	}
	cur := CoreName()
	want, fix := coreFix(cur, hostFlags())
	if !fix {
		return nil
	}
	if os.Getenv(reexecGuard) != "" {
		return fmt.Errorf("engine: OpenBLAS uses core %q after restart with OPENBLAS_CORETYPE=%s", cur, want)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("engine: restart with OPENBLAS_CORETYPE=%s: %w", want, err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENBLAS_CORETYPE=") {
			env = append(env, kv)
		}
	}
	env = append(env, "OPENBLAS_CORETYPE="+want, reexecGuard+"=1")
	return execSelf(exe, os.Args, env)
}
