package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "amid.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenMigratesAndReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "amid.db")
	s, err := Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := s.Schema(); err != nil || v != SchemaVersion() {
		t.Fatalf("Schema = %d, %v; want %d", v, err, SchemaVersion())
	}
	if err := s.PutPlugin(&Plugin{Name: "echo", TrustedSHA256: "ab"}, nil); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p, err := s.Plugin("echo")
	if err != nil || p.TrustedSHA256 != "ab" {
		t.Fatalf("after reopen: %+v, %v", p, err)
	}
	if _, err := s.Plugin("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing plugin: err = %v", err)
	}
}

func TestSecondOpenerIsLocked(t *testing.T) {
	s := open(t)
	// bbolt's flock is per open file, so a second Open in this process contends like
	// another process would.
	_, err := Open(s.Path(), 100*time.Millisecond)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: err = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "AMID is already running (store locked)") {
		t.Errorf("message %q", err)
	}
}

// TestSecondProcessIsLocked opens the store in a child process (this test binary) while
// this process holds it.
func TestSecondProcessIsLocked(t *testing.T) {
	if p := os.Getenv("AMID_STORE_CHILD"); p != "" {
		_, err := Open(p, 100*time.Millisecond)
		fmt.Println(err)
		os.Exit(0)
	}
	s := open(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondProcessIsLocked$")
	cmd.Env = append(os.Environ(), "AMID_STORE_CHILD="+s.Path())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "AMID is already running (store locked)") {
		t.Errorf("child said %q", out)
	}
}

func setSchema(t *testing.T, path string, v uint64) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keySchema, binary.BigEndian.AppendUint64(nil, v))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	s := open(t)
	s.Close()
	setSchema(t, s.Path(), uint64(SchemaVersion()+1))
	if _, err := Open(s.Path(), 0); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("err = %v, want ErrNewerSchema", err)
	}
}

func TestMigrationsRunInOrderAndRollBack(t *testing.T) {
	s := open(t)
	s.Close()
	saved := migrations

	var ran []int
	failing := append(append([]migration{}, saved...),
		func(tx *bolt.Tx) error { ran = append(ran, 1); _, err := tx.CreateBucket([]byte("x")); return err },
		func(tx *bolt.Tx) error { ran = append(ran, 2); return errors.New("disk says no") },
	)
	if _, err := openSchema(s.Path(), 0, failing); err == nil || !strings.Contains(err.Error(), "disk says no") {
		t.Fatalf("failing migration: err = %v", err)
	}
	// The failed transaction left the file at the old version without bucket x.
	s2, err := Open(s.Path(), 0)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := s2.Schema()
	var hasX bool
	s2.db.View(func(tx *bolt.Tx) error { hasX = tx.Bucket([]byte("x")) != nil; return nil })
	s2.Close()
	if v != len(saved) || hasX {
		t.Errorf("after a failed migration: schema %d, bucket x %v; want %d, false", v, hasX, len(saved))
	}
	if fmt.Sprint(ran) != "[1 2]" {
		t.Errorf("migrations ran %v, want [1 2]", ran)
	}

	ran = nil
	one := append(append([]migration{}, saved...),
		func(tx *bolt.Tx) error { ran = append(ran, 1); return nil })
	s3, err := openSchema(s.Path(), 0, one)
	if err != nil {
		t.Fatal(err)
	}
	v, _ = s3.Schema()
	s3.Close()
	if v != len(saved)+1 || fmt.Sprint(ran) != "[1]" {
		t.Errorf("schema %d after migration (ran %v), want %d", v, ran, len(saved)+1)
	}
}

func TestLanesAndEvents(t *testing.T) {
	s := open(t)
	l := &Lane{RunID: "r1", ID: "l1", Plugin: "echo", State: LaneRunning}
	if err := s.PutLane(l, &Event{Kind: "lane", Message: "started"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("lane without run: err = %v", err)
	}
	if err := s.CreateRun(&Run{ID: "r1", Task: "demo"}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRun(&Run{ID: "r1"}); err == nil {
		t.Error("duplicate run accepted")
	}
	if err := s.PutLane(l, &Event{Kind: "lane", Message: "started"}); err != nil {
		t.Fatal(err)
	}
	l.State, l.Error = LaneFailed, "plugin echo exited."
	if err := s.PutLane(l, &Event{Kind: "lane", Message: l.Error}); err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events("r1", "l1")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[1].Message != "plugin echo exited." || evs[1].Plugin != "echo" || evs[0].Seq >= evs[1].Seq {
		t.Errorf("events = %+v", evs)
	}
	if all, _ := s.Events("", ""); len(all) != 3 {
		t.Errorf("%d events in all, want 3 (run created, two lane events)", len(all))
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
	got, err := s.Lane("r1", "l1")
	if err != nil || got.State != LaneFailed {
		t.Errorf("Lane = %+v, %v", got, err)
	}
}

func TestCheckFindsInconsistency(t *testing.T) {
	s := open(t)
	if err := s.CreateRun(&Run{ID: "r"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutLane(&Lane{RunID: "r", ID: "a", State: LaneFinished}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutLane(&Lane{RunID: "r", ID: "b", State: LaneFailed}, nil); err != nil {
		t.Fatal(err)
	}
	err := s.Check()
	if err == nil || !strings.Contains(err.Error(), "finished lane a has no verified checkpoint") || !strings.Contains(err.Error(), "failed lane b does not say why") {
		t.Errorf("Check = %v", err)
	}
}

// TestCalibration keeps a plugin's measurement across a reopen; an unknown key is
// ErrNotFound.
func TestCalibration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "amid.db")
	s, err := Open(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutCalibration("seg|cpu", []byte(`{"2d":1.5}`)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(path, 0); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if b, err := s.Calibration("seg|cpu"); err != nil || string(b) != `{"2d":1.5}` {
		t.Errorf("after reopen: %s, %v", b, err)
	}
	if _, err := s.Calibration("other"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown key: %v", err)
	}
}
