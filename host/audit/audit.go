// Package audit is AMID's tamper-evident audit log: an append-only chain of entries, each
// holding the hash of the one before it, stored in a bbolt file and exported as JSON Lines.
//
// # Entries
//
// An [Entry] says who (Role: host, planner, user or plugin:<name>) did what (Action, such
// as "task.loaded", "folds.locked", "lane.trained", "review.decision" or "export") with
// which files (Inputs and Outputs: a name mapped to the lower-case hex SHA-256 of the
// content) and, in Details, a small JSON object of anything else. [Log.Append] fills in
// Seq (1-based, no gaps), Time (UTC), Prev (the previous entry's Hash, "" for the first)
// and Hash.
//
// # The hash
//
// Hash is the lower-case hex SHA-256 of the entry's canonical encoding: a JSON object with
// exactly the keys action, details, inputs, outputs, prev, role, seq and time, in that
// (sorted) order, without insignificant white space, where
//
//   - seq is a decimal integer,
//   - time is the UTC time in RFC 3339 with nanoseconds and trailing zeros removed
//     (Go's time.RFC3339Nano, e.g. "2025-01-02T03:04:05.123Z"),
//   - inputs and outputs are objects with sorted keys ({} when empty),
//   - details is the Details object re-encoded with sorted keys and numbers as written
//     ({} when empty),
//   - strings are escaped as Go's encoding/json does with HTML escaping off (", \, control
//     characters; valid UTF-8 otherwise verbatim).
//
// [Canonical] returns these bytes, so that any other program can recompute a hash.
//
// # What the chain proves
//
// Changing, removing, inserting or reordering any entry breaks the chain at that entry,
// and [Verify] (or [Log.Verify]) names its Seq. Cutting entries off the end leaves a valid
// but shorter chain: anchor the last hash elsewhere (the exported model package records it
// in its manifest) to detect that.
//
// The bbolt file is written in one transaction per entry, synced before Append returns, so
// a writer killed at any moment leaves every entry it reported appended and a valid chain.
package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// Roles besides plugin:<name>.
const (
	RoleHost    = "host"
	RolePlanner = "planner"
	RoleUser    = "user"
	// RolePluginPrefix starts the role of a plugin: "plugin:" + its name.
	RolePluginPrefix = "plugin:"
)

// Actions the host records. Others are allowed: an action is any dotted lower-case name.
const (
	ActionTaskLoaded     = "task.loaded"
	ActionFoldsLocked    = "folds.locked"
	ActionLaneTrained    = "lane.trained"
	ActionReviewDecision = "review.decision"
	ActionExport         = "export"
	// ActionRunFrom opens a run that improves a model package: it follows the parent
	// package's own entries and names its manifest.json's sha256 (amid run --from).
	ActionRunFrom = "run.from"
)

// MaxDetails is the largest Details object an entry may carry, in bytes.
const MaxDetails = 64 << 10

// ErrBroken is wrapped by every error that reports a broken chain.
var ErrBroken = errors.New("audit log broken")

// Entry is one audit record.
type Entry struct {
	Seq     uint64            `json:"seq"`
	Time    time.Time         `json:"time"`
	Role    string            `json:"role"`
	Action  string            `json:"action"`
	Inputs  map[string]string `json:"inputs,omitempty"`
	Outputs map[string]string `json:"outputs,omitempty"`
	Details json.RawMessage   `json:"details,omitempty"`
	Prev    string            `json:"prev"`
	Hash    string            `json:"hash"`
}

// PluginRole is the role of the plugin called name.
func PluginRole(name string) string { return RolePluginPrefix + name }

// canonical is the hashed form of an entry; its fields are in sorted key order.
type canonical struct {
	Action  string            `json:"action"`
	Details json.RawMessage   `json:"details"`
	Inputs  map[string]string `json:"inputs"`
	Outputs map[string]string `json:"outputs"`
	Prev    string            `json:"prev"`
	Role    string            `json:"role"`
	Seq     uint64            `json:"seq"`
	Time    string            `json:"time"`
}

// Canonical returns the bytes that e.Hash is the SHA-256 of (see the package doc). Details
// must be a JSON object (or empty).
func Canonical(e Entry) ([]byte, error) {
	d, err := canonicalDetails(e.Details)
	if err != nil {
		return nil, err
	}
	c := canonical{
		Action:  e.Action,
		Details: d,
		Inputs:  nonNil(e.Inputs),
		Outputs: nonNil(e.Outputs),
		Prev:    e.Prev,
		Role:    e.Role,
		Seq:     e.Seq,
		Time:    formatTime(e.Time),
	}
	return marshal(c)
}

// HashOf returns the hash e should carry: the hex SHA-256 of Canonical(e).
func HashOf(e Entry) (string, error) {
	b, err := Canonical(e)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// marshal is json.Marshal without HTML escaping and without the trailing newline.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// canonicalDetails re-encodes a JSON object with sorted keys, compact, numbers as written.
func canonicalDetails(d json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(d)) == 0 || bytes.Equal(bytes.TrimSpace(d), []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if len(d) > MaxDetails {
		return nil, fmt.Errorf("details are %d bytes, more than the %d allowed", len(d), MaxDetails)
	}
	if !utf8.Valid(d) {
		return nil, errors.New("details are not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(d))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("details are not JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("details hold more than one JSON value")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("details are not a JSON object")
	}
	return marshal(v)
}

// check reports the first field of e (as filled by Append) that is not well formed.
func check(e Entry) error {
	switch {
	case e.Role == RoleHost || e.Role == RolePlanner || e.Role == RoleUser:
	case strings.HasPrefix(e.Role, RolePluginPrefix) && validName(e.Role[len(RolePluginPrefix):]):
	default:
		return fmt.Errorf("role %q is not host, planner, user or plugin:<name>", e.Role)
	}
	if !validAction(e.Action) {
		return fmt.Errorf("action %q is not a dotted lower-case name such as %q", e.Action, ActionLaneTrained)
	}
	for _, m := range []struct {
		field string
		m     map[string]string
	}{{"inputs", e.Inputs}, {"outputs", e.Outputs}} {
		for k, v := range m.m {
			if k == "" || !utf8.ValidString(k) {
				return fmt.Errorf("%s has an empty or non-UTF-8 name", m.field)
			}
			if !IsHash(v) {
				return fmt.Errorf("%s %q: %q is not a lower-case hex SHA-256", m.field, k, v)
			}
		}
	}
	if _, err := canonicalDetails(e.Details); err != nil {
		return err
	}
	return nil
}

// IsHash says whether s is a lower-case hex SHA-256 (64 characters 0-9a-f).
func IsHash(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func validName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func validAction(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Verify checks a sequence of entries as a chain: Seq counts from 1 without gaps, each
// Prev is the hash of the entry before it, each Hash matches its entry's contents. The
// error, which wraps ErrBroken, is one sentence naming the first bad entry.
func Verify(entries []Entry) error {
	prev := ""
	for i, e := range entries {
		if err := verifyNext(e, uint64(i)+1, prev, ""); err != nil {
			return err
		}
		prev = e.Hash
	}
	return nil
}

// verifyNext checks that e is a sound entry at position want after the entry hashed prev.
// where ("line 7" or "") says where e was read.
func verifyNext(e Entry, want uint64, prev, where string) error {
	at := fmt.Sprintf("entry seq %d", e.Seq)
	if where != "" {
		at += " (" + where + ")"
	}
	h, err := HashOf(e)
	if err != nil {
		return fmt.Errorf("%w: %s is malformed: %v", ErrBroken, at, err)
	}
	if h != e.Hash {
		return fmt.Errorf("%w: %s was changed: its hash does not match its contents", ErrBroken, at)
	}
	if err := check(e); err != nil {
		return fmt.Errorf("%w: %s is malformed: %v", ErrBroken, at, err)
	}
	switch {
	case e.Seq > want:
		return fmt.Errorf("%w: %s comes where entry seq %d should be: an entry was removed or the entries were reordered", ErrBroken, at, want)
	case e.Seq < want:
		return fmt.Errorf("%w: %s is out of order or repeated: seq %d should come here", ErrBroken, at, want)
	}
	if e.Prev != prev {
		if want == 1 {
			return fmt.Errorf("%w: %s is the first entry but names a previous hash: entries before it were removed", ErrBroken, at)
		}
		return fmt.Errorf("%w: %s does not chain to entry seq %d: an entry was inserted, removed or replaced here", ErrBroken, at, want-1)
	}
	return nil
}

// lineLimit bounds one JSON Lines record.
const lineLimit = 1 << 20

// wire is an exported line: Entry with the time kept as written.
type wire struct {
	Seq     uint64            `json:"seq"`
	Time    string            `json:"time"`
	Role    string            `json:"role"`
	Action  string            `json:"action"`
	Inputs  map[string]string `json:"inputs,omitempty"`
	Outputs map[string]string `json:"outputs,omitempty"`
	Details json.RawMessage   `json:"details,omitempty"`
	Prev    string            `json:"prev"`
	Hash    string            `json:"hash"`
}

// MarshalLine is e as one exported JSON Lines record, without the newline.
func MarshalLine(e Entry) ([]byte, error) {
	d, err := canonicalDetails(e.Details)
	if err != nil {
		return nil, err
	}
	if string(d) == "{}" {
		d = nil
	}
	return marshal(wire{e.Seq, formatTime(e.Time), e.Role, e.Action, e.Inputs, e.Outputs, d, e.Prev, e.Hash})
}

// DecodeJSONL reads exported entries, one JSON object a line (blank lines are skipped),
// without checking the chain. It fails on the first line that is not an entry: bad JSON,
// an unknown field, or a time not written as UTC RFC 3339.
func DecodeJSONL(r io.Reader) ([]Entry, error) {
	var out []Entry
	err := scanLines(r, func(n int, line []byte) error {
		e, err := decodeLine(line)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// ReadJSONL reads exported entries and verifies their chain. Errors are one sentence that
// names the line and, for a broken chain (wrapping ErrBroken), the first bad Seq.
func ReadJSONL(r io.Reader) ([]Entry, error) {
	var out []Entry
	prev := ""
	err := scanLines(r, func(n int, line []byte) error {
		e, err := decodeLine(line)
		if err != nil {
			return fmt.Errorf("%w: line %d is not an audit entry: %v", ErrBroken, n, err)
		}
		if err := verifyNext(e, uint64(len(out))+1, prev, fmt.Sprintf("line %d", n)); err != nil {
			return err
		}
		prev = e.Hash
		out = append(out, e)
		return nil
	})
	return out, err
}

// VerifyJSONL verifies an exported log and returns its number of entries and the last
// hash ("" when empty). The error is one sentence naming the first bad Seq and its line.
func VerifyJSONL(r io.Reader) (n int, last string, err error) {
	entries, err := ReadJSONL(r)
	if err != nil {
		return 0, "", err
	}
	if len(entries) > 0 {
		last = entries[len(entries)-1].Hash
	}
	return len(entries), last, nil
}

// VerifyJSONLFile is VerifyJSONL on a file; errors name it.
func VerifyJSONLFile(path string) (n int, last string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	n, last, err = VerifyJSONL(f)
	if err != nil {
		return 0, "", fmt.Errorf("%s: %w", path, err)
	}
	return n, last, nil
}

func scanLines(r io.Reader, fn func(n int, line []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), lineLimit)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%w: line %d is longer than %d bytes", ErrBroken, n+1, lineLimit)
		}
		return fmt.Errorf("line %d: %w", n+1, err)
	}
	return nil
}

func decodeLine(line []byte) (Entry, error) {
	if !utf8.Valid(line) {
		return Entry{}, errors.New("not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var w wire
	if err := dec.Decode(&w); err != nil {
		return Entry{}, fmt.Errorf("bad JSON: %w", err)
	}
	if dec.More() {
		return Entry{}, errors.New("more than one JSON value")
	}
	t, err := time.Parse(time.RFC3339Nano, w.Time)
	if err != nil {
		return Entry{}, fmt.Errorf("time %q is not RFC 3339", w.Time)
	}
	if formatTime(t) != w.Time {
		return Entry{}, fmt.Errorf("time %q is not in canonical UTC form %q", w.Time, formatTime(t))
	}
	return Entry{w.Seq, t.UTC(), w.Role, w.Action, w.Inputs, w.Outputs, w.Details, w.Prev, w.Hash}, nil
}
