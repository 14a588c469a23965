package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"amid/viewer/imageio"
	"amid/viewer/inv3"
	"amid/viewer/volume"
)

// The real scans and their label maps, in the real-image cache (.ci/realdata.sh;
// assets/realdata/SOURCES.md has each one's source and licence):
//
//   - the T1 brain MR of the ITK examples (Debian insighttoolkit5-examples), 128 × 128 ×
//     62 at 2 × 2 × 3 mm, with a tissue segmentation (KmeansPrelimSegmentation: 7 values)
//     and a brain mask (RawSkullStrip) made by ITK's algorithms from that scan: classes
//     that intensity gives;
//   - the MNI single-subject T1 brain MR ch2 (Colin27; Debian mricron-data), 181 × 217 ×
//     181 at 1 mm, with the AAL parcellation drawn on that brain (116 regions, their lobe
//     in the code of aal.nii.txt): grey-matter regions that look alike and differ by where
//     they lie;
//   - the INIA19 macaque T1 brain template (Debian mricron-data), 168 × 206 × 128 at
//     0.5 mm, with its NeuroMaps parcellation (362 regions a hemisphere; a right region's
//     value is its left twin's plus 1000), drawn on that brain;
//   - the head CT of InVesalius' Cranium project (Debian invesalius-examples), 256 × 256 ×
//     108 at 0.96 × 0.96 × 1.5 mm, with its bone mask (HU ≥ 226).
const (
	itkData   = "root/usr/share/doc/insighttoolkit5-examples/examples/Data"
	t1Image   = itkData + "/KmeansTest_T1UCharRaw.nii.gz"
	t1Tissues = itkData + "/KmeansTest_T1KmeansPrelimSegmentation.nii.gz"
	t1Brain   = itkData + "/KmeansTest_T1RawSkullStrip.nii.gz"
	templates = "root/usr/share/mricron/templates"
	ch2Image  = templates + "/ch2.nii.gz"
	aalLabels = templates + "/aal.nii.gz"
	aalNames  = templates + "/aal.nii.txt"
	iniaImage = templates + "/inia19-t1-brain.nii.gz"
	iniaMaps  = templates + "/inia19-NeuroMaps.nii.gz"
	cranium   = "invesalius"
)

// Every task is cut into nine slabs along its axis; slabs 1, 4 and 7 are the test cases,
// the other six train (the split the first report used). Each slab keeps its place in the
// patient frame (its origin).
const nSlabs = 9

var testSlabs = map[int]bool{1: true, 4: true, 7: true}

// Task sets: the schedule's and the planner's constants (minimum steps, Flat, shares,
// fold limits, lane sizes) are fitted on the tuning tasks only; the README's table
// reports the others, which nothing was tuned on. The other kinds' tasks (families.go)
// use the same two words.
const (
	tuning    = "tune"
	reporting = "report"
)

// taskDef is one benchmark task.
type taskDef struct {
	ID, Title string
	Set       string // tuning or reporting
	// Scale marks a task whose labels an intensity threshold gives: it tests the loop on a
	// scan at its real size, not learning, and is kept out of the shortcut goal.
	Scale    bool
	Modality string
	Channel  string   // the image's channel name (its files' suffix)
	Labels   []string // names of the label values 0, 1, …
	// Axis is the slab axis (0: x, 1: y, 2: z) and Slices a slab's thickness. Whole
	// covers the scan from its first slice, the last slab taking what is left (the ITK
	// scan: 62 slices); otherwise the nine slabs are centred on the labels' extent.
	Axis, Slices int
	Whole        bool
	// load reads the scan and the task's label map (values 0 … len(Labels)−1) on its grid.
	load func(realdata string) (img, lab *volume.Volume, err error)
}

var tasks = []taskDef{
	{ID: "t1-tissue", Title: "T1 brain MR tissue classes (ITK k-means segmentation)", Set: tuning,
		Modality: "MR", Channel: "t1", Axis: 2, Slices: 7, Whole: true,
		// Values 0 (126 voxels) and 1 (the darkest cluster: air and background) are the
		// background; the five tissue clusters 2–6 are classes 1–5.
		Labels: []string{"background", "tissue 2", "tissue 3", "tissue 4", "tissue 5", "tissue 6"},
		load: mapped(t1Image, t1Tissues, func(v float64) uint8 {
			if v <= 1 {
				return 0
			}
			return uint8(v - 1)
		})},
	{ID: "t1-brain", Title: "T1 brain MR brain mask (ITK skull strip)", Set: tuning,
		Modality: "MR", Channel: "t1", Axis: 2, Slices: 7, Whole: true,
		Labels: []string{"background", "brain"},
		load: mapped(t1Image, t1Brain, func(v float64) uint8 {
			if v > 0 {
				return 1
			}
			return 0
		})},
	{ID: "ch2-lobes", Title: "human T1 MR at 1 mm, AAL regions merged into seven grey-matter lobes (axial slabs)", Set: tuning,
		Modality: "MR", Channel: "t1", Axis: 2, Slices: 14,
		Labels: []string{"background", "frontal", "insula and limbic", "occipital", "parietal", "deep grey", "temporal", "cerebellum"},
		load:   aalLobes},
	{ID: "inia19-quadrants", Title: "macaque T1 MR at 0.5 mm, NeuroMaps regions merged by hemisphere and front or back (axial slabs)", Set: reporting,
		Modality: "MR", Channel: "t1", Axis: 2, Slices: 14,
		Labels: []string{"background", "left anterior", "left posterior", "right anterior", "right posterior"},
		load:   func(realdata string) (*volume.Volume, *volume.Volume, error) { return neuroMaps(realdata, 1, 2) }},
	{ID: "inia19-bands", Title: "macaque T1 MR at 0.5 mm, NeuroMaps regions merged by hemisphere and height, in thirds (coronal slabs)", Set: reporting,
		Modality: "MR", Channel: "t1", Axis: 1, Slices: 22,
		Labels: []string{"background", "left inferior", "left middle", "left superior", "right inferior", "right middle", "right superior"},
		load:   func(realdata string) (*volume.Volume, *volume.Volume, error) { return neuroMaps(realdata, 2, 3) }},
	{ID: "ct-bone", Title: "head CT at its native 0.96 × 0.96 × 1.5 mm, bone (InVesalius' mask: HU ≥ 226)", Set: reporting, Scale: true,
		Modality: "CT", Channel: "ct", Axis: 2, Slices: 12,
		Labels: []string{"background", "bone"},
		load:   craniumBone},
}

// mapped loads image and the label map source, mapping each value of source with label.
func mapped(image, source string, label func(float64) uint8) func(string) (*volume.Volume, *volume.Volume, error) {
	return func(realdata string) (*volume.Volume, *volume.Volume, error) {
		img, err := imageio.Read(filepath.Join(realdata, image))
		if err != nil {
			return nil, nil, err
		}
		src, err := imageio.Read(filepath.Join(realdata, source))
		if err != nil {
			return nil, nil, err
		}
		lab, err := relabel(src, img, label)
		return img, lab, err
	}
}

// relabel maps src, on img's grid, into a uint8 label map.
func relabel(src, img *volume.Volume, label func(float64) uint8) (*volume.Volume, error) {
	if src.Dims != img.Dims {
		return nil, fmt.Errorf("the image is %v, its label map %v", img.Dims, src.Dims)
	}
	lab, err := volume.New(volume.Uint8, img.Dims)
	if err != nil {
		return nil, err
	}
	lab.Spacing, lab.Origin, lab.Direction = img.Spacing, img.Origin, img.Direction
	for i := range img.Len() {
		lab.SetIndex(i, float64(label(src.AtIndex(i))))
	}
	return lab, nil
}

// aalRegion is one line of aal.nii.txt, "VALUE NAME CODE": a region's value in
// aal.nii.gz, its name (Caudate_L …) and its code, whose first digit is its lobe.
type aalRegion struct {
	Value      int
	Name, Code string
}

// readAAL reads AAL's 116 regions from aal.nii.txt.
func readAAL(realdata string) ([]aalRegion, error) {
	f, err := os.Open(filepath.Join(realdata, aalNames))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []aalRegion
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 3 {
			continue
		}
		v, err := strconv.Atoi(fs[0])
		if err != nil {
			return nil, fmt.Errorf("%s: line %q is not VALUE NAME CODE", aalNames, sc.Text())
		}
		out = append(out, aalRegion{Value: v, Name: fs[1], Code: fs[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) != 116 {
		return nil, fmt.Errorf("%s names %d regions, want AAL's 116", aalNames, len(out))
	}
	return out, nil
}

// aalLobes is ch2 with its AAL regions merged by lobe, the first digit of each region's
// code in aal.nii.txt: 2 frontal, 3 insula and 4 limbic (one class), 5 occipital, 6
// parietal, 7 deep grey nuclei, 8 temporal, 9 cerebellum and vermis.
func aalLobes(realdata string) (*volume.Volume, *volume.Volume, error) {
	regions, err := readAAL(realdata)
	if err != nil {
		return nil, nil, err
	}
	lobe := map[byte]uint8{'2': 1, '3': 2, '4': 2, '5': 3, '6': 4, '7': 5, '8': 6, '9': 7}
	class := map[int]uint8{}
	for _, r := range regions {
		if lobe[r.Code[0]] == 0 {
			return nil, nil, fmt.Errorf("%s: region %d %s's code %s is not a lobe's", aalNames, r.Value, r.Name, r.Code)
		}
		class[r.Value] = lobe[r.Code[0]]
	}
	if len(class) != 116 {
		return nil, nil, fmt.Errorf("%s names %d distinct values, want AAL's 116", aalNames, len(class))
	}
	return mapped(ch2Image, aalLabels, func(v float64) uint8 { return class[int(v)] })(realdata)
}

// neuroMaps is INIA19 with its NeuroMaps regions merged by hemisphere (a region's value
// below 1000: left) and by where the region's centroid lies along axis in parts equal
// parts of the labelled voxels (quantiles of the centroids, weighted by size): regions
// that look alike, told apart only by where they are.
func neuroMaps(realdata string, axis, parts int) (*volume.Volume, *volume.Volume, error) {
	img, err := imageio.Read(filepath.Join(realdata, iniaImage))
	if err != nil {
		return nil, nil, err
	}
	src, err := imageio.Read(filepath.Join(realdata, iniaMaps))
	if err != nil {
		return nil, nil, err
	}
	if src.Dims != img.Dims {
		return nil, nil, fmt.Errorf("%s is %v, its label map %v", iniaImage, img.Dims, src.Dims)
	}
	type region struct{ n, sum float64 }
	regions := map[int]*region{}
	dims := img.Dims
	for i := range src.Len() {
		v := int(src.AtIndex(i))
		if v == 0 {
			continue
		}
		r := regions[v]
		if r == nil {
			r = &region{}
			regions[v] = r
		}
		r.n++
		r.sum += float64(coord(i, dims, axis))
	}
	type centroid struct {
		at, n float64
		value int
	}
	var cs []centroid
	total := 0.0
	for v, r := range regions {
		cs = append(cs, centroid{r.sum / r.n, r.n, v})
		total += r.n
	}
	slices.SortFunc(cs, func(a, b centroid) int {
		if a.at != b.at {
			if a.at < b.at {
				return -1
			}
			return 1
		}
		return a.value - b.value
	})
	part := map[int]int{}
	seen := 0.0
	for _, c := range cs {
		part[c.value] = min(int(seen/total*float64(parts)), parts-1)
		seen += c.n
	}
	lab, err := relabel(src, img, func(v float64) uint8 {
		if v == 0 {
			return 0
		}
		side := 0
		if v >= 1000 {
			side = 1
		}
		return uint8(1 + side*parts + part[int(v)])
	})
	return img, lab, err
}

// craniumBone is the Cranium CT with its bone mask.
func craniumBone(realdata string) (*volume.Volume, *volume.Volume, error) {
	p, err := inv3.Read(filepath.Join(realdata, cranium))
	if err != nil {
		return nil, nil, err
	}
	for _, m := range p.Masks {
		if strings.Contains(strings.ToLower(m.Name), "bone") || m.Threshold[0] == 226 {
			lab, err := relabel(m.Labels, p.CT, func(v float64) uint8 { return uint8(min(v, 1)) })
			return p.CT, lab, err
		}
	}
	return nil, nil, fmt.Errorf("%s: no bone mask among %d masks", cranium, len(p.Masks))
}

// coord is voxel i's coordinate along axis in a volume of dims.
func coord(i int, dims [4]int, axis int) int {
	switch axis {
	case 0:
		return i % dims[0]
	case 1:
		return i / dims[0] % dims[1]
	}
	return i / (dims[0] * dims[1]) % dims[2]
}

// slabRange is where task t's slabs start along its axis in a label map lab, and their
// thickness: from the first slice when t.Whole, else nine slabs centred on the labels'
// extent (within the scan).
func slabRange(t taskDef, lab *volume.Volume) (start int, err error) {
	size := lab.Dims[t.Axis]
	if t.Whole {
		if (nSlabs-1)*t.Slices >= size || nSlabs*t.Slices < size {
			return 0, fmt.Errorf("%d slices do not make %d slabs of %d", size, nSlabs, t.Slices)
		}
		return 0, nil
	}
	if nSlabs*t.Slices > size {
		return 0, fmt.Errorf("%d slabs of %d slices do not fit the scan's %d", nSlabs, t.Slices, size)
	}
	lo, hi := size, -1
	for i := range lab.Len() {
		if lab.AtIndex(i) != 0 {
			c := coord(i, lab.Dims, t.Axis)
			lo, hi = min(lo, c), max(hi, c)
		}
	}
	if hi < 0 {
		return 0, fmt.Errorf("the label map is empty")
	}
	start = (lo+hi+1)/2 - nSlabs*t.Slices/2
	return min(max(start, 0), size-nSlabs*t.Slices), nil
}

// cut is the part of v from slice z0 along axis, n slices thick, in the patient frame.
func cut(v *volume.Volume, t volume.DType, axis, z0, n int) (*volume.Volume, error) {
	dims := v.Dims
	dims[axis] = n
	out, err := volume.New(t, [4]int{dims[0], dims[1], dims[2], 1})
	if err != nil {
		return nil, err
	}
	var at [3]float64
	at[axis] = float64(z0)
	out.Spacing, out.Direction, out.Origin = v.Spacing, v.Direction, v.VoxelToWorld(at)
	X, Y := v.Dims[0], v.Dims[1]
	var off [3]int
	off[axis] = z0
	for z := range dims[2] {
		for y := range dims[1] {
			for x := range dims[0] {
				out.SetIndex(x+dims[0]*(y+dims[1]*z), v.AtIndex(x+off[0]+X*(y+off[1]+Y*(z+off[2]))))
			}
		}
	}
	return out, nil
}

// writeTask writes task t as a task.yaml folder under dir: train/ and test/ slabs,
// answers/ with the test labels; it returns the slabs of train and test in slice order.
func writeTask(realdata, dir string, t taskDef) (train, test []slab, err error) {
	img, lab, err := t.load(realdata)
	if err != nil {
		return nil, nil, err
	}
	start, err := slabRange(t, lab)
	if err != nil {
		return nil, nil, err
	}
	for _, sub := range []string{"train", "test", "answers"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, nil, err
		}
	}
	size := lab.Dims[t.Axis]
	for k := range nSlabs {
		z0 := start + k*t.Slices
		n := t.Slices
		if t.Whole && k == nSlabs-1 {
			n = size - z0
		}
		iv, err := cut(img, volume.Float32, t.Axis, z0, n)
		if err != nil {
			return nil, nil, err
		}
		lv, err := cut(lab, volume.Uint8, t.Axis, z0, n)
		if err != nil {
			return nil, nil, err
		}
		id := fmt.Sprintf("slab%d", k)
		s := slab{ID: id, Z0: z0, N: n}
		sub, labels := "train", "train"
		if testSlabs[k] {
			sub, labels = "test", "answers"
			test = append(test, s)
		} else {
			train = append(train, s)
		}
		if err := imageio.Write(filepath.Join(dir, sub, id+"_"+t.Channel+".nii.gz"), iv); err != nil {
			return nil, nil, err
		}
		if err := imageio.Write(filepath.Join(dir, labels, id+"_seg.nii.gz"), lv); err != nil {
			return nil, nil, err
		}
	}
	yaml := fmt.Sprintf(`# make bench-quality: %s, cut into %d slabs of %d slices along axis %d.
id: %s
title: %q
kind: segmentation
dims: 3
modality: %s
channels: [%s]
labels:
`, t.Title, nSlabs, t.Slices, t.Axis, t.ID, t.Title, t.Modality, t.Channel)
	for v, name := range t.Labels {
		yaml += fmt.Sprintf("  - {value: %d, name: %q}\n", v, name)
	}
	yaml += fmt.Sprintf(`data:
  train:
    images: ["train/{id}_%[1]s.nii.gz"]
    label: {path: "train/{id}_seg.nii.gz"}
  test:
    images: ["test/{id}_%[1]s.nii.gz"]
metric: {name: dice, direction: max}
submission:
  columns: [case_id, predicted_mask_path]
  id_column: case_id
  file_column: predicted_mask_path
  path: "predictions/{id}_seg.nii.gz"
`, t.Channel)
	return train, test, os.WriteFile(filepath.Join(dir, "task.yaml"), []byte(yaml), 0o644)
}

// slab is one case: its first slice along the task's axis and its number of slices.
type slab struct {
	ID    string
	Z0, N int
}
