//go:build !cgo

package vk

// Without cgo there is no loader: Open reports ErrNoLoader, and nothing below is reached.

type cInstance struct{}

type cDevice struct{}

type cBuffer struct{}

type cPipe struct{}

type cSet struct{}

type cProgram struct{}

// withCgo says whether the package can reach Vulkan.
const withCgo = false

const (
	resSuccess       = 0
	resTimeout       = 2
	resNotReady      = 1
	resIncomplete    = 5
	resHostMemory    = -1
	resDeviceMemory  = -2
	resDeviceLost    = -4
	resIncompatible  = -9
	resNotPresent    = -8
	resFragmentation = -1000161000
)

const (
	memDevice   = 0
	memUpload   = 1
	memReadback = 2
)

func loadInstance(string) (cInstance, uint32, int32, bool) { return cInstance{}, 0, 0, false }

func (cInstance) close()                         {}
func (cInstance) count() (int, int32)            { return 0, resIncompatible }
func (cInstance) info(int) (Info, int32)         { return Info{}, resIncompatible }
func (cInstance) device(int) (cDevice, int32)    { return cDevice{}, resIncompatible }
func (cDevice) close()                           {}
func (cDevice) idle() int32                      { return resDeviceLost }
func (cDevice) budget() (budget, usage []uint64) { return nil, nil }
func (cDevice) alloc(int64, int) (cBuffer, []byte, int32) {
	return cBuffer{}, nil, resDeviceMemory
}
func (cDevice) free(cBuffer, bool) {}
func (cDevice) pipeline([]byte, int, int, []uint32) (cPipe, int32) {
	return cPipe{}, resIncompatible
}
func (cDevice) destroyPipeline(*cPipe)                            {}
func (cDevice) program() (cProgram, int32)                        { return cProgram{}, resIncompatible }
func (cDevice) set(*cProgram, *Pipeline, []Binding) (cSet, int32) { return cSet{}, resIncompatible }
func (cDevice) record(*cProgram, []op, int) int32                 { return resIncompatible }
func (cDevice) submit(*cProgram) int32                            { return resDeviceLost }
func (cDevice) wait(*cProgram) int32                              { return resDeviceLost }
func (cDevice) queries(*cProgram, int) ([]uint64, int32)          { return nil, resIncompatible }
func (cDevice) destroyProgram(*cProgram)                          {}

func mallocInUse() (uint64, bool) { return 0, false }
