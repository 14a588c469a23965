package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Placeholders that replace what the scrubber takes out of free text.
const (
	redactedPath = "[path]"
	redactedName = "[name]"
	redactedUID  = "[uid]"
	redactedID   = "[id]"
	redactedDate = "[date]"
	redacted     = "[redacted]"
)

// FingerprintKeys are the fingerprint keys whose members a request may carry. A member of
// the fingerprint under any other key is dropped whatever its value, so that a value a
// profiler should not have written (a case id, a file name, a DICOM tag) never leaves the
// machine. Keys match case-insensitively with '_', '-' and ' ' ignored, so class_frequencies
// and classFrequencies are the same key. Integer keys without leading zeros (label values),
// percentile keys (p1, p99, p99_5) and keys made of words the request's task definition
// already carries (class and attribute names, and their concatenations) are known too.
var FingerprintKeys = []string{
	// amid/host/profile.Fingerprint
	"version", "kind", "task_dims", "modality", "channels", "classes", "train_cases", "test_cases",
	"patients", "cases", "dims", "spacing", "median_shape", "median_spacing", "anisotropy",
	"fg_p00_5", "fg_p99_5", "fg_mean", "fg_std", "intensity_percentiles", "class_frequency",
	"cases_with_class", "class_voxels", "class_means", "boxes", "points", "box3d", "attributes", "variants", "scores",
	"per_image", "median_width", "median_height", "min_side", "max_side", "median_size",
	"median_relative_centre", "min", "max", "mean", "std", "step", "histogram",
	// other statistics a fingerprint may carry
	"train", "test", "splits", "n", "count", "counts", "total", "missing", "images", "labels",
	"label", "channel", "modalities", "dim", "ndim", "shape", "shapes", "size", "sizes",
	"spacings", "voxel_volume", "orientation", "dtype", "dtypes", "format", "formats", "median",
	"var", "iqr", "sum", "percentiles", "quantiles", "bins", "value", "values", "fraction",
	"ratio", "intensity", "intensities", "foreground", "background", "class_frequencies",
	"class_counts", "frequencies", "frequency", "voxels", "objects", "object_sizes",
	"object_counts", "objects_per_case", "components", "box", "box_sizes", "width", "height",
	"depth", "aspect", "area", "volume", "score", "distribution", "empty", "empty_cases",
	"multi_label", "instances", "slices", "frames", "bits", "photometric",
	"photometric_interpretation", "signed", "rescale", "unit", "units",
}

// fingerprintStringKeys are the fingerprint keys whose string values a request may carry
// (short words such as "CT" or "float32"); a string under any other key is dropped.
var fingerprintStringKeys = []string{
	"modality", "modalities", "kind", "dtype", "dtypes", "format", "formats", "orientation",
	"photometric", "photometric_interpretation", "unit", "units", "channel", "channels",
}

// Scrubber takes out of what a request carries anything that could identify a patient or
// name a file: file paths, DICOM person names (with '^'), UIDs, dates, id-like tokens and
// the configured identifiers. It is safe for concurrent use.
type Scrubber struct {
	idents     []string // lower case
	keys       map[string]bool
	stringKeys map[string]bool
	words      map[string]bool // strings the task definition carries, as fingerprint keys
}

// Report counts what a scrub took out. It names no value, so it may be logged.
type Report struct {
	Dropped  int // members or elements removed
	Redacted int // tokens of free text replaced
}

func (r *Report) add(o Report) { r.Dropped += o.Dropped; r.Redacted += o.Redacted }

// NewScrubber returns a scrubber that also redacts each of identifiers (matched without
// regard to case; empty ones are ignored) and also knows the fingerprint keys extraKeys.
func NewScrubber(identifiers, extraKeys []string) *Scrubber {
	s := &Scrubber{keys: map[string]bool{}, stringKeys: map[string]bool{}}
	for _, id := range identifiers {
		if id = strings.TrimSpace(id); id != "" {
			s.idents = append(s.idents, strings.ToLower(id))
		}
	}
	// Longest first, so that an identifier inside another is not matched first.
	sort.Slice(s.idents, func(i, j int) bool { return len(s.idents[i]) > len(s.idents[j]) })
	for _, k := range FingerprintKeys {
		s.keys[normKey(k)] = true
	}
	for _, k := range extraKeys {
		s.keys[normKey(k)] = true
	}
	for _, k := range fingerprintStringKeys {
		s.stringKeys[normKey(k)] = true
	}
	return s
}

func normKey(k string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r == ' ' {
			return -1
		}
		return unicode.ToLower(r)
	}, k)
}

var (
	tokenRE     = regexp.MustCompile(`\S+`)
	uidRE       = regexp.MustCompile(`^[0-9]+(\.[0-9]+){3,}$`)
	dateRE      = regexp.MustCompile(`[0-9]{4}[-./][0-9]{1,2}[-./][0-9]{1,2}|[0-9]{1,2}[-./][0-9]{1,2}[-./][0-9]{4}`)
	longDigits  = regexp.MustCompile(`[0-9]{6,}`)
	decimalRE   = regexp.MustCompile(`^[+-]?[0-9]{0,5}\.[0-9]+([eE][+-]?[0-9]+)?%?$`)
	shapeRE     = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(x[0-9]+(\.[0-9]+)?)+(mm|px|vox)?$`)
	driveRE     = regexp.MustCompile(`^[A-Za-z]:`)
	intKeyRE    = regexp.MustCompile(`^(0|[1-9][0-9]{0,4})$`)
	pctKeyRE    = regexp.MustCompile(`^[pq][0-9]{1,2}(_[0-9]+)?$`)
	suffixRE    = regexp.MustCompile(`^(\.[A-Za-z][A-Za-z0-9]{0,7}){1,3}$`)
	fileExtRE   = regexp.MustCompile(`(?i)\.(dcm|dicom|ima|nii|gz|mha|mhd|nrrd|nhdr|png|tif|tiff|bmp|jpe?g|csv|tsv|json|jsonl|ya?ml|npy|npz|h5|hdf5|zip|tar|raw|img|hdr|mat|pkl|pt|pth|txt|log)$`)
	punctuation = "\"'`()[]{}<>,;:!?."
)

// Text returns s with every configured identifier and every token that looks like a file
// path, a DICOM person name, a UID, a date or an id replaced by a placeholder, and how many
// it replaced.
func (s *Scrubber) Text(text string) (string, int) {
	n := 0
	if len(s.idents) > 0 {
		text, n = s.redactIdents(text)
	}
	out := tokenRE.ReplaceAllStringFunc(text, func(tok string) string {
		core := strings.Trim(tok, punctuation)
		if core == "" || core == redacted || isSuffix(tok) {
			return tok
		}
		if p := classify(core); p != "" {
			n++
			i := strings.Index(tok, core)
			return tok[:i] + p + tok[i+len(core):]
		}
		return tok
	})
	return out, n
}

func (s *Scrubber) redactIdents(text string) (string, int) {
	n := 0
	for _, id := range s.idents {
		low := strings.ToLower(text)
		if !strings.Contains(low, id) {
			continue
		}
		if len(low) != len(text) {
			// Lower-casing changed byte offsets (rare runes): drop the whole text.
			return redacted, n + 1
		}
		var b strings.Builder
		for {
			i := strings.Index(low, id)
			if i < 0 {
				break
			}
			b.WriteString(text[:i])
			b.WriteString(redacted)
			text, low = text[i+len(id):], low[i+len(id):]
			n++
		}
		b.WriteString(text)
		text = b.String()
	}
	return text, n
}

// classify returns the placeholder for a token that must not leave the machine, or "".
func classify(t string) string {
	switch {
	case isPath(t):
		return redactedPath
	case strings.ContainsRune(t, '^'):
		return redactedName
	case uidRE.MatchString(t):
		return redactedUID
	case dateRE.MatchString(t):
		return redactedDate
	case decimalRE.MatchString(t), shapeRE.MatchString(t):
		return ""
	case longDigits.MatchString(t):
		return redactedID
	case idLike(t):
		return redactedID
	}
	return ""
}

// isSuffix reports whether a token is a bare file suffix such as ".nii.gz".
func isSuffix(tok string) bool {
	return suffixRE.MatchString(strings.TrimRight(strings.TrimLeft(tok, `"'(`), punctuation))
}

// isPath reports whether a token looks like a file path or a file name; a bare suffix
// (".nii.gz") is neither.
func isPath(t string) bool {
	if suffixRE.MatchString(t) {
		return false
	}
	return strings.ContainsAny(t, `/\`) || strings.HasPrefix(t, "~") || driveRE.MatchString(t) ||
		fileExtRE.MatchString(t)
}

// idLike reports whether a token mixes letters with three or more digits, as case, patient
// and accession ids do (LIDC-IDRI-0001, sub-strokecase0042).
func idLike(t string) bool {
	digits, letters := 0, 0
	for _, r := range t {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case unicode.IsLetter(r):
			letters++
		}
	}
	return digits >= 3 && letters > 0 && len(t) >= 6
}

// Leaks reports whether b contains one of the configured identifiers (without regard to
// case); the error names the identifier by its position only.
func (s *Scrubber) Leaks(b []byte) error {
	low := bytes.ToLower(b)
	for i, id := range s.idents {
		if bytes.Contains(low, []byte(id)) {
			return fmt.Errorf("request carries configured identifier %d of %d", i+1, len(s.idents))
		}
	}
	return nil
}

// Document scrubs a JSON document whose structure is free (a task definition, a plugin's
// configuration or schema): a string that is a file path as a whole is dropped with its
// member or element, other strings pass through Text, and a member whose key Text would
// change is dropped. Numbers keep their exact text. A document that is not JSON becomes
// null.
func (s *Scrubber) Document(doc json.RawMessage) (json.RawMessage, Report) {
	return s.scrub(doc, false)
}

// Fingerprint scrubs a dataset fingerprint strictly: it keeps only members under known keys
// (FingerprintKeys and the extra keys), numbers and booleans, and strings only under the
// keys that name short words (modality, dtype, …) when Text leaves them alone.
func (s *Scrubber) Fingerprint(doc json.RawMessage) (json.RawMessage, Report) {
	return s.scrub(doc, true)
}

func (s *Scrubber) scrub(doc json.RawMessage, strict bool) (json.RawMessage, Report) {
	var rep Report
	if len(bytes.TrimSpace(doc)) == 0 {
		return json.RawMessage("null"), rep
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		rep.Dropped++
		return json.RawMessage("null"), rep
	}
	out, keep := s.value(v, strict, "", &rep)
	if !keep {
		return json.RawMessage("null"), rep
	}
	b, err := marshal(out)
	if err != nil {
		rep.Dropped++
		return json.RawMessage("null"), rep
	}
	return b, rep
}

// value scrubs v found under key; keep is false when v must be dropped.
func (s *Scrubber) value(v any, strict bool, key string, rep *Report) (any, bool) {
	switch x := v.(type) {
	case nil, bool, json.Number:
		return x, true
	case string:
		if strict {
			if !s.stringKeys[normKey(key)] || len(x) > 64 {
				rep.Dropped++
				return nil, false
			}
			if t, n := s.Text(x); n > 0 || t != x {
				rep.Dropped++
				return nil, false
			}
			return x, true
		}
		if t := strings.TrimSpace(x); t != "" && !strings.ContainsAny(t, " \t\n") && !isSuffix(t) && isPath(strings.Trim(t, punctuation)) {
			rep.Dropped++
			return nil, false
		}
		t, n := s.Text(x)
		rep.Redacted += n
		return t, true
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			if e2, ok := s.value(e, strict, key, rep); ok {
				out = append(out, e2)
			}
		}
		return out, true
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if !s.keyOK(k, strict) {
				rep.Dropped++
				continue
			}
			if e2, ok := s.value(e, strict, k, rep); ok {
				out[k] = e2
			}
		}
		return out, true
	}
	rep.Dropped++
	return nil, false
}

func (s *Scrubber) keyOK(k string, strict bool) bool {
	if strict && s.keys[normKey(k)] {
		return true // a known key, even one like fg_p99_5 that Text would take for an id
	}
	if t, n := s.Text(k); n > 0 || t != k {
		return false
	}
	if !strict {
		return true
	}
	return intKeyRE.MatchString(k) || pctKeyRE.MatchString(strings.ToLower(k)) || s.composed(k)
}

// withWords returns a copy of s that also knows, as fingerprint keys, the given words and
// their concatenations (what a request already carries in its task definition).
func (s *Scrubber) withWords(words []string) *Scrubber {
	c := *s
	c.words = map[string]bool{}
	for _, w := range words {
		if w != "" && len(w) <= 64 {
			c.words[w] = true
		}
	}
	return &c
}

// composed reports whether k is a known word or a concatenation of known words.
func (s *Scrubber) composed(k string) bool {
	if s.words[k] {
		return true
	}
	if len(s.words) == 0 || len(k) > 256 {
		return false
	}
	// ok[i]: k[:i] is a concatenation of words of two or more bytes.
	ok := make([]bool, len(k)+1)
	ok[0] = true
	for i := 2; i <= len(k); i++ {
		for j := max(0, i-64); j <= i-2 && !ok[i]; j++ {
			ok[i] = ok[j] && s.words[k[j:i]]
		}
	}
	return ok[len(k)]
}

// jsonStrings returns every string value and key of a JSON document.
func jsonStrings(doc json.RawMessage) []string {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return nil
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for k, e := range x {
				out = append(out, k)
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// marshal encodes v without HTML escaping, so placeholders stay readable.
func marshal(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimRight(b.Bytes(), "\n")), nil
}
