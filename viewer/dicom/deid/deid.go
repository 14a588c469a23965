// Package deid de-identifies DICOM objects and case identifiers with a secret key.
//
// # Objects
//
// [Keys.Apply] puts a parsed DICOM file (amid/viewer/dicom/dataset) through PS3.15's
// Basic Application Level Confidentiality Profile (Annex E, Table E.1-1, transcribed in
// table.go), at every level of nesting:
//
//   - X removes the attribute, Z empties it, D replaces its value with a dummy of its VR
//     (dates 19000101, times 000000, names and texts ANONYMOUS, numbers 0);
//   - the conditional actions take the choice that keeps any object valid whatever the
//     attribute's type in its IOD: any with D (X/D, Z/D, X/Z/D) is D, X/Z is Z, and X/Z/U*
//     (the Referenced Image and Source Image Sequences) keeps the sequence with its UIDs
//     replaced, so that a segmentation still names its (de-identified) source images;
//   - U, and every other UID value that is not one of the standard's own (root
//     1.2.840.10008, such as SOP Class and Transfer Syntax UIDs), is replaced by a UID
//     derived from it with the key (HMAC-SHA256, PS3.5 §B.2 2.25 form), so the same UID
//     maps to the same replacement in every object and every run that uses the key: a
//     segmentation and its source series de-identified with one key still fit together;
//   - private attributes (odd groups), curves (50xx) and overlays (60xx,3000 and 4000)
//     are removed;
//   - beyond the table, every remaining date, time and date-time is replaced by a dummy
//     and every remaining person name emptied, since without the profile's Retain
//     Longitudinal Temporal Information option none should survive;
//   - Patient Identity Removed is set to YES, De-identification Method and its Code
//     Sequence (DCM 113100, Basic Application Confidentiality Profile) say what was done,
//     and Longitudinal Temporal Information Modified is REMOVED.
//
// When Options.Pseudonym is given, Patient's Name and Patient ID hold it instead of being
// empty, so de-identified objects of one case still group together. Pixel data is not
// inspected: an image whose Burned In Annotation is YES is refused.
//
// # Case identifiers
//
// [Keys.Pseudonym] replaces a case id taken from a file or folder name by a stable
// pseudonym derived with the key. The key stays with the run that made it (never in an
// exported package), so the pseudonyms cannot be traced back without it.
package deid

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"amid/viewer/dicom/dataset"

	"github.com/suyashkumar/dicom/pkg/tag"
)

// KeySize is the size of a secret key in bytes.
const KeySize = 32

// Keys derives pseudonyms and replacement UIDs from a secret key.
type Keys struct {
	secret []byte
}

// NewKey returns a new random secret key.
func NewKey() []byte {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return k
}

// New returns the keys of a secret, which must be KeySize bytes.
func New(secret []byte) (*Keys, error) {
	if len(secret) != KeySize {
		return nil, fmt.Errorf("deid: the secret key is %d bytes, not %d", len(secret), KeySize)
	}
	return &Keys{secret: append([]byte(nil), secret...)}, nil
}

func (k *Keys) mac(kind, s string) []byte {
	h := hmac.New(sha256.New, k.secret)
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write([]byte(s))
	return h.Sum(nil)
}

// PseudonymPrefix starts every pseudonym.
const PseudonymPrefix = "anon-"

var lowerBase32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Pseudonym returns the stable pseudonym of a case id: "anon-" and 12 letters and digits
// (60 bits of the keyed hash), usable as a file name and as a task's case id.
func (k *Keys) Pseudonym(id string) string {
	return PseudonymPrefix + lowerBase32.EncodeToString(k.mac("case", id))[:12]
}

// UID returns the replacement of a UID: a 2.25 UID from the first 128 bits of its keyed
// hash.
func (k *Keys) UID(uid string) string {
	return "2.25." + new(big.Int).SetBytes(k.mac("uid", uid)[:16]).String()
}

// standardRoot is the root of the UIDs the standard itself defines (SOP classes,
// transfer syntaxes, coding schemes): they identify no one and are kept.
const standardRoot = "1.2.840.10008."

// Options tune Apply.
type Options struct {
	// Pseudonym, when set, is written as Patient's Name and Patient ID.
	Pseudonym string
}

// ErrBurnedIn marks an image whose pixels hold identifying text.
var ErrBurnedIn = errors.New("the image has burned-in annotation")

// Method is the De-identification Method the de-identified objects record (LO: at most
// 64 characters).
const Method = "AMID: PS3.15 Basic Profile, keyed UIDs"

// Apply de-identifies f in place (see the package documentation).
func (k *Keys) Apply(f *dataset.File, o Options) error {
	ds := f.DataSet
	if strings.EqualFold(ds.String(tag.BurnedInAnnotation), "YES") {
		return fmt.Errorf("deid: %w (Burned In Annotation is YES); its pixels cannot be de-identified here", ErrBurnedIn)
	}
	k.dataSet(ds, 0)
	// The meta group is rebuilt by dataset.Encode from the de-identified data set.
	f.Meta = &dataset.DataSet{}
	ds.Put(dataset.Text(tag.PatientIdentityRemoved, "CS", "YES"))
	ds.Put(dataset.Text(tag.DeidentificationMethod, "LO", Method))
	ds.Put(dataset.Seq(tag.DeidentificationMethodCodeSequence, dataset.New(
		dataset.Text(tag.CodeValue, "SH", "113100"),
		dataset.Text(tag.CodingSchemeDesignator, "SH", "DCM"),
		dataset.Text(tag.CodeMeaning, "LO", "Basic Application Confidentiality Profile"))))
	ds.Put(dataset.Text(tag.LongitudinalTemporalInformationModified, "CS", "REMOVED"))
	if o.Pseudonym != "" {
		ds.Put(dataset.Text(tag.PatientName, "PN", o.Pseudonym))
		ds.Put(dataset.Text(tag.PatientID, "LO", o.Pseudonym))
	}
	return nil
}

// dataSet applies the profile to the elements of ds and its items.
func (k *Keys) dataSet(ds *dataset.DataSet, depth int) {
	if ds == nil || depth > dataset.MaxDepth {
		return
	}
	kept := ds.Elements[:0]
	for _, e := range ds.Elements {
		if k.element(e, depth) {
			kept = append(kept, e)
		}
	}
	clear(ds.Elements[len(kept):])
	ds.Elements = kept
}

// element applies the profile to one element and reports whether it stays.
func (k *Keys) element(e *dataset.Element, depth int) bool {
	g := e.Tag.Group
	switch {
	case g%2 == 1:
		return false // private
	case g&0xFF00 == 0x5000:
		return false // curves
	case g&0xFF00 == 0x6000 && (e.Tag.Element == 0x3000 || e.Tag.Element == 0x4000):
		return false // overlay data and comments
	}
	action := basic[e.Tag]
	switch {
	case action == "X":
		return false
	case strings.Contains(action, "D"):
		action = "D"
	case action == "X/Z":
		action = "Z"
	case action == "X/Z/U*":
		action = "U"
	}
	if e.VR == "SQ" {
		switch action {
		case "Z":
			e.Items = []*dataset.DataSet{}
		default:
			for _, it := range e.Items {
				k.dataSet(it, depth+1)
			}
		}
		return true
	}
	switch {
	case action == "Z":
		e.Value = nil
		e.Fragments = nil
	case action == "D":
		e.Value = dummy(e)
	case e.VR == "UI":
		k.uids(e)
	case e.VR == "DA" || e.VR == "TM" || e.VR == "DT":
		if len(e.Value) > 0 {
			e.Value = dummy(e)
		}
	case e.VR == "PN":
		e.Value = nil
	}
	return true
}

// uids replaces each UID of a UI element but the standard's own.
func (k *Keys) uids(e *dataset.Element) {
	s := strings.TrimRight(string(e.Value), "\x00 ")
	if s == "" {
		return
	}
	parts := strings.Split(s, "\\")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p != "" && !strings.HasPrefix(p, standardRoot) {
			parts[i] = k.UID(p)
		}
	}
	e.Value = []byte(strings.Join(parts, "\\"))
}

// dummy is the dummy value of an element's VR.
func dummy(e *dataset.Element) []byte {
	switch e.VR {
	case "DA":
		return []byte("19000101")
	case "TM":
		return []byte("000000")
	case "DT":
		return []byte("19000101000000")
	case "AS":
		return []byte("000Y")
	case "DS", "IS":
		return []byte("0")
	case "UI":
		return []byte("2.25.0")
	case "PN", "LO", "SH", "LT", "ST", "UT", "UC", "CS", "AE":
		return []byte("ANONYMOUS")
	case "UR":
		return nil
	}
	return make([]byte, len(e.Value)) // binary: zeros of the same size
}
