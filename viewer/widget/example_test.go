package widget_test

import (
	"fmt"

	"amid/viewer/volume"
	"amid/viewer/widget"
)

// Render the axial slice of a NIfTI-style (RAS-stored) volume: the first voxel along x is
// the patient's leftmost, so it lands on the screen's right, as radiologists read.
func ExampleRenderer() {
	v, _ := volume.New(volume.Int16, [4]int{3, 1, 1, 1})
	v.Direction = [9]float64{-1, 0, 0, 0, -1, 0, 0, 0, 1}
	copy(v.Data.([]int16), []int16{0, 40, 80})
	l := widget.NewLayout(v, widget.Axial)
	fmt.Println("left", l.Left, "right", l.Right, "top", l.Top, "bottom", l.Bottom)

	var r widget.Renderer
	img, _ := r.Render(v, &widget.Params{Plane: widget.Axial, Window: widget.CTPresets[0].Window})
	for x := 0; x < 3; x++ {
		fmt.Print(img.RGBAAt(x, 0).R, " ")
	}
	fmt.Println()
	// Output:
	// left R right L top A bottom P
	// 255 128 0
}
