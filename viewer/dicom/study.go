package dicom

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"amid/viewer/volume"
)

// Study is what a folder of DICOM files holds, as PACS exports it: its image series, and
// what is left out (localizers, reports, presentation states, files that are not DICOM),
// each with the reason.
type Study struct {
	Dir string `json:"dir"`
	// DICOMDIR is set when the files read are those the folder's DICOMDIR lists.
	DICOMDIR bool          `json:"dicomdir,omitempty"`
	Series   []*SeriesInfo `json:"series"`
	Skipped  []Skipped     `json:"skipped,omitempty"`
}

// SeriesInfo describes one image series of a study from its files' headers. Spacing,
// Slices and Warnings describe the grid the series is read onto (after any resampling).
type SeriesInfo struct {
	// UID is the Series Instance UID: identifying (see Meta), for the user's eyes only.
	UID         string `json:"uid"`
	Number      int    `json:"number,omitempty"`
	Description string `json:"description"`
	Modality    string `json:"modality"`
	// Orientation is axial, coronal or sagittal: the patient axis nearest the slice
	// normal; empty when the files give no orientation.
	Orientation string     `json:"orientation,omitempty"`
	Slices      int        `json:"slices"`
	Files       int        `json:"files"`
	Rows        int        `json:"rows"`
	Columns     int        `json:"columns"`
	Spacing     [3]float64 `json:"spacing"` // x, y, z mm
	// TransferSyntax is the first file's transfer syntax (its name and UID).
	TransferSyntax    string `json:"transfer_syntax"`
	TransferSyntaxUID string `json:"transfer_syntax_uid"`
	// Warnings say how the series will be resampled (gantry tilt, uneven spacing).
	Warnings []string `json:"warnings,omitempty"`
	// Problem says why the series cannot be read as a volume (a missing slice, slices
	// of different sizes, …): Read's error. Empty when it can be read.
	Problem string `json:"problem,omitempty"`

	dir   string
	files []*file // headers only, in slice order
	err   error
}

// Skipped is an object of a study that is not an image series to read, and why.
type Skipped struct {
	UID         string `json:"uid,omitempty"` // the Series Instance UID, when DICOM
	Description string `json:"description,omitempty"`
	Modality    string `json:"modality,omitempty"`
	Files       int    `json:"files"`
	// Path is the file, relative to the study folder, of a file that is not DICOM.
	Path   string `json:"path,omitempty"`
	Reason string `json:"reason"`
}

// Note is one sentence about the skipped object without identifiers (UIDs), for a
// profile or a log.
func (s Skipped) Note() string {
	if s.Path != "" {
		return fmt.Sprintf("%s skipped: %s", s.Path, s.Reason)
	}
	return fmt.Sprintf("%s skipped: %s", describe(s.Description, s.Modality, s.Files), s.Reason)
}

// describe names a series for notes: its description, modality and file count.
func describe(desc, modality string, files int) string {
	if desc == "" {
		desc = "(no description)"
	}
	noun := "files"
	if files == 1 {
		noun = "file"
	}
	return fmt.Sprintf("series %q (%s, %d %s)", desc, modality, files, noun)
}

// Paths returns the series' files in slice order.
func (s *SeriesInfo) Paths() []string {
	out := make([]string, len(s.files))
	for i, f := range s.files {
		out[i] = f.path
	}
	return out
}

// String names the series for errors: UID, description, slice count, spacing.
func (s *SeriesInfo) String() string {
	o := s.Orientation
	if o == "" {
		o = "orientation unknown"
	}
	return fmt.Sprintf("%s %q (%s, %s, %d slices, %s mm)", s.UID, s.Description, s.Modality, o, s.Slices, spacingText(s.Spacing))
}

func spacingText(sp [3]float64) string {
	return fmt.Sprintf("%.4g × %.4g × %.4g", sp[0], sp[1], sp[2])
}

// Scan reads the headers of every file in dir, or of the files its DICOMDIR lists when it
// has one, and sorts them into image series and skipped objects. Subfolders are searched
// (hidden files and folders, and DICOMDIR files below the top, are passed over). Files
// that are not DICOM are skipped; a damaged DICOM file is an error naming it. No pixel
// data is read.
func Scan(dir string) (*Study, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	}
	if st, err := os.Stat(real); err != nil {
		return nil, fmt.Errorf("dicom: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("dicom: %s: %w: not a folder", dir, volume.ErrFormat)
	}
	study := &Study{Dir: dir}
	var paths []string
	if dd := findDICOMDIR(real); dd != "" {
		if paths, err = readDICOMDIR(dd); err != nil {
			return nil, err
		}
		study.DICOMDIR = true
	} else if paths, err = walk(real); err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("dicom: %s: %w: the folder holds no files", dir, volume.ErrFormat)
	}
	files := make([]*file, len(paths))
	errs := make([]error, len(paths))
	parallel(len(paths), func(i int) { files[i], errs[i] = readHead(paths[i]) })
	var bad []error
	byUID := map[string][]*file{}
	var uids []string
	for i, err := range errs {
		switch {
		case errors.Is(err, errNotDICOM):
			rel, _ := filepath.Rel(real, paths[i])
			study.Skipped = append(study.Skipped, Skipped{Path: filepath.ToSlash(rel), Files: 1, Reason: "not a DICOM file"})
		case err != nil:
			bad = append(bad, err)
		default:
			u := files[i].h.seriesUID
			if byUID[u] == nil {
				uids = append(uids, u)
			}
			byUID[u] = append(byUID[u], files[i])
		}
	}
	if len(bad) > maxErrors {
		bad = append(bad[:maxErrors], fmt.Errorf("dicom: %s: %d more files could not be read", dir, len(bad)-maxErrors))
	}
	if err := errors.Join(bad...); err != nil {
		return nil, err
	}
	sort.Strings(uids)
	for _, u := range uids {
		fs := byUID[u]
		sort.Slice(fs, func(i, j int) bool { return fs[i].path < fs[j].path })
		h := fs[0].h
		skip := Skipped{UID: u, Description: h.description, Modality: h.modality, Files: len(fs)}
		if reason := notImage(fs); reason != "" {
			skip.Reason = reason
			study.Skipped = append(study.Skipped, skip)
			continue
		}
		if n := orientations(fs); n > 1 {
			skip.Reason = fmt.Sprintf("its slices lie in %d orientations (a localizer, or several stacks in one series)", n)
			study.Skipped = append(study.Skipped, skip)
			continue
		}
		study.Series = append(study.Series, newSeriesInfo(dir, fs))
	}
	sort.SliceStable(study.Series, func(i, j int) bool { return study.Series[i].Number < study.Series[j].Number })
	return study, nil
}

// findDICOMDIR returns the path of dir's DICOMDIR file (any case), or "".
func findDICOMDIR(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range ents {
		if strings.EqualFold(e.Name(), "DICOMDIR") && !e.IsDir() {
			return filepath.Join(dir, e.Name())
		}
	}
	return ""
}

// walk lists the files under dir, passing over hidden files and folders and DICOMDIR files.
func walk(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("dicom: %w", err)
		}
		n := d.Name()
		if p != dir && strings.HasPrefix(n, ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || strings.EqualFold(n, "DICOMDIR") {
			return nil
		}
		out = append(out, p)
		return nil
	})
	return out, err
}

// SOP classes (PS3.4 Annex B) and modalities of objects that are not image series.
const (
	sopSecondaryCapture = "1.2.840.10008.5.1.4.1.1.7"
	sopSegmentation     = "1.2.840.10008.5.1.4.1.1.66.4"
	sopKeyObject        = "1.2.840.10008.5.1.4.1.1.88.59"
	sopDoseSR           = "1.2.840.10008.5.1.4.1.1.88.67"
	sopPatientDoseSR    = "1.2.840.10008.5.1.4.1.1.88.68"
	sopRTDose           = "1.2.840.10008.5.1.4.1.1.481.2"
	sopRTStructureSet   = "1.2.840.10008.5.1.4.1.1.481.3"
)

// notImage says why a series' files are not an image series to read ("" when they are):
// reports, presentation states, key object selections, segmentations, RT objects, dose
// reports (structured or screen captures), objects without pixel data, localizers.
func notImage(fs []*file) string {
	h := fs[0].h
	sop, mod := h.sopClass, strings.ToUpper(h.modality)
	switch {
	case sop == sopDoseSR || sop == sopPatientDoseSR:
		return "a radiation dose report (structured report)"
	case sop == sopKeyObject || mod == "KO":
		return "a key object selection (KO)"
	case strings.HasPrefix(sop, "1.2.840.10008.5.1.4.1.1.88.") || mod == "SR":
		return "a structured report (SR)"
	case strings.HasPrefix(sop, "1.2.840.10008.5.1.4.1.1.11.") || mod == "PR":
		return "a presentation state (PR)"
	case sop == sopSegmentation || mod == "SEG":
		return "a segmentation (SEG), a label source rather than an image"
	case sop == sopRTStructureSet || mod == "RTSTRUCT":
		return "an RT structure set (RTSTRUCT), a label source rather than an image"
	case sop == sopRTDose || mod == "RTDOSE":
		return "an RT dose grid (RTDOSE)"
	case mod == "RTPLAN" || mod == "RTRECORD" || mod == "REG" || mod == "DOC" || mod == "ECG" || mod == "AU":
		return fmt.Sprintf("not an image (modality %s)", h.modality)
	case strings.HasPrefix(sop, sopSecondaryCapture) && (containsFold(h.description, "dose") || hasValue(h.imageType, "DOSE") ||
		containsFold(h.description, "patient protocol")):
		return "a dose report (a screen capture)"
	}
	for _, f := range fs {
		if !f.hasPixels {
			return "not an image (no pixel data)"
		}
	}
	for _, f := range fs {
		if hasValue(f.h.imageType, "LOCALIZER") {
			return "a localizer (Image Type " + strings.Join(f.h.imageType, `\`) + ")"
		}
	}
	return ""
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func hasValue(vs []string, want string) bool {
	for _, v := range vs {
		if strings.EqualFold(v, want) {
			return true
		}
	}
	return false
}

// orientations counts the distinct slice orientations among the frames of fs.
func orientations(fs []*file) int {
	var seen [][6]float64
	add := func(g geometry) {
		if !g.hasIOP {
			return
		}
		for _, o := range seen {
			same := true
			for k := range o {
				same = same && math.Abs(o[k]-g.iop[k]) <= orientTol
			}
			if same {
				return
			}
		}
		seen = append(seen, g.iop)
	}
	for _, f := range fs {
		add(f.h.geometry)
		for _, fi := range f.h.perFrame {
			add(fi.geometry)
		}
	}
	return len(seen)
}

// newSeriesInfo describes the series of files fs, ordering them by slice position.
func newSeriesInfo(dir string, fs []*file) *SeriesInfo {
	h := fs[0].h
	s := &SeriesInfo{UID: h.seriesUID, Number: h.seriesNumber, Description: h.description, Modality: h.modality,
		Files: len(fs), Rows: h.rows, Columns: h.cols, TransferSyntaxUID: fs[0].ts, TransferSyntax: SyntaxName(fs[0].ts),
		dir: dir, files: fs}
	for _, f := range fs {
		s.Slices += f.h.frames
	}
	st, err := newStack(fs)
	if err != nil {
		s.err = fmt.Errorf("dicom: %s: series %s: %w", dir, s.UID, err)
		s.Problem = err.Error()
		return s
	}
	g := st.grid
	s.Slices, s.Spacing, s.Warnings = g.Dims[2], g.Spacing, st.warnings
	s.Rows, s.Columns = g.Dims[1], g.Dims[0]
	if h.hasIOP {
		s.Orientation = orientationName([3]float64{g.Direction[2], g.Direction[5], g.Direction[8]})
	}
	// Files in slice order.
	seen := map[*file]bool{}
	s.files = s.files[:0:0]
	for _, x := range st.sl {
		if !seen[x.f] {
			seen[x.f] = true
			s.files = append(s.files, x.f)
		}
	}
	return s
}

// orientationName is the patient axis nearest the slice normal n (LPS): sagittal (x),
// coronal (y) or axial (z).
func orientationName(n [3]float64) string {
	ax, ay, az := math.Abs(n[0]), math.Abs(n[1]), math.Abs(n[2])
	switch {
	case az >= ax && az >= ay:
		return "axial"
	case ay >= ax:
		return "coronal"
	}
	return "sagittal"
}

// Read reads the series' pixel data into a volume, resampled onto a regular grid when
// Warnings say so. Each call reads the files anew.
func (s *SeriesInfo) Read() (*volume.Volume, *Meta, error) {
	if s.err != nil {
		return nil, nil, s.err
	}
	if fastable(s.files) {
		v, m, err := readFast(s.files)
		switch {
		case err == nil:
			return v, m, nil
		case !errors.Is(err, errNoFit):
			return nil, nil, fmt.Errorf("dicom: %s: series %s: %w", s.dir, s.UID, err)
		}
	}
	files := make([]*file, len(s.files))
	errs := make([]error, len(s.files))
	parallel(len(files), func(i int) { files[i], errs[i] = readFile(s.files[i].path) })
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	v, m, err := assemble(files)
	if err != nil {
		return nil, nil, fmt.Errorf("dicom: %s: series %s: %w", s.dir, s.UID, err)
	}
	return v, m, nil
}
