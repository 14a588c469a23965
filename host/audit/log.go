package audit

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterr "go.etcd.io/bbolt/errors"
)

// DefaultBucket is the bucket Open keeps the entries in.
const DefaultBucket = "audit"

// ErrLocked is wrapped by Open when another process holds the file.
var ErrLocked = errors.New("audit log is held by another process")

// Log is an open audit log. Its methods are safe for concurrent use, from any number of
// goroutines; bbolt serialises the appends.
type Log struct {
	db     *bolt.DB
	bucket []byte
	owned  bool // Close closes db
	now    func() time.Time
}

// Open opens (creating if needed) the audit log in its own bbolt file at path.
func Open(path string) (*Log, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	return openBucket(path, false, DefaultBucket)
}

// OpenReadOnly opens an existing bbolt file read-only and the log in its bucket
// (DefaultBucket when empty). It shares the file with other readers but not with a writer.
func OpenReadOnly(path, bucket string) (*Log, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return openBucket(path, true, bucket)
}

func openBucket(path string, readOnly bool, bucket string) (*Log, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: readOnly})
	if errors.Is(err, bolterr.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s", ErrLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	if bucket == "" {
		bucket = DefaultBucket
	}
	l, err := New(db, bucket)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	l.owned = true
	return l, nil
}

// New keeps the log in bucket of an open database, creating the bucket if the database is
// writable; Close leaves db open.
func New(db *bolt.DB, bucket string) (*Log, error) {
	if bucket == "" {
		return nil, errors.New("audit: empty bucket name")
	}
	l := &Log{db: db, bucket: []byte(bucket), now: time.Now}
	if db.IsReadOnly() {
		err := db.View(func(tx *bolt.Tx) error {
			if tx.Bucket(l.bucket) == nil {
				return fmt.Errorf("no bucket %q", bucket)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		return l, nil
	}
	err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(l.bucket)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bucket %q: %w", bucket, err)
	}
	return l, nil
}

// Close closes the file if Open opened it.
func (l *Log) Close() error {
	if l.owned {
		return l.db.Close()
	}
	return nil
}

// Path is the bbolt file's path.
func (l *Log) Path() string { return l.db.Path() }

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// Append adds e to the log. It fills Seq, Time (now, UTC), Prev and Hash, ignoring what e
// held there, and returns the entry as stored once it is on disk. It fails, appending
// nothing, when e is malformed (role, action, hashes, Details not a small JSON object) or
// when the last stored entry does not match its own hash.
func (l *Log) Append(e Entry) (Entry, error) {
	e.Time = l.now().UTC()
	if len(bytes.TrimSpace(e.Details)) > 0 {
		d, err := canonicalDetails(e.Details)
		if err != nil {
			return Entry{}, fmt.Errorf("audit: %s entry: %w", e.Action, err)
		}
		if string(d) == "{}" {
			d = nil
		}
		e.Details = d
	}
	if err := check(e); err != nil {
		return Entry{}, fmt.Errorf("audit: %s entry: %w", e.Action, err)
	}
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(l.bucket)
		e.Seq, e.Prev = 1, ""
		if k, v := b.Cursor().Last(); k != nil {
			last, err := decodeStored(k, v)
			if err != nil {
				return err
			}
			if h, err := HashOf(last); err != nil || h != last.Hash {
				return fmt.Errorf("%w: entry seq %d was changed: its hash does not match its contents", ErrBroken, last.Seq)
			}
			e.Seq, e.Prev = last.Seq+1, last.Hash
		}
		h, err := HashOf(e)
		if err != nil {
			return err
		}
		e.Hash = h
		data, err := marshal(e)
		if err != nil {
			return err
		}
		return b.Put(seqKey(e.Seq), data)
	})
	if err != nil {
		return Entry{}, fmt.Errorf("audit log %s: append %s: %w", l.db.Path(), e.Action, err)
	}
	return e, nil
}

func decodeStored(k, v []byte) (Entry, error) {
	var e Entry
	if len(k) != 8 {
		return e, fmt.Errorf("%w: key %x is not an 8-byte sequence number", ErrBroken, k)
	}
	if err := json.Unmarshal(v, &e); err != nil {
		return e, fmt.Errorf("%w: entry under key %d is not JSON: %v", ErrBroken, binary.BigEndian.Uint64(k), err)
	}
	if seq := binary.BigEndian.Uint64(k); seq != e.Seq {
		return e, fmt.Errorf("%w: entry seq %d is stored under key %d", ErrBroken, e.Seq, seq)
	}
	return e, nil
}

// Entries returns every entry, oldest first, without verifying the chain.
func (l *Log) Entries() ([]Entry, error) {
	var out []Entry
	err := l.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(l.bucket).ForEach(func(k, v []byte) error {
			e, err := decodeStored(k, v)
			if err != nil {
				return err
			}
			out = append(out, e)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("audit log %s: %w", l.db.Path(), err)
	}
	return out, nil
}

// Last returns the newest entry; ok is false when the log is empty.
func (l *Log) Last() (e Entry, ok bool, err error) {
	err = l.db.View(func(tx *bolt.Tx) error {
		k, v := tx.Bucket(l.bucket).Cursor().Last()
		if k == nil {
			return nil
		}
		ok = true
		e, err = decodeStored(k, v)
		return err
	})
	if err != nil {
		return Entry{}, false, fmt.Errorf("audit log %s: %w", l.db.Path(), err)
	}
	return e, ok, nil
}

// Verify checks the whole chain (see the package function Verify); the error names the
// file and the first bad Seq.
func (l *Log) Verify() error {
	entries, err := l.Entries()
	if err != nil {
		return err
	}
	if err := Verify(entries); err != nil {
		return fmt.Errorf("audit log %s: %w", l.db.Path(), err)
	}
	return nil
}

// ExportJSONL writes every entry, oldest first, one JSON object a line (see MarshalLine),
// after verifying the chain: a broken log is not exported.
func (l *Log) ExportJSONL(w io.Writer) error {
	entries, err := l.Entries()
	if err != nil {
		return err
	}
	if err := Verify(entries); err != nil {
		return fmt.Errorf("audit log %s: %w", l.db.Path(), err)
	}
	return WriteJSONL(w, entries)
}

// WriteJSONL writes entries as JSON Lines, one MarshalLine record a line.
func WriteJSONL(w io.Writer, entries []Entry) error {
	bw := bufio.NewWriter(w)
	for _, e := range entries {
		b, err := MarshalLine(e)
		if err != nil {
			return fmt.Errorf("audit: entry seq %d: %w", e.Seq, err)
		}
		bw.Write(b)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Continue starts an empty log with entries, a verified chain read from another log (a
// parent model package's audit.jsonl), stored as they are: the entries this log appends
// next chain on from the last of them, so one verification proves the whole history. It
// fails, storing nothing, when the log already holds entries or the chain is broken.
func (l *Log) Continue(entries []Entry) error {
	if err := Verify(entries); err != nil {
		return fmt.Errorf("audit log %s: continue: %w", l.db.Path(), err)
	}
	err := l.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(l.bucket)
		if k, _ := b.Cursor().Last(); k != nil {
			return errors.New("the log already holds entries; only an empty log continues another")
		}
		for _, e := range entries {
			data, err := marshal(e)
			if err != nil {
				return err
			}
			if err := b.Put(seqKey(e.Seq), data); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit log %s: continue: %w", l.db.Path(), err)
	}
	return nil
}
