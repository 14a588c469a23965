package engine

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/cpu"

	"amid/plugins/compute"
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
	avx    bool // AVX, with OS support
}

func hostFlags() cpuFlags {
	x := cpu.X86
	return cpuFlags{
		avx512: x.HasAVX512F && x.HasAVX512VL && x.HasAVX512BW && x.HasAVX512DQ,
		avx2:   x.HasAVX2 && x.HasFMA,
		avx:    x.HasAVX,
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

// ErrCoreType marks an OPENBLAS_CORETYPE this CPU cannot run, and a restart that did not
// give OpenBLAS the core it was asked for.
var ErrCoreType = errors.New("OpenBLAS core type")

// EnsureCoreType makes sure OpenBLAS runs the kernels this CPU supports.
//
// When OPENBLAS_CORETYPE is set (by the user, a test run, or an earlier restart), it is
// honoured: EnsureCoreType only checks that the CPU has the instructions the named core
// uses, and returns an error wrapping ErrCoreType when it does not (OpenBLAS would die on
// an illegal instruction at the first SGEMM).
//
// When AMID_OPENBLAS_PREFER names a core this CPU can run ([compute.EnvPreferCore]), that core is
// used.
//
// Otherwise, when nothing is set, OpenBLAS detected the core itself, and OpenBLAS 0.3.21 misdetects
// some CPUs (an AVX-512 Xeon as "Prescott", a 5× loss). OpenBLAS reads OPENBLAS_CORETYPE
// once, when the library loads, before any Go code runs: setting it with os.Setenv is too
// late. So when OpenBLAS chose a core weaker than the CPU's feature flags allow (or one
// the CPU lacks), EnsureCoreType re-executes the current binary with the variable set and
// does not return. Call it first thing in main, before any output, goroutine or open file
// that must not be duplicated. It returns nil when nothing needs fixing or without
// OpenBLAS.
func EnsureCoreType() error {
	if !HaveOpenBLAS {
		return nil
	}
	return coreCheck{core: CoreName(), cpu: hostFlags(), set: compute.ReadSettings(), restart: execSelf}.ensure()
}

// coreCheck is what EnsureCoreType decides from: the core OpenBLAS chose, the CPU's flags,
// the process's settings, and how to restart it (exe, args, env). Its tests pass their own.
type coreCheck struct {
	core    string
	cpu     cpuFlags
	set     compute.Settings
	restart func(exe string, args, env []string) error
}

// ensure is EnsureCoreType's decision; it restarts through c.restart.
func (c coreCheck) ensure() error {
	if forced := c.set.CoreType; forced != "" {
		if coreLevel(forced) > cpuLevel(c.cpu) {
			return fmt.Errorf("%w: %s=%s needs %s, which this CPU lacks", ErrCoreType, compute.EnvCoreType, forced, levelName(coreLevel(forced)))
		}
		if c.set.Restarted && coreLevel(c.core) != coreLevel(forced) {
			return fmt.Errorf("%w: OpenBLAS uses core %q after restart with %s=%s", ErrCoreType, c.core, compute.EnvCoreType, forced)
		}
		return nil
	}
	want, fix := coreFix(c.core, c.cpu)
	if pref := c.set.PreferCore; pref != "" && coreLevel(pref) <= cpuLevel(c.cpu) {
		want, fix = pref, !strings.EqualFold(pref, c.core)
	}
	if !fix {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("engine: restart with %s=%s: %w", compute.EnvCoreType, want, err)
	}
	env := append(os.Environ(), compute.EnvCoreType+"="+want, compute.EnvRestarted+"=1")
	return c.restart(exe, os.Args, env)
}

// cpuLevel is the widest kernel level the CPU's flags allow.
func cpuLevel(f cpuFlags) int {
	_, level := bestCore(f)
	if level == levelGeneric && f.avx {
		return levelAVX
	}
	return level
}

func levelName(level int) string {
	switch level {
	case levelAVX512:
		return "AVX-512"
	case levelAVX2:
		return "AVX2 and FMA"
	case levelAVX:
		return "AVX"
	}
	return "SSE"
}
