package planner

import (
	"context"
	"testing"

	"amid/plugins/protocol"
)

// The rules carry each candidate's device and planned memory into its lane; Devices fills
// them in for a planner that leaves them out, by the lane's name.
func TestDevices(t *testing.T) {
	in := Input{Plugins: []Plugin{{Name: "segmentation", Candidates: []protocol.Candidate{
		{Name: "2d", Config: []byte(`{}`), Device: "vulkan:0 GPU", DeviceBytes: 5 << 30},
		{Name: "3d_fullres", Config: []byte(`{}`), Device: "vulkan:0 GPU", DeviceBytes: 7 << 30},
	}}}}
	lanes, err := Rules{}.Plan(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lanes {
		if l.Device != "vulkan:0 GPU" || l.DeviceBytes < 5<<30 {
			t.Errorf("rules lane %s: %q, %d bytes", l.Name, l.Device, l.DeviceBytes)
		}
	}
	got := Devices([]Lane{{Name: "segmentation/3d_fullres", Plugin: "segmentation"}, {Name: "segmentation/other", Plugin: "segmentation"}}, in.Plugins)
	if got[0].Device != "vulkan:0 GPU" || got[0].DeviceBytes != 7<<30 || got[1].Device != "" {
		t.Errorf("Devices: %+v", got)
	}
}
