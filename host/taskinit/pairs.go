package taskinit

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/rtstruct"
	"amid/viewer/dicom/seg"
	"amid/viewer/imageio"
	"amid/viewer/nifti"

	"github.com/goccy/go-yaml"
	"github.com/suyashkumar/dicom/pkg/tag"
)

// heldOut reports whether folder rel holds a split other than training: a segment named
// test, val or validation, or ending in Ts (nnU-Net's imagesTs).
func heldOut(rel string) bool {
	for _, s := range strings.Split(rel, "/") {
		if strings.HasSuffix(s, "Ts") && len(s) > 2 {
			return true
		}
		for _, w := range wordRE.FindAllString(strings.ToLower(s), -1) {
			switch w {
			case "test", "testing", "tst", "val", "valid", "validation":
				return true
			}
		}
	}
	return false
}

// beside reports whether folders a and b differ in exactly one segment.
func beside(a, b string) bool {
	sa, sb := strings.Split(a, "/"), strings.Split(b, "/")
	if len(sa) != len(sb) || a == b {
		return false
	}
	diff := 0
	for i := range sa {
		if sa[i] != sb[i] {
			diff++
		}
	}
	return diff == 1
}

// channelRE is nnU-Net's channel ending of an image's file name: case_0000.nii.gz.
var channelRE = regexp.MustCompile(`^(.+)_([0-9]{4})$`)

// caseIDs are the case ids of image stems and, where every stem ends in nnU-Net's
// _NNNN, its channel endings (nil when not).
func caseIDs(stems []string) (ids, channels []string) {
	byID := map[string][]string{}
	for _, s := range stems {
		m := channelRE.FindStringSubmatch(s)
		if m == nil {
			return stems, nil
		}
		byID[m[1]] = append(byID[m[1]], m[2])
	}
	var first []string
	for id, cs := range byID {
		sort.Strings(cs)
		if first == nil {
			first = cs
		}
		if !slices.Equal(cs, first) {
			return stems, nil
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, first
}

// allIn reports whether every id is a key of m.
func allIn(ids []string, m map[string]string) bool {
	for _, id := range ids {
		if _, ok := m[id]; !ok {
			return false
		}
	}
	return true
}

// pairLayouts finds images and labels that share a name in two folders beside each
// other: label images (segmentation or enhancement), annotation JSON, YOLO and VOC.
func pairLayouts(l *listing, o Options) ([]candidate, []string) {
	var out []candidate
	var why []string
	for _, img := range l.folders() {
		if heldOut(img.rel) {
			continue
		}
		ext, stems, ok := img.imageSet()
		if !ok {
			if w := img.unread(); w != "" && len(img.files) > 1 {
				why = append(why, w)
			}
			continue
		}
		ids, chans := caseIDs(stems)
		for _, lab := range l.folders() {
			if !beside(img.rel, lab.rel) {
				continue
			}
			if lext, _, ok := lab.imageSet(); ok && allIn(ids, lab.byExt(lext)) {
				imgSays, labSays := says(img.rel[strings.LastIndex(img.rel, "/")+1:], labelWords), says(lab.rel[strings.LastIndex(lab.rel, "/")+1:], labelWords)
				switch {
				case labSays && !imgSays:
					out = append(out, l.imagePair(img, lab, ext, lext, ids, chans, o))
				case imgSays && !labSays:
					// The other way round: found when lab is the image folder.
				case img.rel < lab.rel:
					out = append(out, candidate{layout: layoutPairs, what: "image pairs", err: fmt.Errorf(
						"%w: %s and %s hold images of the same names, and neither name says which are the labels (labels, masks, seg, high …); name the image folder's test folder and rename the label folder, or write the task by hand", ErrAmbiguous, img.display(), lab.display())})
				}
				continue
			}
			if len(chans) > 0 {
				continue
			}
			if m := lab.byExt(".json"); allIn(ids, m) {
				out = append(out, l.annotationPairs(img, lab, ext, ids, o))
			}
			if m := lab.byExt(".txt"); allIn(ids, m) {
				out = append(out, l.yoloPairs(img, lab, ext, ids, o))
			}
			if m := lab.byExt(".xml"); allIn(ids, m) {
				out = append(out, l.vocPairs(img, lab, ext, ids, o))
			}
		}
	}
	return out, why
}

// imagePair is the task of images in img and label images in lab.
func (l *listing) imagePair(img, lab *folder, ext, lext string, ids, chans []string, o Options) candidate {
	c := candidate{layout: layoutPairs, what: "image and label pairs in " + img.display() + " and " + lab.display()}
	var train []string
	if len(chans) == 0 {
		train = []string{join(img.rel, "{id}"+ext)}
	} else {
		for _, ch := range chans {
			train = append(train, join(img.rel, "{id}_"+ch+ext))
		}
	}
	labPath := join(lab.rel, "{id}"+lext)
	return l.imageTask(c, img.rel, train, labPath, ids, chans, nil, o)
}

// imageTask completes the candidate of label images: the kind from what the labels hold,
// the labels' values, the dimension and channels (named, when not nil), the test split.
func (l *listing) imageTask(c candidate, trainDir string, train []string, labPath string, ids, chans, named []string, o Options) candidate {
	d := &def{train: train, label: yamlMap("path", labPath)}
	first := task.Expand(l.root, train[0], ids[0])
	dims, nch, err := imageShape(first)
	if err != nil {
		c.err = fmt.Errorf("reading %s to tell the task's dimension: %w", first, err)
		return c
	}
	d.dims = dims
	values, isMap, read := labelValues(l.root, labPath, ids)
	c.kind = taskspec.Enhancement
	if isMap {
		c.kind = taskspec.Segmentation
	}
	if o.Kind == taskspec.Segmentation || o.Kind == taskspec.Enhancement {
		c.kind = o.Kind
	}
	d.kind = c.kind
	names, labelNames := datasetJSON(l, trainDir)
	switch {
	case len(chans) > 0:
		d.channels = chans
		d.channels = nil
		for i, ch := range chans {
			k, _ := strconv.Atoi(ch)
			d.channels = append(d.channels, channelName(names[strconv.Itoa(k)], i))
		}
	case nch > 1:
		for i := range nch {
			d.channels = append(d.channels, channelName(names[strconv.Itoa(i)], i))
		}
		train = train[:1]
	case named != nil:
		d.channels = named
	default:
		d.channels = []string{channelName(names["0"], 0)}
	}
	c.notes = append(c.notes, fmt.Sprintf("%d training cases: images %s, labels %s", len(ids), strings.Join(train, ", "), labPath))
	c.notes = append(c.notes, fmt.Sprintf("%dD, channels %s, from %s", dims, strings.Join(d.channels, ", "), rel(l.root, first)))
	ext := task.Suffix(labPath)
	if c.kind == taskspec.Segmentation {
		if len(values) < 2 {
			c.err = fmt.Errorf("%w: the %d label images read (%s) hold the value 0 alone: no label to learn; check the labels, or name --kind enhancement", ErrAmbiguous, read, labPath)
			return c
		}
		for _, v := range values {
			name := labelNames[v]
			switch {
			case name != "":
			case v == 0:
				name = "background"
			default:
				name = "label " + strconv.FormatInt(v, 10)
			}
			d.labels = append(d.labels, taskspec.Label{Value: int(v), Name: name})
		}
		src := "the values of " + strconv.Itoa(read) + " label images"
		if len(labelNames) > 0 {
			src += " named by dataset.json"
		}
		c.notes = append(c.notes, fmt.Sprintf("segmentation: the labels are maps of the values %s (%s)", joinInts(values), src))
		d.metric = "dice"
	} else {
		c.notes = append(c.notes, fmt.Sprintf("enhancement: the label images are not maps of a few integer values (%d read), so they are the targets", read))
		d.metric = "psnr"
	}
	d.submission = fileSubmission(ext)
	test, tdir, err := l.testPatterns(trainDir, d.train, o)
	if err != nil {
		c.err = err
		return c
	}
	if len(chans) == 0 && nch > 1 {
		test = test[:1]
	}
	d.test = test
	d.train = train
	c.notes = append(c.notes, "test images in "+tdir+"/")
	c.def = d
	return c
}

// channelName is a channel's name made of n, or of its index i where n is empty.
func channelName(n string, i int) string {
	s := strings.Trim(nonID.ReplaceAllString(strings.ToLower(strings.TrimSpace(n)), "_"), "_")
	switch {
	case s != "":
		return s
	case i == 0:
		return "image"
	}
	return "channel" + strconv.Itoa(i)
}

func rel(root, p string) string {
	r := strings.TrimPrefix(strings.TrimPrefix(p, root), string(os.PathSeparator))
	return strings.ReplaceAll(r, string(os.PathSeparator), "/")
}

func joinInts(v []int64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatInt(x, 10)
	}
	return strings.Join(s, ", ")
}

// yamlMap is a mapping of the keys and values kv, in order.
func yamlMap(kv ...string) yaml.MapSlice {
	var out yaml.MapSlice
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, yaml.MapItem{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

// imageShape is an image's dimension (3 when it has several slices) and channel count.
func imageShape(path string) (dims, channels int, err error) {
	var d [4]int
	if x := task.Suffix(path); x == ".nii" || x == ".nii.gz" {
		h, err := nifti.ReadHeader(path)
		if err != nil {
			return 0, 0, err
		}
		for i := range 4 {
			d[i] = max(int(h.Dim[i+1]), 1)
			if int(h.Dim[0]) < i+1 {
				d[i] = 1
			}
		}
	} else {
		v, err := imageio.Read(path)
		if err != nil {
			return 0, 0, err
		}
		d = v.Dims
		if task.Suffix(path) == ".png" || task.Suffix(path) == ".bmp" || strings.HasPrefix(task.Suffix(path), ".tif") {
			d[3] = 1 // a colour picture is one image, not three channels
		}
	}
	dims = 2
	if d[2] > 1 {
		dims = 3
	}
	return dims, d[3], nil
}

// maxLabelValues is the most distinct values a label map may hold: more than any task's
// labels (TopBrain has 41), fewer than the grey levels of an image.
const maxLabelValues = 64

// labelSample is how many label images are read to tell what they hold: enough to find
// a rare label in most datasets, few enough to read in seconds.
const labelSample = 8

// labelValues reads up to labelSample label images of pattern p and reports the values
// they hold, and whether each is a map of at most maxLabelValues integer values.
func labelValues(root, p string, ids []string) (values []int64, isMap bool, read int) {
	seen := map[int64]bool{}
	isMap = true
	step := max(len(ids)/labelSample, 1)
	for i := 0; i < len(ids) && read < labelSample; i += step {
		v, err := imageio.Read(task.Expand(root, p, ids[i]))
		if err != nil {
			return nil, false, read
		}
		read++
		cs, ok := v.Labels(maxLabelValues)
		if !ok {
			return nil, false, read
		}
		for _, c := range cs {
			seen[c.Value] = true
		}
		if len(seen) > maxLabelValues {
			return nil, false, read
		}
	}
	for v := range seen {
		values = append(values, v)
	}
	slices.Sort(values)
	return values, isMap, read
}

// datasetJSON reads the channel and label names of an nnU-Net or Decathlon dataset.json
// beside or above the training folder: channel index → name, label value → name.
func datasetJSON(l *listing, trainDir string) (map[string]string, map[int64]string) {
	chans, labels := map[string]string{}, map[int64]string{}
	dir := trainDir
	for {
		if f, ok := l.dirs[dir]; ok && slices.Contains(f.files, "dataset.json") {
			b, err := os.ReadFile(l.abs(join(dir, "dataset.json")))
			if err != nil || len(b) > 16<<20 {
				return chans, labels
			}
			var doc struct {
				Modality     map[string]string          `json:"modality"`
				ChannelNames map[string]string          `json:"channel_names"`
				Labels       map[string]json.RawMessage `json:"labels"`
			}
			if json.Unmarshal(b, &doc) != nil {
				return chans, labels
			}
			for k, v := range doc.Modality {
				chans[k] = v
			}
			for k, v := range doc.ChannelNames {
				chans[k] = v
			}
			for k, raw := range doc.Labels {
				var name string
				var val int64
				if n, err := strconv.ParseInt(k, 10, 64); err == nil && json.Unmarshal(raw, &name) == nil {
					labels[n] = name // Decathlon: "1": "liver"
				} else if json.Unmarshal(raw, &val) == nil {
					labels[val] = k // nnU-Net v2: "liver": 1
				}
			}
			return chans, labels
		}
		if dir == "" {
			return chans, labels
		}
		i := strings.LastIndex(dir, "/")
		if i < 0 {
			dir = ""
		} else {
			dir = dir[:i]
		}
	}
}

// suffixLayouts finds images and labels in one folder told apart by their endings:
// {id}_ct.nii.gz beside {id}_seg.nii.gz.
func suffixLayouts(l *listing, o Options) ([]candidate, []string) {
	var out []candidate
	for _, f := range l.folders() {
		if heldOut(f.rel) {
			continue
		}
		ext, stems, ok := f.imageSet()
		if !ok {
			continue
		}
		bySfx := map[string]map[string]string{}
		for _, s := range stems {
			i := strings.LastIndexAny(s, "_-")
			if i <= 0 || i == len(s)-1 {
				continue
			}
			sfx := s[i:]
			if bySfx[sfx] == nil {
				bySfx[sfx] = map[string]string{}
			}
			bySfx[sfx][s[:i]] = s
		}
		var labs []string
		for sfx, ids := range bySfx {
			if len(ids) >= 2 && says(sfx[1:], labelWords) {
				labs = append(labs, sfx)
			}
		}
		sort.Strings(labs)
		if len(labs) == 0 {
			continue
		}
		if len(labs) > 1 {
			out = append(out, candidate{layout: layoutSuffix, what: "suffix pairs in " + f.display(), err: fmt.Errorf(
				"%w: the files of %s end in %s, each of which could be the labels; write the task by hand or keep one kind of label file there", ErrAmbiguous, f.display(), strings.Join(labs, " and "))})
			continue
		}
		lab := labs[0]
		var ids []string
		for id := range bySfx[lab] {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var chans []string
		for sfx, m := range bySfx {
			if sfx != lab && allIn(ids, m) {
				chans = append(chans, sfx)
			}
		}
		sort.Strings(chans)
		if len(chans) == 0 {
			continue
		}
		c := candidate{layout: layoutSuffix, what: "image and label endings in " + f.display() + " (" + strings.Join(chans, ", ") + " and " + lab + ")"}
		var train []string
		var names []string
		for _, ch := range chans {
			train = append(train, join(f.rel, "{id}"+ch+ext))
			names = append(names, channelName(ch[1:], 0))
		}
		out = append(out, l.imageTask(c, f.rel, train, join(f.rel, "{id}"+lab+ext), ids, nil, names, o))
	}
	return out, nil
}

// isDICOMFolder reports whether folder rel holds DICOM files, in it or in a subfolder.
func (l *listing) isDICOMFolder(rel string, depth int) bool {
	f, ok := l.dirs[rel]
	if !ok || depth > 3 {
		return false
	}
	if len(f.files) > 0 {
		n := f.files[0]
		if strings.HasSuffix(strings.ToLower(n), ".dcm") || hasDICM(l.abs(join(rel, n))) {
			return true
		}
	}
	for _, s := range f.subdirs {
		if l.isDICOMFolder(join(rel, s), depth+1) {
			return true
		}
	}
	return false
}

// hasDICM reports whether the file at p has DICOM's preamble and magic.
func hasDICM(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 132)
	n, _ := f.Read(b)
	return n == 132 && string(b[128:]) == "DICM"
}

// dicomLayouts finds a folder of DICOM series folders, one a case, beside a folder of
// DICOM SEG or RTSTRUCT files named as the cases.
func dicomLayouts(l *listing, o Options) ([]candidate, []string) {
	var out []candidate
	for _, img := range l.folders() {
		if heldOut(img.rel) || len(img.subdirs) < 2 {
			continue
		}
		ids := img.subdirs
		if !l.isDICOMFolder(join(img.rel, ids[0]), 0) {
			continue
		}
		for _, lab := range l.folders() {
			if !beside(img.rel, lab.rel) {
				continue
			}
			m := lab.byExt(".dcm")
			if !allIn(ids, m) {
				continue
			}
			out = append(out, l.dicomTask(img, lab, ids, o))
		}
	}
	return out, nil
}

// dicomTask is the segmentation of DICOM series folders in img with DICOM labels in lab:
// its labels the SEG segments (with their codes) and RTSTRUCT ROIs, by name.
func (l *listing) dicomTask(img, lab *folder, ids []string, o Options) candidate {
	c := candidate{layout: layoutDICOM, kind: taskspec.Segmentation, what: "DICOM series in " + img.display() + " with SEG or RTSTRUCT labels in " + lab.display()}
	type found struct {
		label taskspec.Label
		from  string
	}
	var labels []found
	index := func(name string) int {
		return slices.IndexFunc(labels, func(f found) bool {
			return strings.EqualFold(f.label.Name, name) || strings.EqualFold(f.label.Code.Meaning, name)
		})
	}
	var rois []string
	nSeg, nRT := 0, 0
	for _, id := range ids {
		p := l.abs(join(lab.rel, id+".dcm"))
		f, err := dataset.ReadFile(p, dataset.Options{})
		if err != nil {
			c.err = fmt.Errorf("reading the DICOM label %s: %w", p, err)
			return c
		}
		switch {
		case seg.IsSegmentation(f):
			s, err := seg.FromDataSet(f)
			if err != nil {
				c.err = fmt.Errorf("reading the DICOM SEG %s: %w", p, err)
				return c
			}
			nSeg++
			for _, sg := range s.Segments {
				if index(sg.Label) < 0 {
					labels = append(labels, found{taskspec.Label{Name: sg.Label, Code: taskspec.Code{Scheme: sg.Type.Scheme, Value: sg.Type.Value, Meaning: sg.Type.Meaning}}, id + ".dcm"})
				}
			}
		case rtstruct.IsStructureSet(f):
			s, err := rtstruct.FromDataSet(f)
			if err != nil {
				c.err = fmt.Errorf("reading the RTSTRUCT %s: %w", p, err)
				return c
			}
			nRT++
			for _, r := range s.ROIs {
				if !slices.ContainsFunc(rois, func(x string) bool { return strings.EqualFold(x, r.Name) }) {
					rois = append(rois, r.Name)
				}
			}
		default:
			c.err = fmt.Errorf("the DICOM label %s is neither a SEG nor an RTSTRUCT (modality %q)", p, f.DataSet.String(tag.Modality))
			return c
		}
	}
	var unmatched []string
	for _, r := range rois {
		if index(r) >= 0 {
			continue
		}
		if nSeg > 0 {
			unmatched = append(unmatched, r)
			continue
		}
		labels = append(labels, found{taskspec.Label{Name: r}, "RTSTRUCT"})
	}
	if len(unmatched) > 0 {
		c.err = fmt.Errorf("%w: the RTSTRUCT ROIs %s match no SEG segment of %s by name; name each ROI's label in the task's data.train.label.names", ErrAmbiguous, strings.Join(unmatched, ", "), lab.display())
		return c
	}
	d := &def{kind: taskspec.Segmentation, dims: 3, channels: []string{"image"}, train: []string{join(img.rel, "{id}")},
		label: yamlMap("path", join(lab.rel, "{id}.dcm"), "format", task.LabelDICOM), metric: "dice", submission: fileSubmission("_seg.nii.gz")}
	d.labels = []taskspec.Label{{Value: 0, Name: "background"}}
	var names []string
	for i, f := range labels {
		f.label.Value = i + 1
		if f.label.Code.Scheme == "" || f.label.Code.Value == "" {
			f.label.Code = taskspec.Code{}
		}
		d.labels = append(d.labels, f.label)
		names = append(names, f.label.Name)
	}
	c.notes = append(c.notes, fmt.Sprintf("%d training cases: DICOM series folders %s/{id}, labels %s/{id}.dcm (%d SEG, %d RTSTRUCT)", len(ids), img.rel, lab.rel, nSeg, nRT))
	c.notes = append(c.notes, "segmentation of the labels "+strings.Join(names, ", ")+", the SEG segments' and RTSTRUCT ROIs' names in the order first found")
	c.withTest(l, d, img.rel, "test series", o)
	return c
}
