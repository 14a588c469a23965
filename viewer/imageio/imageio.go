// Package imageio reads and writes images in every format AMID supports, choosing the
// format by file extension (and, for files without a known extension, by magic bytes):
//
//	NIfTI-1/-2   .nii .nii.gz            read, write
//	MetaImage    .mha .mhd (+.raw/.zraw) read, write
//	NRRD         .nrrd .nhdr .seg.nrrd   read, write
//	DICOM        .dcm, or a folder       read (a folder, searched through its subfolders
//	                                     or DICOMDIR, must hold one image series); a DICOM
//	                                     SEG reads as its label map on the grid of its frames
//	DICOM labels SEG, RTSTRUCT           ReadLabels places them on their image's grid
//	PNG TIFF BMP .png .tif .tiff .bmp    read; PNG and TIFF write
//	InVesalius   .inv3                   read (the CT; masks through package inv3)
//
// Each format lives in its own package under viewer/; this one only dispatches.
package imageio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"amid/viewer/dicom"
	"amid/viewer/inv3"
	"amid/viewer/metaimage"
	"amid/viewer/nifti"
	"amid/viewer/nrrd"
	"amid/viewer/raster"
	"amid/viewer/volume"
)

// Format names a file format.
type Format string

// The formats.
const (
	NIfTI      Format = "nifti"
	MetaImage  Format = "metaimage"
	NRRD       Format = "nrrd"
	DICOM      Format = "dicom"
	PNG        Format = "png"
	TIFF       Format = "tiff"
	BMP        Format = "bmp"
	InVesalius Format = "invesalius"
)

// ErrUnknownFormat is returned for a path whose format cannot be told.
var ErrUnknownFormat = errors.New("unknown image format")

// FormatOf tells a path's format from its extension, from magic bytes when the extension
// says nothing, and DICOM for a folder.
func FormatOf(path string) (Format, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return DICOM, nil
	}
	if f, ok := formatByExt(path); ok {
		return f, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 348)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case n >= 132 && string(head[128:132]) == "DICM":
		return DICOM, nil
	case bytes.HasPrefix(head, []byte("NRRD")):
		return NRRD, nil
	case bytes.HasPrefix(head, []byte("\x89PNG")):
		return PNG, nil
	case bytes.HasPrefix(head, []byte("II*\x00")), bytes.HasPrefix(head, []byte("MM\x00*")):
		return TIFF, nil
	case bytes.HasPrefix(head, []byte("BM")):
		return BMP, nil
	case bytes.HasPrefix(head, []byte("ObjectType")), bytes.HasPrefix(head, []byte("NDims")):
		return MetaImage, nil
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return NIfTI, nil // a gzip stream without a known extension: NIfTI is the only gzip container
	case n >= 348 && (string(head[344:348]) == "n+1\x00" || string(head[344:348]) == "ni1\x00"),
		n >= 8 && (string(head[4:8]) == "n+2\x00" || string(head[4:8]) == "ni2\x00"):
		return NIfTI, nil
	}
	return "", fmt.Errorf("%s: %w (extension %q, no known magic bytes)", path, ErrUnknownFormat, filepath.Ext(path))
}

func formatByExt(path string) (Format, bool) {
	p := strings.ToLower(path)
	switch {
	case strings.HasSuffix(p, ".nii"), strings.HasSuffix(p, ".nii.gz"):
		return NIfTI, true
	case strings.HasSuffix(p, ".mha"), strings.HasSuffix(p, ".mhd"):
		return MetaImage, true
	case strings.HasSuffix(p, ".nrrd"), strings.HasSuffix(p, ".nhdr"):
		return NRRD, true
	case strings.HasSuffix(p, ".dcm"), strings.HasSuffix(p, ".dicom"):
		return DICOM, true
	case strings.HasSuffix(p, ".png"):
		return PNG, true
	case strings.HasSuffix(p, ".tif"), strings.HasSuffix(p, ".tiff"):
		return TIFF, true
	case strings.HasSuffix(p, ".bmp"):
		return BMP, true
	case strings.HasSuffix(p, ".inv3"):
		return InVesalius, true
	}
	return "", false
}

// Read reads the image at path in whatever format it is.
func Read(path string) (*volume.Volume, error) {
	v, _, err := Load(path)
	return v, err
}

// Load reads the image at path and also reports its format.
func Load(path string) (*volume.Volume, Format, error) {
	f, err := FormatOf(path)
	if err != nil {
		return nil, "", err
	}
	var v *volume.Volume
	switch f {
	case NIfTI:
		v, err = nifti.Read(path)
	case MetaImage:
		v, err = metaimage.Read(path)
	case NRRD:
		v, err = nrrd.Read(path)
	case DICOM:
		if st, serr := os.Stat(path); serr == nil && st.IsDir() {
			v, _, err = dicom.ReadDir(path)
		} else if kind := labelObject(path); kind == objSEG {
			v, err = readSEG(path, nil)
		} else {
			v, _, err = dicom.ReadFile(path)
		}
	case PNG, TIFF, BMP:
		v, err = raster.Read(path)
	case InVesalius:
		var p *inv3.Project
		if p, err = inv3.Read(path); err == nil {
			v = p.CT
		}
	}
	if err != nil {
		return nil, f, err
	}
	return v, f, nil
}

// Write writes v to path in the format its extension names.
func Write(path string, v *volume.Volume) error {
	if err := v.Validate(); err != nil {
		return fmt.Errorf("%s: not written: %w", path, err)
	}
	f, ok := formatByExt(path)
	if !ok {
		return fmt.Errorf("%s: %w: cannot tell the output format from the extension %q", path, ErrUnknownFormat, filepath.Ext(path))
	}
	switch f {
	case NIfTI:
		return nifti.Write(path, v)
	case MetaImage:
		return metaimage.Write(path, v)
	case NRRD:
		return nrrd.Write(path, v)
	case PNG, TIFF:
		return raster.Write(path, v)
	}
	return fmt.Errorf("%s: writing %s is not supported (write .nii.gz, .mha, .nrrd, .png or .tif)", path, f)
}
