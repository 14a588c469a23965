// Package shaders holds the engine's GLSL compute shaders and their SPIR-V, compiled by
// generate.sh (make generate) with Debian's glslc and committed; TestGeneratedCurrent
// checks that the SPIR-V is current.
package shaders

import (
	"embed"
	"fmt"
)

//go:generate ./generate.sh

//go:embed spv/*.spv
var spv embed.FS

// SPIRV returns the compiled shader name (the file name without .comp).
func SPIRV(name string) ([]byte, error) {
	b, err := spv.ReadFile("spv/" + name + ".spv")
	if err != nil {
		return nil, fmt.Errorf("shaders: no shader %q", name)
	}
	return b, nil
}
