//go:build ignore

// Command icon draws AMID's application icon, assets/icon.png: an axial CT-like head
// section (skull ring, brain) with a coloured segmentation contour, on a dark rounded
// square. Run from the module root: go run assets/gen/icon.go
package main

import (
	"image"
	"image/color"
	"image/png"
	"log"
	"math"
	"os"
)

func main() {
	const n = 256
	img := image.NewNRGBA(image.Rect(0, 0, n, n))
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			fx, fy := (float64(x)-127.5)/128, (float64(y)-127.5)/128
			// Rounded square background.
			corner := math.Max(math.Abs(fx), math.Abs(fy))
			if corner > 0.97 && math.Hypot(math.Max(math.Abs(fx)-0.77, 0), math.Max(math.Abs(fy)-0.77, 0)) > 0.2 {
				continue
			}
			c := color.NRGBA{24, 32, 48, 255}
			r := math.Hypot(fx/0.72, fy/0.86)
			switch {
			case r < 0.80:
				g := uint8(120 + 40*math.Cos(6*r))
				c = color.NRGBA{g, g, g, 255}
			case r < 0.92:
				c = color.NRGBA{240, 240, 235, 255}
			case r < 0.97:
				c = color.NRGBA{90, 90, 95, 255}
			}
			// A lesion outline in the right hemisphere.
			if d := math.Hypot(fx-0.28, fy+0.1); d > 0.17 && d < 0.22 {
				c = color.NRGBA{255, 90, 60, 255}
			}
			img.SetNRGBA(x, y, c)
		}
	}
	f, err := os.Create("assets/icon.png")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		log.Fatal(err)
	}
}
