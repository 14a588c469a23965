package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func openTemp(t *testing.T) *Log {
	t.Helper()
	l, err := Open(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// fill appends n entries of varied roles and actions.
func fill(t *testing.T, l *Log, n int) []Entry {
	t.Helper()
	roles := []string{RoleHost, RolePlanner, PluginRole("segmentation"), RoleUser}
	actions := []string{ActionTaskLoaded, ActionFoldsLocked, ActionLaneTrained, ActionReviewDecision}
	var out []Entry
	for i := range n {
		e, err := l.Append(Entry{
			Role:    roles[i%len(roles)],
			Action:  actions[i%len(actions)],
			Inputs:  map[string]string{"task.yaml": sum("task")},
			Outputs: map[string]string{fmt.Sprintf("out%d", i): sum(strconv.Itoa(i))},
			Details: json.RawMessage(fmt.Sprintf(`{"i": %d, "note": "entry <%d>"}`, i, i)),
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// The canonical encoding is the one the package doc describes: Python's
// json.dumps(c, sort_keys=True, separators=(",", ":"), ensure_ascii=False) of the same
// fields gives the same bytes, and hashlib.sha256 of them the hash below (computed once
// with Python 3.11 for this test).
func TestCanonicalMatchesAnIndependentEncoder(t *testing.T) {
	e := Entry{
		Seq:     2,
		Time:    time.Date(2025, 1, 2, 4, 4, 5, 500_000_000, time.FixedZone("CET", 3600)),
		Role:    "plugin:segmentation",
		Action:  "lane.trained",
		Inputs:  map[string]string{"folds.json": strings.Repeat("a", 64)},
		Outputs: map[string]string{"model/fold0.ckpt": strings.Repeat("b", 64), "model/config.json": strings.Repeat("c", 64)},
		Details: json.RawMessage(`{"nested": {"z": 1, "a": [1, "é"]}, "loss": 0.25, "lane": "unet-<3d>", "epochs": 12}`),
		Prev:    strings.Repeat("d", 64),
	}
	const want = `{"action":"lane.trained","details":{"epochs":12,"lane":"unet-<3d>","loss":0.25,"nested":{"a":[1,"é"],"z":1}},"inputs":{"folds.json":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},"outputs":{"model/config.json":"cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc","model/fold0.ckpt":"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"},"prev":"dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd","role":"plugin:segmentation","seq":2,"time":"2025-01-02T03:04:05.5Z"}`
	got, err := Canonical(e)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("canonical\n%s\nwant\n%s", got, want)
	}
	h, err := HashOf(e)
	if err != nil {
		t.Fatal(err)
	}
	if h != "9cac1b27307834dc53954af9eca074754fa0df58a9044a3bdca69e80c9c0a4ce" {
		t.Fatalf("hash %s differs from Python's", h)
	}
	// Empty and nil maps and details hash alike.
	a, _ := HashOf(Entry{Role: RoleHost, Action: "x"})
	b, _ := HashOf(Entry{Role: RoleHost, Action: "x", Inputs: map[string]string{}, Details: json.RawMessage(" {} ")})
	if a != b {
		t.Fatal("nil and empty fields hash differently")
	}
}

func TestAppendChainsAndSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "audit.db")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := l.Last(); ok || err != nil {
		t.Fatalf("empty log: last ok=%v err=%v", ok, err)
	}
	written := fill(t, l, 5)
	for i, e := range written {
		if e.Seq != uint64(i+1) || e.Time.Location() != time.UTC || !IsHash(e.Hash) {
			t.Fatalf("entry %d: %+v", i, e)
		}
		if i == 0 && e.Prev != "" || i > 0 && e.Prev != written[i-1].Hash {
			t.Fatalf("entry %d: prev %q", i, e.Prev)
		}
	}
	l.Close()

	l, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Verify(); err != nil {
		t.Fatal(err)
	}
	got, err := l.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(written) {
		t.Fatalf("%d entries after reopen, want %d", len(got), len(written))
	}
	for i := range got {
		if got[i].Hash != written[i].Hash || !got[i].Time.Equal(written[i].Time) || string(got[i].Details) != string(written[i].Details) {
			t.Fatalf("entry %d: %+v, wrote %+v", i, got[i], written[i])
		}
	}
	last, ok, err := l.Last()
	if err != nil || !ok || last.Hash != written[4].Hash {
		t.Fatalf("last %+v %v %v", last, ok, err)
	}
}

func TestAppendRejectsMalformedEntries(t *testing.T) {
	l := openTemp(t)
	for name, e := range map[string]Entry{
		"role":          {Role: "admin", Action: "x"},
		"plugin name":   {Role: "plugin:", Action: "x"},
		"action":        {Role: RoleHost, Action: "Lane Trained"},
		"hash":          {Role: RoleHost, Action: "x", Inputs: map[string]string{"a": "ABC"}},
		"upper hash":    {Role: RoleHost, Action: "x", Outputs: map[string]string{"a": strings.ToUpper(sum("a"))}},
		"empty name":    {Role: RoleHost, Action: "x", Outputs: map[string]string{"": sum("a")}},
		"details array": {Role: RoleHost, Action: "x", Details: json.RawMessage(`[1]`)},
		"details junk":  {Role: RoleHost, Action: "x", Details: json.RawMessage(`{"a":`)},
		"details big":   {Role: RoleHost, Action: "x", Details: json.RawMessage(`{"a":"` + strings.Repeat("x", MaxDetails) + `"}`)},
	} {
		if _, err := l.Append(e); err == nil {
			t.Errorf("%s: appended %+v", name, e)
		}
	}
	if n, _ := l.Entries(); len(n) != 0 {
		t.Fatalf("%d entries after rejected appends", len(n))
	}
}

func TestConcurrentAppendsFormOneChain(t *testing.T) {
	l := openTemp(t)
	// 4 writers × 10 entries: enough interleaving for the race detector, few fsyncs.
	const writers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := l.Append(Entry{Role: RoleHost, Action: "test.concurrent", Details: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))})
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Verify(); err != nil {
		t.Fatal(err)
	}
	if e, _ := l.Entries(); len(e) != writers*each {
		t.Fatalf("%d entries, want %d", len(e), writers*each)
	}
}

func exportLines(t *testing.T, l *Log) []string {
	t.Helper()
	var b bytes.Buffer
	if err := l.ExportJSONL(&b); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

func TestExportVerifies(t *testing.T) {
	l := openTemp(t)
	fill(t, l, 6)
	lines := exportLines(t, l)
	n, last, err := VerifyJSONL(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := l.Last()
	if n != 6 || last != want.Hash {
		t.Fatalf("n=%d last=%s, want 6 %s", n, last, want.Hash)
	}
	// Reformatting a line (keys reordered, spaces) changes no hash.
	var m map[string]any
	json.Unmarshal([]byte(lines[2]), &m)
	pretty, _ := json.MarshalIndent(m, "", " ")
	lines[2] = strings.ReplaceAll(string(pretty), "\n", "")
	if _, _, err := VerifyJSONL(strings.NewReader(strings.Join(lines, "\n"))); err != nil {
		t.Fatalf("reformatted line: %v", err)
	}
	// An empty log is an intact log of no entries.
	if n, last, err := VerifyJSONL(strings.NewReader("")); n != 0 || last != "" || err != nil {
		t.Fatalf("empty: %d %q %v", n, last, err)
	}
}

// edit rewrites one field of the JSON line.
func edit(t *testing.T, line, field string, v any) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	m[field] = v
	b, _ := json.Marshal(m)
	return string(b)
}

func TestTamperingIsCaughtAtTheFirstBadEntry(t *testing.T) {
	l := openTemp(t)
	fill(t, l, 5)
	orig := exportLines(t, l)
	// forged is a well-formed entry seq 3 chained to entry 2, as someone who can compute
	// hashes would insert it.
	var e2 Entry
	if es, _ := DecodeJSONL(strings.NewReader(orig[1])); len(es) == 1 {
		e2 = es[0]
	}
	forged := Entry{Seq: 3, Time: e2.Time, Role: RoleUser, Action: "review.decision", Prev: e2.Hash}
	forged.Hash, _ = HashOf(forged)
	forgedLine, _ := MarshalLine(forged)

	cases := []struct {
		name   string
		tamper func(l []string) []string
		want   string // the sentence must say this
	}{
		{"changed role", func(l []string) []string { l[2] = edit(t, l[2], "role", "user"); return l }, "entry seq 3 (line 3) was changed"},
		{"changed output hash", func(l []string) []string {
			l[1] = edit(t, l[1], "outputs", map[string]string{"out1": sum("x")})
			return l
		}, "entry seq 2 (line 2) was changed"},
		{"changed details", func(l []string) []string { l[4] = edit(t, l[4], "details", map[string]any{"i": 5}); return l }, "entry seq 5 (line 5) was changed"},
		{"changed time", func(l []string) []string { l[0] = edit(t, l[0], "time", "2000-01-01T00:00:00Z"); return l }, "entry seq 1 (line 1) was changed"},
		{"time in another zone", func(l []string) []string { l[0] = edit(t, l[0], "time", "2000-01-01T01:00:00+01:00"); return l }, "line 1 is not an audit entry"},
		{"added field", func(l []string) []string { l[3] = edit(t, l[3], "approved", true); return l }, "line 4 is not an audit entry"},
		{"removed middle", func(l []string) []string { return append(l[:2:2], l[3:]...) }, "entry seq 4 (line 3) comes where entry seq 3 should be"},
		{"removed first", func(l []string) []string { return l[1:] }, "entry seq 2 (line 1) comes where entry seq 1 should be"},
		{"swapped", func(l []string) []string { l[1], l[2] = l[2], l[1]; return l }, "entry seq 3 (line 2) comes where entry seq 2 should be"},
		{"repeated", func(l []string) []string { return append(l[:3:3], append([]string{l[1]}, l[3:]...)...) }, "entry seq 2 (line 4) is out of order or repeated"},
		{"inserted forged", func(l []string) []string { return append(l[:2:2], append([]string{string(forgedLine)}, l[2:]...)...) }, "entry seq 3 (line 4) is out of order or repeated"},
		{"replaced by forged", func(l []string) []string { l[2] = string(forgedLine); return l }, "entry seq 4 (line 4) does not chain to entry seq 3"},
		{"first with prev", func(l []string) []string {
			var e Entry
			es, _ := DecodeJSONL(strings.NewReader(l[0]))
			e = es[0]
			e.Prev = sum("before")
			e.Hash, _ = HashOf(e)
			b, _ := MarshalLine(e)
			l[0] = string(b)
			return l
		}, "entry seq 1 (line 1) is the first entry but names a previous hash"},
		{"not JSON", func(l []string) []string { l[2] = l[2][:40]; return l }, "line 3 is not an audit entry"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lines := c.tamper(append([]string(nil), orig...))
			_, _, err := VerifyJSONL(strings.NewReader(strings.Join(lines, "\n") + "\n"))
			if err == nil {
				t.Fatal("not caught")
			}
			if !errors.Is(err, ErrBroken) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q, want one line containing %q", err, c.want)
			}
		})
	}
}

// A changed value inside the bbolt file is caught by Verify, and Append refuses to chain
// onto a changed last entry.
func TestTamperedDatabaseIsCaught(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, l, 3)
	l.Close()

	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	rewrite := func(seq uint64) {
		err := db.Update(func(tx *bolt.Tx) error {
			b := tx.Bucket([]byte(DefaultBucket))
			var e Entry
			json.Unmarshal(b.Get(seqKey(seq)), &e)
			e.Role = RoleUser
			data, _ := json.Marshal(e)
			return b.Put(seqKey(seq), data)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rewrite(2)
	db.Close()
	l, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Verify(); err == nil || !strings.Contains(err.Error(), "entry seq 2 was changed") {
		t.Fatalf("verify: %v", err)
	}
	l.Close()

	db, _ = bolt.Open(path, 0o600, nil)
	rewrite(3)
	db.Close()
	l, _ = Open(path)
	defer l.Close()
	if _, err := l.Append(Entry{Role: RoleHost, Action: "x"}); err == nil || !strings.Contains(err.Error(), "entry seq 3 was changed") {
		t.Fatalf("append after a changed last entry: %v", err)
	}
}

func TestOpenReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	l, _ := Open(path)
	fill(t, l, 2)
	l.Close()
	r, err := OpenReadOnly(path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Verify(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnly(path, "other"); err == nil {
		t.Fatal("opened a missing bucket")
	}
	if _, err := OpenReadOnly(filepath.Join(filepath.Dir(path), "missing.db"), ""); err == nil {
		t.Fatal("opened a missing file")
	}
}

// The writer child: appends until killed, printing each Seq once Append returned.
func TestMain(m *testing.M) {
	if path := os.Getenv("AMID_AUDIT_WRITER"); path != "" {
		l, err := Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for i := 0; ; i++ {
			e, err := l.Append(Entry{Role: RoleHost, Action: "test.kill", Outputs: map[string]string{"n": sum(strconv.Itoa(i))},
				Details: json.RawMessage(`{"pad":"` + strings.Repeat("p", 2000) + `"}`)})
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
			fmt.Println(e.Seq)
		}
	}
	os.Exit(m.Run())
}

// SIGKILL of a writer mid-append leaves every reported entry and a valid chain.
func TestSurvivesSIGKILL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.db")
	// Three kills at different moments; each reopen continues the same chain.
	for round, after := range []int{1, 7, 23} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "AMID_AUDIT_WRITER="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		var reported uint64
		for i := 0; i < after && sc.Scan(); i++ {
			reported, _ = strconv.ParseUint(sc.Text(), 10, 64)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if reported == 0 {
			t.Fatalf("round %d: writer reported nothing: %s", round, stderr.String())
		}
		l, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Verify(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		last, _, _ := l.Last()
		l.Close()
		if last.Seq < reported {
			t.Fatalf("round %d: last seq %d, writer reported %d", round, last.Seq, reported)
		}
	}
}

// Any input: no panic; an accepted log re-exports to the same count and last hash.
func FuzzReadJSONL(f *testing.F) {
	dir := f.TempDir()
	l, err := Open(filepath.Join(dir, "audit.db"))
	if err != nil {
		f.Fatal(err)
	}
	for i := range 3 {
		l.Append(Entry{Role: RoleHost, Action: "fuzz.seed", Inputs: map[string]string{"x": sum(strconv.Itoa(i))}, Details: json.RawMessage(`{"k":[1,2.5,"s"]}`)})
	}
	var b bytes.Buffer
	l.ExportJSONL(&b)
	l.Close()
	f.Add(b.Bytes())
	f.Add([]byte(""))
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"seq":1,"time":"2025-01-01T00:00:00Z","role":"host","action":"a","prev":"","hash":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := ReadJSONL(bytes.NewReader(data))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			return
		}
		var out bytes.Buffer
		if err := WriteJSONL(&out, entries); err != nil {
			t.Fatal(err)
		}
		n, last, err := VerifyJSONL(&out)
		if err != nil || n != len(entries) || (n > 0 && last != entries[n-1].Hash) {
			t.Fatalf("re-export: n=%d last=%s err=%v", n, last, err)
		}
	})
}

// A log continued from another's export (a parent package's audit.jsonl) holds its entries
// as they were and chains its own on from the last of them; a broken parent chain, or a
// log that already has entries, stores nothing.
func TestContinue(t *testing.T) {
	parent := openTemp(t)
	fill(t, parent, 5)
	var buf bytes.Buffer
	if err := parent.ExportJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	read := func() []Entry {
		es, err := ReadJSONL(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	child := openTemp(t)
	if err := child.Continue(read()); err != nil {
		t.Fatal(err)
	}
	e, err := child.Append(Entry{Role: RoleHost, Action: ActionTaskLoaded})
	if err != nil {
		t.Fatal(err)
	}
	last, _, _ := parent.Last()
	if e.Seq != 6 || e.Prev != last.Hash {
		t.Fatalf("the first own entry is seq %d after %s, want 6 after the parent's last %s", e.Seq, e.Prev, last.Hash)
	}
	if err := child.Verify(); err != nil {
		t.Fatalf("the continued chain: %v", err)
	}
	if err := child.Continue(read()); err == nil {
		t.Fatal("a log with entries continued another")
	}
	broken := read()
	broken[2].Action = ActionExport
	fresh := openTemp(t)
	if err := fresh.Continue(broken); !errors.Is(err, ErrBroken) {
		t.Fatalf("a changed parent entry: %v, want ErrBroken", err)
	}
	if es, _ := fresh.Entries(); len(es) != 0 {
		t.Fatalf("a refused chain left %d entries", len(es))
	}
}
