package main

import "amid/plugins/engine"

// feed copies a batch of n samples laid out as the data and infer packages give them
// (per sample, every plane of each channel in turn, stack slices each: image channels
// first, then the position planes of data.Norm.Coords) into the network's inputs: the image
// channels' planes into u.Input, and the centre slice of each position plane into
// u.Position when the network takes them.
func feed(u *engine.UNet, in []float32, n, stack int) {
	if u.Position == nil {
		copy(u.Input.Data, in)
		return
	}
	img := len(u.Input.Data) / n                // image floats per sample
	pos := len(u.Position.Data) / n             // position floats per sample
	plane := pos / u.Position.Shape.C           // voxels of a patch
	per := img + u.Position.Shape.C*stack*plane // what a sample holds in in
	for i := range n {
		src := in[i*per : (i+1)*per]
		copy(u.Input.Data[i*img:(i+1)*img], src[:img])
		for c := range u.Position.Shape.C {
			at := img + (c*stack+stack/2)*plane
			copy(u.Position.Data[i*pos+c*plane:i*pos+(c+1)*plane], src[at:at+plane])
		}
	}
}
