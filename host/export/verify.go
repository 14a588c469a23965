package export

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"amid/assets/fileio"
	"amid/host/audit"
	"amid/plugins/compute"
	"amid/plugins/compute/predictions"
)

// ErrFailed is wrapped by Verify's error when the package fails any check.
var ErrFailed = errors.New("package verification failed")

// maxManifest bounds manifest.json.
const maxManifest = 16 << 20

// VerifyOptions tune Verify.
type VerifyOptions struct {
	// Reproduce re-runs prediction for the package in packageDir into outDir, an empty
	// folder, writing outDir/predictions laid out as the package's predictions/ folder
	// (anything else it writes under outDir is ignored), and returns what computed the
	// re-run. Nil: reproducibility is not checked (and Verification.ReproduceNote says so).
	Reproduce func(ctx context.Context, packageDir, outDir string) (compute.Identity, error)
}

// Verification is what Verify found.
type Verification struct {
	Path          string
	Manifest      *Manifest // nil when manifest.json is missing or unreadable
	Files         int       // files checked against the manifest
	AuditEntries  int
	AuditLastHash string
	// Reproduced is true when a re-run reproduced the predictions (Compared files): byte
	// for byte (Exact), or, when the re-run's compute identity differs from the package's,
	// within compute.Table's tolerances. ReproduceNote says how in one sentence, or why
	// reproducibility was not checked.
	Reproduced bool
	Exact      bool
	Compared   int
	// SEGs counts the DICOM SEG objects under dicom/ that read back to their predictions,
	// SRs the structured reports that read as such and name the task's kind of finding,
	// Derived the derived series that read back to their predicted images.
	SEGs, SRs, Derived int
	ReproduceNote      string
	// Compute is what computed the package's predictions (its manifest's record), Rerun
	// what computed the re-run's.
	Compute, Rerun compute.Identity
	// Agreement is how closely the re-run agreed where its bytes differed, when the
	// identities differ (nil otherwise).
	Agreement *compute.Agreement
	// Differ lists the predictions/ files the re-run did not reproduce byte for byte
	// (different, missing or extra).
	Differ []string
	// Problems holds every failure, one sentence each naming the file.
	Problems []string
}

// OK says whether the package passed every check.
func (v *Verification) OK() bool { return len(v.Problems) == 0 }

func (v *Verification) fail(format string, args ...any) {
	v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
}

func (v *Verification) err() error {
	switch len(v.Problems) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%w: %s", ErrFailed, v.Problems[0])
	default:
		return fmt.Errorf("%w: %s (and %d more problems)", ErrFailed, v.Problems[0], len(v.Problems)-1)
	}
}

// Verify checks the package folder or zip at p:
//
//   - manifest.json is readable, of a known format, and lists every other file of the
//     package with its size and sha256; no listed file is missing, none is extra, each
//     has the size and sha256 recorded (the plugin binary also its manifest sha256);
//   - audit.jsonl is an intact chain whose entry count and last hash are the manifest's,
//     and whose last entry is the export entry that records every file but manifest.json
//     and audit.jsonl with its sha256;
//   - when the manifest names a lane, every weight file's sha256 is among the Outputs of
//     a lane.trained entry for that lane;
//   - every DICOM SEG under dicom/ reads back (amid/viewer/dicom/seg, its segments
//     matched to task.yaml's labels by name) to the label map of its prediction, the
//     predictions/ file with the same name;
//   - measurements.json, when the package has the reader's measurements, reads as
//     measurements records and measurements.csv is their table, value for value;
//   - when opt.Reproduce is set and every check above passed, a re-run into a clean
//     temporary folder gives byte-identical files under predictions/.
//
// The returned Verification lists every problem; the error, wrapping ErrFailed, is the
// first one in a sentence (nil when there is none).
func Verify(ctx context.Context, p string, opt VerifyOptions) (*Verification, error) {
	v := &Verification{Path: p}
	st, err := os.Stat(p)
	if err != nil {
		v.fail("%v", err)
		return v, v.err()
	}
	var fsys fs.FS
	pkgDir := p
	if st.IsDir() {
		fsys = os.DirFS(p)
	} else {
		zr, err := zip.OpenReader(p)
		if err != nil {
			v.fail("%s is neither a package folder nor a readable zip: %v", p, err)
			return v, v.err()
		}
		defer zr.Close()
		fsys, err = zipRoot(&zr.Reader)
		if err != nil {
			v.fail("%s: %v", p, err)
			return v, v.err()
		}
		pkgDir = ""
	}
	v.check(fsys)
	switch {
	case opt.Reproduce == nil:
		v.ReproduceNote = "reproducibility not checked: no reproduce hook was given"
	case !v.OK():
		v.ReproduceNote = "reproducibility not checked: the package failed the checks above"
	default:
		v.reproduce(ctx, fsys, pkgDir, opt.Reproduce)
	}
	return v, v.err()
}

// zipRoot returns the package inside a zip: the archive itself when manifest.json is at
// its root, else its single top folder.
func zipRoot(zr *zip.Reader) (fs.FS, error) {
	seen := map[string]bool{}
	tops := map[string]bool{}
	for _, f := range zr.File {
		name := strings.TrimSuffix(f.Name, "/")
		if !cleanRel(name) {
			return nil, fmt.Errorf("zip entry %q has an unsafe or unclean name", f.Name)
		}
		if seen[name] {
			return nil, fmt.Errorf("zip entry %q appears twice", f.Name)
		}
		seen[name] = true
		top, _, _ := strings.Cut(name, "/")
		tops[top] = true
	}
	if seen[FileManifest] || len(tops) != 1 {
		return zr, nil
	}
	for top := range tops {
		return fs.Sub(zr, top)
	}
	return zr, nil
}

// ParseManifest decodes and checks manifest.json; errors name the field.
func ParseManifest(b []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest.json is not valid JSON: %w", err)
	}
	switch {
	case m.Format == 0:
		return nil, errors.New("manifest.json has no format version")
	case m.Format > Format:
		return nil, fmt.Errorf("manifest.json has format %d, written by a newer AMID (this program reads formats up to %d)", m.Format, Format)
	case m.Format < 0:
		return nil, fmt.Errorf("manifest.json has format %d", m.Format)
	case m.TaskID == "":
		return nil, errors.New("manifest.json has no task_id")
	case m.AMIDVersion == "":
		return nil, errors.New("manifest.json has no amid_version")
	case m.Plugin.Name == "":
		return nil, errors.New("manifest.json has no plugin.name")
	case !cleanRel(m.Plugin.Binary) || path.Dir(m.Plugin.Binary) != DirPlugin:
		return nil, fmt.Errorf("manifest.json: plugin.binary %q is not a file under plugin/", m.Plugin.Binary)
	case !audit.IsHash(m.Plugin.SHA256):
		return nil, fmt.Errorf("manifest.json: plugin.sha256 %q is not a lower-case hex sha256", m.Plugin.SHA256)
	case m.Audit.File != FileAudit:
		return nil, fmt.Errorf("manifest.json: audit.file is %q, want %q", m.Audit.File, FileAudit)
	case m.Audit.Entries < 1:
		return nil, fmt.Errorf("manifest.json: audit.entries is %d, want at least 1", m.Audit.Entries)
	case !audit.IsHash(m.Audit.LastHash):
		return nil, fmt.Errorf("manifest.json: audit.last_hash %q is not a lower-case hex sha256", m.Audit.LastHash)
	}
	seen := map[string]bool{}
	for i, f := range m.Files {
		switch {
		case !cleanRel(f.Path):
			return nil, fmt.Errorf("manifest.json: files[%d].path %q is not a clean relative path", i, f.Path)
		case f.Path == FileManifest:
			return nil, fmt.Errorf("manifest.json: files[%d] lists manifest.json itself", i)
		case seen[f.Path]:
			return nil, fmt.Errorf("manifest.json: files[%d].path %q is listed twice", i, f.Path)
		case f.Size < 0:
			return nil, fmt.Errorf("manifest.json: files[%d] (%s) has size %d", i, f.Path, f.Size)
		case !audit.IsHash(f.SHA256):
			return nil, fmt.Errorf("manifest.json: files[%d] (%s) has sha256 %q, not a lower-case hex sha256", i, f.Path, f.SHA256)
		}
		seen[f.Path] = true
	}
	return &m, nil
}

// required are the files every package holds besides the plugin binary and the weights.
var required = []string{FileReport, FileReproduce, FileTask, FileFingerprint, FilePlan, FileScores, FileReview, FileAudit, FileModelConfig}

func (v *Verification) check(fsys fs.FS) {
	b, err := readLimited(fsys, FileManifest, maxManifest)
	if err != nil {
		v.fail("manifest.json cannot be read: %v", err)
		return
	}
	m, err := ParseManifest(b)
	if err != nil {
		v.fail("%v", err)
		return
	}
	v.Manifest = m

	actual := map[string]File{}
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			v.fail("%s cannot be read: %v", p, err)
			return nil
		}
		switch {
		case d.IsDir() || p == FileManifest:
		case !d.Type().IsRegular():
			v.fail("%s is not a plain file (%s)", p, d.Type())
		default:
			sum, n, err := fileio.SHA256FS(fsys, p)
			if err != nil {
				v.fail("%s cannot be read: %v", p, err)
				return nil
			}
			actual[p] = File{Path: p, Size: n, SHA256: sum}
		}
		return nil
	})
	if err != nil {
		v.fail("the package cannot be listed: %v", err)
	}
	listed := map[string]File{}
	for _, f := range m.Files {
		listed[f.Path] = f
		a, ok := actual[f.Path]
		switch {
		case !ok:
			v.fail("%s is listed in the manifest but missing", f.Path)
		case a.Size != f.Size:
			v.fail("%s has %d bytes, the manifest records %d", f.Path, a.Size, f.Size)
		case a.SHA256 != f.SHA256:
			v.fail("%s has sha256 %s, the manifest records %s", f.Path, a.SHA256, f.SHA256)
		default:
			v.Files++
		}
	}
	for _, p := range sortedKeys(actual) {
		if _, ok := listed[p]; !ok {
			v.fail("%s is in the package but not listed in the manifest", p)
		}
	}
	for _, r := range append(required, m.Plugin.Binary) {
		if _, ok := listed[r]; !ok {
			v.fail("%s is not listed in the manifest, and every package holds it", r)
		}
	}
	if f, ok := listed[m.Plugin.Binary]; ok && f.SHA256 != m.Plugin.SHA256 {
		v.fail("%s: the manifest lists it with sha256 %s but records the plugin as %s", m.Plugin.Binary, f.SHA256, m.Plugin.SHA256)
	}
	weights := 0
	for p := range listed {
		if isWeight(p) {
			weights++
		}
	}
	if weights == 0 {
		v.fail("model/ holds no weight file besides config.json")
	}
	v.checkAudit(fsys, m, actual, listed)
	v.checkDICOM(fsys, listed)
	v.checkMeasurements(fsys, listed)
}

func isWeight(p string) bool { return strings.HasPrefix(p, DirModel+"/") && p != FileModelConfig }

func (v *Verification) checkAudit(fsys fs.FS, m *Manifest, actual, listed map[string]File) {
	f, err := fsys.Open(FileAudit)
	if err != nil {
		return // reported as missing
	}
	entries, err := audit.ReadJSONL(f)
	f.Close()
	if err != nil {
		v.fail("%s: %v", FileAudit, err)
		return
	}
	if len(entries) == 0 {
		v.fail("%s holds no entries", FileAudit)
		return
	}
	last := entries[len(entries)-1]
	v.AuditEntries, v.AuditLastHash = len(entries), last.Hash
	if len(entries) != m.Audit.Entries || last.Hash != m.Audit.LastHash {
		v.fail("%s ends at entry seq %d with hash %s, but the manifest records %d entries ending with hash %s: entries were cut off, added or replaced",
			FileAudit, last.Seq, last.Hash, m.Audit.Entries, m.Audit.LastHash)
		return
	}
	if last.Action != audit.ActionExport || last.Role != audit.RoleHost {
		v.fail("%s: the last entry (seq %d) is %s by %s, not the export entry by host", FileAudit, last.Seq, last.Action, last.Role)
		return
	}
	for _, p := range sortedKeys(actual) {
		if _, ok := listed[p]; !ok || p == FileAudit {
			continue // an extra file is reported once, above
		}
		rec, ok := last.Outputs[p]
		switch {
		case !ok:
			v.fail("%s is not recorded by the audit log's export entry (seq %d)", p, last.Seq)
		case rec != actual[p].SHA256:
			v.fail("%s has sha256 %s, the audit log's export entry (seq %d) records %s", p, actual[p].SHA256, last.Seq, rec)
		}
	}
	for _, p := range sortedKeys(last.Outputs) {
		if _, ok := actual[p]; !ok && p != FileAudit && p != FileManifest {
			v.fail("%s is recorded by the audit log's export entry (seq %d) but not in the package", p, last.Seq)
		}
	}
	if err := checkParent(entries, m.Parent); err != nil {
		v.fail("%s: %v", FileAudit, err)
	}
	if m.Lane != "" {
		if l := detail(last, DetailLane); l != m.Lane {
			v.fail("%s: the export entry (seq %d) names lane %q, the manifest %q", FileAudit, last.Seq, l, m.Lane)
		}
		for _, p := range sortedKeys(actual) {
			if isWeight(p) {
				if err := checkTrained(entries, m.Lane, p, actual[p].SHA256); err != nil {
					v.fail("%v", err)
				}
			}
		}
	}
}

func (v *Verification) reproduce(ctx context.Context, fsys fs.FS, pkgDir string, run func(ctx context.Context, pkg, out string) (compute.Identity, error)) {
	tmp, err := os.MkdirTemp("", "amid-reproduce-")
	if err != nil {
		v.fail("a temporary folder for the re-run cannot be made: %v", err)
		return
	}
	defer os.RemoveAll(tmp)
	if pkgDir == "" {
		pkgDir = filepath.Join(tmp, "package")
		if err := extract(fsys, v.Manifest, pkgDir); err != nil {
			v.fail("the package cannot be unpacked for the re-run: %v", err)
			return
		}
	}
	out := filepath.Join(tmp, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		v.fail("a temporary folder for the re-run cannot be made: %v", err)
		return
	}
	v.Compute = v.Manifest.Compute
	rerun, err := run(ctx, pkgDir, out)
	if err != nil {
		v.fail("re-running prediction failed: %s", strings.Join(strings.Fields(err.Error()), " "))
		return
	}
	v.Rerun = rerun
	if err := os.MkdirAll(filepath.Join(out, DirPredictions), 0o755); err != nil {
		v.fail("the re-run's predictions cannot be read: %v", err)
		return
	}
	got, err := listFiles(filepath.Join(out, DirPredictions))
	if err != nil {
		v.fail("the re-run's predictions cannot be read: %v", err)
		return
	}
	byPath := map[string]File{}
	for _, f := range got {
		byPath[DirPredictions+"/"+f.Path] = f
	}
	want := map[string]File{}
	for _, f := range v.Manifest.Files {
		if strings.HasPrefix(f.Path, DirPredictions+"/") {
			want[f.Path] = f
		}
	}
	// Under the same identity (or an unknown one) any difference of bytes fails; under
	// another, the files whose bytes differ are judged within tolerance below.
	same := v.Compute == v.Rerun && !v.Compute.IsZero()
	tolerant := !same && !v.Compute.IsZero() && !v.Rerun.IsZero()
	why := identities(v.Compute, v.Rerun)
	if !same {
		why += ", so no tolerance applies"
	}
	var differ []string // present in both, other bytes, to judge within tolerance
	for _, p := range sortedKeys(want) {
		g, ok := byPath[p]
		switch {
		case !ok:
			v.fail("%s was not written by the re-run", p)
		case g.SHA256 != want[p].SHA256 && tolerant:
			differ = append(differ, p)
		case g.SHA256 != want[p].SHA256:
			v.fail("%s: the re-run wrote different bytes %s (sha256 %s, the package has %s)", p, why, g.SHA256, want[p].SHA256)
		default:
			v.Compared++
			continue
		}
		v.Differ = append(v.Differ, p)
	}
	for _, p := range sortedKeys(byPath) {
		if _, ok := want[p]; !ok {
			v.fail("%s was written by the re-run but is not in the package", p)
			v.Differ = append(v.Differ, p)
		}
	}
	v.judge(fsys, pkgDir, filepath.Join(out, DirPredictions), differ)
}

// judge decides whether the re-run reproduced the package: byte for byte, or, when it ran
// under another compute identity than the package records, within compute.Table for the
// files whose bytes differ (differ).
func (v *Verification) judge(fsys fs.FS, pkgDir, rerunDir string, differ []string) {
	where := identities(v.Compute, v.Rerun)
	if len(v.Differ) == 0 {
		v.Reproduced, v.Exact = true, true
		v.ReproduceNote = "reproduced byte for byte " + where
		return
	}
	if len(differ) == 0 {
		return // every difference has failed already
	}
	spec, err := packageSpec(fsys)
	if err != nil {
		v.fail("the re-run differs from the package %s, and its predictions cannot be compared within tolerance: %v", where, err)
		return
	}
	ag := compute.NewAgreement(compute.Table)
	for _, p := range differ {
		rel := filepath.FromSlash(strings.TrimPrefix(p, DirPredictions+"/"))
		if err := predictions.Compare(ag, spec, p, filepath.Join(pkgDir, filepath.FromSlash(p)), filepath.Join(rerunDir, rel)); err != nil {
			ag.Fail("%s: %v", p, err)
		}
	}
	v.Agreement = ag
	if !ag.OK() {
		for _, p := range ag.Problems {
			v.fail("the re-run %s is beyond tolerance: %s", where, p)
		}
		return
	}
	v.Compared += len(differ)
	v.Reproduced = v.OK() // missing or extra files have failed already
	v.ReproduceNote = fmt.Sprintf("reproduced within tolerance %s: %s; %d of %d files byte for byte",
		where, ag.Summary(), v.Compared-len(differ), v.Compared)
}

// identities says how a re-run's compute identity relates to the package's: "under the
// same compute identity", "on different hardware (SkylakeX vs Haswell)" when the device or
// kernels differ, "under a different compute identity (2 vs 16 workers)" otherwise, or that
// one of them is unknown.
func identities(pkg, rerun compute.Identity) string {
	switch {
	case pkg == rerun && !pkg.IsZero():
		return "under the same compute identity"
	case pkg.IsZero() || rerun.IsZero():
		return fmt.Sprintf("with an unknown compute identity (package: %s, re-run: %s)", pkg, rerun)
	case pkg.Device != rerun.Device || pkg.BLAS != rerun.BLAS || pkg.Core != rerun.Core:
		return "on different hardware (" + compute.Diff(pkg, rerun) + ")"
	}
	return "under a different compute identity (" + compute.Diff(pkg, rerun) + ")"
}

// Unpack writes the files a package zip's manifest lists into the folder dir (created;
// it must not hold them already), so that the package can run from there; Verify the
// folder afterwards, since Unpack checks no sha256.
func Unpack(zipPath, dir string) error {
	zr, err := zip.OpenReader(zipPath)
	if err != nil {
		return fmt.Errorf("%s is neither a package folder nor a readable zip: %w", zipPath, err)
	}
	defer zr.Close()
	fsys, err := zipRoot(&zr.Reader)
	if err != nil {
		return fmt.Errorf("%s: %w", zipPath, err)
	}
	b, err := readLimited(fsys, FileManifest, maxManifest)
	if err != nil {
		return fmt.Errorf("%s: %w", zipPath, err)
	}
	m, err := ParseManifest(b)
	if err != nil {
		return fmt.Errorf("%s: %w", zipPath, err)
	}
	for _, f := range m.Files {
		if !cleanRel(f.Path) {
			return fmt.Errorf("%s: the manifest lists %q, which is not a path inside the package", zipPath, f.Path)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := extract(fsys, m, dir); err != nil {
		return fmt.Errorf("%s: %w", zipPath, err)
	}
	return nil
}

// extract writes the manifest's files from fsys under dir, executables with mode 0755.
func extract(fsys fs.FS, m *Manifest, dir string) error {
	for _, f := range m.Files {
		dst := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if f.Path == m.Plugin.Binary || f.Path == FileReproduce {
			mode = 0o755
		}
		in, err := fsys.Open(f.Path)
		if err != nil {
			return err
		}
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if err != nil {
			in.Close()
			return err
		}
		_, err = io.Copy(out, io.LimitReader(in, f.Size))
		in.Close()
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	b, err := readLimited(fsys, FileManifest, maxManifest)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, FileManifest), b, 0o644)
}

func readLimited(fsys fs.FS, name string, limit int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, io.LimitReader(f, limit+1)); err != nil {
		return nil, err
	}
	if int64(b.Len()) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, limit)
	}
	return b.Bytes(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
