package run

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
	"amid/viewer/dicom/dataset"
	"amid/viewer/dicom/deid"
	"amid/viewer/imageio"
)

// De-identification (Options.Deidentify) is chosen before a run starts and holds for its
// whole life. The run keeps a secret key in deid.key (never exported). From the moment
// the data is resolved, every case id and patient is replaced by its pseudonym
// (deid.Keys.Pseudonym) and every case file by a link named after the pseudonym under
// cases/, so that nothing the run writes (labels, folds, the store, the audit log, review
// decisions, predictions, the report) holds a name taken from the data; the links are the
// only place that ties pseudonyms to the data, and only the host follows them. Plugins
// never get the links: they read copies under deid/ that AMID rewrote from the voxels
// and geometry alone (handed), so that no DICOM header, file or folder name of the data
// reaches them. Every DICOM object the package holds goes through the Basic Application
// Level Confidentiality Profile with the run's key.
const keyFile = "deid.key"

// handedDir is the run folder's folder of the copies its plugins read when it is
// de-identified (handed).
const handedDir = "deid"

// ErrDeidentify marks data that cannot be de-identified.
var ErrDeidentify = errors.New("cannot de-identify")

// newKey writes a new secret key into the run folder.
func newKey(dir string) error {
	return os.WriteFile(filepath.Join(dir, keyFile), deid.NewKey(), 0o600)
}

// loadKeys reads the secret key of the run folder dir.
func loadKeys(dir string) (*deid.Keys, error) {
	b, err := os.ReadFile(filepath.Join(dir, keyFile))
	if err != nil {
		return nil, fmt.Errorf("the de-identified run's key: %w", err)
	}
	return deid.New(b)
}

// resolve finds the run's cases: the task resolved in the data folder, with pseudonyms
// and links (under dir/cases) in place of case ids and files when the run is
// de-identified.
func resolve(t *task.Task, st *State, dir string) (*task.Dataset, error) {
	d, err := t.Resolve(st.Data)
	if err != nil {
		return nil, err
	}
	if !st.Deidentify {
		return d, nil
	}
	k, err := loadKeys(dir)
	if err != nil {
		return nil, err
	}
	if err := pseudonymize(t, d, k, filepath.Join(dir, "cases")); err != nil {
		return nil, err
	}
	return d, nil
}

// pseudonymize replaces the case ids and patients of d by their pseudonyms and the case
// files by links under root named after the pseudonyms.
func pseudonymize(t *task.Task, d *task.Dataset, k *deid.Keys, root string) error {
	if task.Table(t.Data.Train.Label.Format) {
		return fmt.Errorf("%w: the label format %s keeps every case in one table file, named by case id", ErrDeidentify, t.Data.Train.Label.Format)
	}
	seen := map[string]string{}
	for _, split := range [][]task.Case{d.Train, d.Test} {
		for i := range split {
			c := &split[i]
			p := k.Pseudonym(c.ID)
			if prev, dup := seen[p]; dup && prev != c.ID {
				return fmt.Errorf("%w: two case ids give the pseudonym %s", ErrDeidentify, p)
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
		return "", fmt.Errorf("%w: %v", ErrDeidentify, err)
	}
	return link, nil
}

// deidentifyObject puts a DICOM object of case id through the Basic Profile with the
// run's key.
func (r *Runner) deidentifyObject(f *dataset.File, id string) error {
	k, err := loadKeys(r.dir)
	if err != nil {
		return err
	}
	return k.Apply(f, deid.Options{Pseudonym: id})
}

// Cases returns the cases of the run in dir as the run sees them: pseudonyms and links
// when it is de-identified.
func Cases(dir string) (*task.Dataset, error) {
	st, err := LoadState(dir)
	if err != nil {
		return nil, err
	}
	t, err := task.Load(st.Task)
	if err != nil {
		return nil, err
	}
	d, err := resolve(t, st, dir)
	if err != nil {
		return nil, err
	}
	// A series chosen in a study folder is read from its own folder of links, as the run
	// read it (predict.Align).
	return d, d.LinkSeries(filepath.Join(dir, "channels", "series"))
}

// keyID identifies a run's key without revealing it (recorded in the audit log).
func keyID(k []byte) string {
	h := sha256.Sum256(slices.Concat([]byte("amid deid key id "), k))
	return hex.EncodeToString(h[:8])
}

// handed is what the plugins of a de-identified run read of its cases instead of the
// links under cases/: a dropped-in plugin is third-party code, and a link leads to the
// original file, DICOM headers and patient names included, under a path that may name the
// patient. Each case's images and labels are copies under the run's deid/<pseudonym>
// folder that AMID rewrote from their voxels and geometry alone (or, for a label in AMID's
// annotation format, from its boxes, points and classes alone), so that no header, tag,
// file or folder name of the data reaches a plugin. The host itself reads the links (it
// writes the DICOM SEG predictions against the original series).
type handed struct {
	cases  map[string]task.Case // by pseudonym: Images are the copies
	labels map[string]string    // by pseudonym: the label a plugin trains on
}

// makeHanded makes (or keeps) the copies of every case of d under root and returns them;
// labels are the run's canonical labels by case id, of which those the host wrote itself
// into hostLabels are handed as they are.
func makeHanded(ctx context.Context, spec *taskspec.Spec, d *task.Dataset, labels map[string]string, root, hostLabels string) (*handed, error) {
	h := &handed{cases: map[string]task.Case{}, labels: map[string]string{}}
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
					return nil, fmt.Errorf("%w: case %s, image %d: %w", ErrDeidentify, c.ID, j, err)
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
				return nil, fmt.Errorf("%w: case %s, its label: %w", ErrDeidentify, c.ID, err)
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
	b, err := a.Marshal()
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "label.json")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return out, fileio.Write(out, b)
}

// casesOf returns cs as the plugins see them; a case without copies is an error, never
// handed over as it is.
func (h *handed) casesOf(cs []task.Case) ([]task.Case, error) {
	if h == nil {
		return cs, nil
	}
	out := make([]task.Case, len(cs))
	for i, c := range cs {
		hc, ok := h.cases[c.ID]
		if !ok {
			return nil, fmt.Errorf("%w: case %s has no de-identified copy to hand to a plugin", ErrDeidentify, c.ID)
		}
		out[i] = hc
	}
	return out, nil
}

// labelsOf is the labels the plugins train on, by case id: labels itself when the run is
// not de-identified.
func (h *handed) labelsOf(labels map[string]string) map[string]string {
	if h == nil {
		return labels
	}
	return h.labels
}

// handOver makes the copies the plugins of a de-identified run read (handed), once the
// data is resolved and aligned and its labels converted; a run that is not de-identified
// hands its plugins the cases themselves.
func (r *Runner) handOver(ctx context.Context) error {
	if !r.st.Deidentify {
		return nil
	}
	h, err := makeHanded(ctx, r.task.Spec(), r.data, r.labels, r.path(handedDir), r.path("labels"))
	if err != nil {
		return err
	}
	r.handed = h
	return nil
}
