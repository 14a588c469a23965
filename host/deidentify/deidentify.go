// Package deidentify is what a de-identified run (amid run --deidentify) does to its data
// before anything else reads it, shared by the run, amid reproduce and the review:
//
//   - the run keeps a secret key in KeyFile (never exported); from the moment the data is
//     resolved, every case id and patient is replaced by its pseudonym
//     (amid/viewer/dicom/deid's Keys.Pseudonym) and every case file by a link named after
//     the pseudonym (Pseudonymize), so that nothing the run writes (labels, folds, the
//     store, the audit log, review decisions, predictions, the report) holds a name taken
//     from the data; the links are the only place that ties pseudonyms to the data, and
//     only the host follows them;
//   - plugins never get the links: they read copies under HandedDir that AMID rewrote from
//     the voxels and geometry alone (Handed), so that no DICOM header, file or folder name
//     of the data reaches them;
//   - every DICOM object the package holds goes through the Basic Application Level
//     Confidentiality Profile with the run's key (amid/viewer/dicom/deid).
package deidentify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"amid/assets/fileio"
	"amid/host/task"
	"amid/plugins/taskspec"
	"amid/viewer/dicom/deid"
	"amid/viewer/imageio"
)

// KeyFile is the run folder's file of its secret key.
const KeyFile = "deid.key"

// HandedDir is the run folder's folder of the copies its plugins read (Handed).
const HandedDir = "deid"

// ErrCannot marks data that cannot be de-identified.
var ErrCannot = errors.New("cannot de-identify")

// NewKey writes a new secret key into the run folder dir.
func NewKey(dir string) error {
	return os.WriteFile(filepath.Join(dir, KeyFile), deid.NewKey(), 0o600)
}

// LoadKeys reads the secret key of the run folder dir.
func LoadKeys(dir string) (*deid.Keys, error) {
	b, err := os.ReadFile(filepath.Join(dir, KeyFile))
	if err != nil {
		return nil, fmt.Errorf("the de-identified run's key: %w", err)
	}
	return deid.New(b)
}

// Pseudonymize replaces the case ids and patients of d by their pseudonyms and the case
// files by links under root named after the pseudonyms.
func Pseudonymize(t *task.Task, d *task.Dataset, k *deid.Keys, root string) error {
	if task.Table(t.Data.Train.Label.Format) {
		return fmt.Errorf("%w: the label format %s keeps every case in one table file, named by case id", ErrCannot, t.Data.Train.Label.Format)
	}
	seen := map[string]string{}
	for _, split := range [][]task.Case{d.Train, d.Test} {
		for i := range split {
			c := &split[i]
			p := k.Pseudonym(c.ID)
			if prev, dup := seen[p]; dup && prev != c.ID {
				return fmt.Errorf("%w: two case ids give the pseudonym %s", ErrCannot, p)
			}
			seen[p] = c.ID
			c.Patient = k.Pseudonym("patient " + c.Patient)
			dir := filepath.Join(root, p)
			for j, img := range c.Images {
				link, err := linkTo(img, dir, fmt.Sprintf("image%d", j))
				if err != nil {
					return err
				}
				c.Images[j] = link
			}
			if c.Label != "" {
				link, err := linkTo(c.Label, dir, "label")
				if err != nil {
					return err
				}
				c.Label = link
			}
			c.ID = p
		}
	}
	d.Root = root
	return nil
}

// linkTo makes (or keeps) dir/name<suffix>, a link to target; the suffix is the target's
// file ending (.nii.gz, .dcm, …; none for a folder).
func linkTo(target, dir, name string) (string, error) {
	if st, err := os.Stat(target); err == nil && !st.IsDir() {
		name += task.Suffix(filepath.Base(target))
	}
	link := filepath.Join(dir, name)
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return link, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	_ = os.Remove(link)
	if err := os.Symlink(target, link); err != nil {
		return "", fmt.Errorf("%w: %v", ErrCannot, err)
	}
	return link, nil
}

// KeyID identifies a run's key without revealing it (recorded in the audit log).
func KeyID(k []byte) string {
	h := sha256.Sum256(slices.Concat([]byte("amid deid key id "), k))
	return hex.EncodeToString(h[:8])
}

// Handed is what the plugins of a de-identified run read of its cases instead of the
// links under cases/: a dropped-in plugin is third-party code, and a link leads to the
// original file, DICOM headers and patient names included, under a path that may name the
// patient. Each case's images and labels are copies under the run's deid/<pseudonym>
// folder that AMID rewrote from their voxels and geometry alone (or, for a label in AMID's
// annotation format, from its boxes, points and classes alone), so that no header, tag,
// file or folder name of the data reaches a plugin. The host itself reads the links (it
// writes the DICOM SEG predictions against the original series).
type Handed struct {
	cases  map[string]task.Case // by pseudonym: Images are the copies
	labels map[string]string    // by pseudonym: the label a plugin trains on
}

// MakeHanded makes (or keeps) the copies of every case of d under root and returns them;
// labels are the run's canonical labels by case id, of which those the host wrote itself
// into hostLabels are handed as they are.
func MakeHanded(ctx context.Context, spec *taskspec.Spec, d *task.Dataset, labels map[string]string, root, hostLabels string) (*Handed, error) {
	h := &Handed{cases: map[string]task.Case{}, labels: map[string]string{}}
	for _, split := range [][]task.Case{d.Train, d.Test} {
		for _, c := range split {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			dir := filepath.Join(root, c.ID)
			hc := c
			hc.Images = make([]string, len(c.Images))
			for j, img := range c.Images {
				p, err := copyImage(img, dir, fmt.Sprintf("image%d", j))
				if err != nil {
					return nil, fmt.Errorf("%w: case %s, image %d: %w", ErrCannot, c.ID, j, err)
				}
				hc.Images[j] = p
			}
			hc.Label, hc.Series = "", nil
			h.cases[c.ID] = hc
			l, ok := labels[c.ID]
			if !ok {
				continue
			}
			if fileio.Within(hostLabels, l) {
				h.labels[c.ID] = l
				continue
			}
			p, err := copyLabel(l, spec, dir)
			if err != nil {
				return nil, fmt.Errorf("%w: case %s, its label: %w", ErrCannot, c.ID, err)
			}
			h.labels[c.ID] = p
		}
	}
	return h, nil
}

// copyImage writes the voxels and geometry of the image at src into dir/name<suffix>: a
// PNG or TIFF stays one, a MetaImage becomes .mha, an NRRD .nrrd, anything else (DICOM
// above all) .nii.gz. A copy already there is kept (it was made from the same file: the
// data may not change under a run).
func copyImage(src, dir, name string) (string, error) {
	f, err := imageio.FormatOf(src)
	if err != nil {
		return "", err
	}
	suffix := ".nii.gz"
	switch f {
	case imageio.PNG:
		suffix = ".png"
	case imageio.TIFF:
		suffix = ".tif"
	case imageio.MetaImage:
		suffix = ".mha"
	case imageio.NRRD:
		suffix = ".nrrd"
	}
	out := filepath.Join(dir, name+suffix)
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	v, err := imageio.Read(src)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := imageio.Write(out, v); err != nil {
		return "", err
	}
	return out, nil
}

// copyLabel writes a label a plugin trains on into dir: an image as copyImage does, a
// label in AMID's annotation format (.json) re-encoded from what it annotates.
func copyLabel(src string, spec *taskspec.Spec, dir string) (string, error) {
	if !strings.EqualFold(filepath.Ext(src), ".json") {
		return copyImage(src, dir, "label")
	}
	a, err := taskspec.ReadAnnotation(src, spec)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "label.json")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return out, a.WriteFile(out)
}

// Cases returns cs as the plugins see them; a case without copies is an error, never
// handed over as it is.
func (h *Handed) Cases(cs []task.Case) ([]task.Case, error) {
	if h == nil {
		return cs, nil
	}
	out := make([]task.Case, len(cs))
	for i, c := range cs {
		hc, ok := h.cases[c.ID]
		if !ok {
			return nil, fmt.Errorf("%w: case %s has no de-identified copy to hand to a plugin", ErrCannot, c.ID)
		}
		out[i] = hc
	}
	return out, nil
}

// Labels is the labels the plugins train on, by case id: labels itself when the run is
// not de-identified.
func (h *Handed) Labels(labels map[string]string) map[string]string {
	if h == nil {
		return labels
	}
	return h.labels
}
