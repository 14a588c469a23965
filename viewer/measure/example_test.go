package measure_test

import (
	"fmt"

	"amid/viewer/measure"
	"amid/viewer/volume"
)

// A length across an axial slice of a CT grid with 0.7 × 0.7 × 3 mm voxels: 30 voxels
// along x and 40 along y are 0.7 · √(30² + 40²) = 35 mm.
func Example() {
	vol, _ := volume.New(volume.Int16, [4]int{64, 64, 10, 1})
	vol.Spacing = [3]float64{0.7, 0.7, 3}
	set, _ := measure.NewSet(vol, measure.UnitHU)
	m, err := set.Add(measure.Measurement{Kind: measure.Length, Axis: 2, Slice: 4,
		Points: [][3]float64{{10, 10, 0}, {40, 50, 0}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Text())
	b, _ := measure.Marshal([]measure.Measurement{m})
	fmt.Println(string(b))
	_, err = set.Add(measure.Measurement{Kind: measure.Length, Axis: 2, Slice: 4,
		Points: [][3]float64{{10, 10, 0}, {70, 50, 0}}})
	fmt.Println(err)
	// Output:
	// 35.0 mm
	// [{"id":1,"kind":"length","axis":2,"slice":4,"plane":"axial","points":[[10,10,4.5],[40,50,4.5]],"world":[[6.6499999999999995,6.6499999999999995,12],[27.65,34.65,12]],"values":[{"name":"length","value":35,"unit":"mm"}]}]
	// measurement outside the image: point 2 (70.0, 50.0, 4.5) is off the 64×64×10 voxels
}
