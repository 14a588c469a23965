// Package store is the host's database: one bbolt file that only the host process opens.
// It holds the plugins and their trust, runs, lanes and an append-only event log, under a
// schema version that Open migrates forward inside one transaction.
//
// Records are JSON values. A lane's state and the event that explains it are written in the
// same transaction, so the store never shows a lane that changed without saying why.
package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterr "go.etcd.io/bbolt/errors"
)

// Errors.
var (
	ErrLocked      = errors.New("AMID is already running (store locked)")
	ErrNotFound    = errors.New("not found")
	ErrNewerSchema = errors.New("store was written by a newer AMID")
)

// Bucket names.
var (
	bucketMeta    = []byte("meta")
	bucketPlugins = []byte("plugins")
	bucketRuns    = []byte("runs")
	bucketLanes   = []byte("lanes")
	bucketEvents  = []byte("events")
	bucketCalib   = []byte("calibrations")
	keySchema     = []byte("schema")
)

// migration upgrades the store from schema version i to i+1, where i is its index.
type migration func(tx *bolt.Tx) error

// migrations in order; len(migrations) is the current schema version.
var migrations = []migration{
	// 0 → 1: the initial buckets.
	func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketPlugins, bucketRuns, bucketLanes, bucketEvents} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	},
	// 1 → 2: what plugins measured on this machine (a training step's speed).
	func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketCalib)
		return err
	},
}

// SchemaVersion is the schema version this program writes.
func SchemaVersion() int { return len(migrations) }

// DefaultTimeout is how long Open waits for another process's lock.
const DefaultTimeout = time.Second

// Store is an open store. Its methods are safe for concurrent use.
type Store struct {
	db   *bolt.DB
	path string
}

// Open opens (creating if needed) the store at path and migrates it to the current schema.
// If another process holds it, Open gives up after timeout (DefaultTimeout when zero) with
// an error wrapping ErrLocked.
func Open(path string, timeout time.Duration) (*Store, error) {
	return openSchema(path, timeout, migrations)
}

// openSchema is Open with the schema's migrations as an argument, so that a test can pass a
// schema with more of them.
func openSchema(path string, timeout time.Duration, ms []migration) (*Store, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if errors.Is(err, bolterr.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s is held by another process", ErrLocked, path)
	}
	if err != nil {
		return nil, fmt.Errorf("store %s: %w", path, err)
	}
	s := &Store{db: db, path: path}
	if err := s.migrate(ms); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// migrate brings the file to schema len(ms), running the migrations it lacks in one
// transaction.
func (s *Store) migrate(ms []migration) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		v := 0
		if b := meta.Get(keySchema); b != nil {
			if len(b) != 8 {
				return fmt.Errorf("store %s: schema version record is %d bytes, want 8", s.path, len(b))
			}
			v = int(binary.BigEndian.Uint64(b))
		}
		if v > len(ms) {
			return fmt.Errorf("%w: %s has schema %d, this program knows %d", ErrNewerSchema, s.path, v, len(ms))
		}
		for ; v < len(ms); v++ {
			if err := ms[v](tx); err != nil {
				return fmt.Errorf("store %s: migrate schema %d to %d: %w", s.path, v, v+1, err)
			}
		}
		return meta.Put(keySchema, binary.BigEndian.AppendUint64(nil, uint64(v)))
	})
}

// Close closes the store and releases its lock.
func (s *Store) Close() error { return s.db.Close() }

// Path is the store's file.
func (s *Store) Path() string { return s.path }

// Schema returns the schema version recorded in the file.
func (s *Store) Schema() (int, error) {
	var v int
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketMeta).Get(keySchema)
		if len(b) != 8 {
			return fmt.Errorf("store %s: no schema version", s.path)
		}
		v = int(binary.BigEndian.Uint64(b))
		return nil
	})
	return v, err
}

func put(b *bolt.Bucket, key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put([]byte(key), data)
}

func get(b *bolt.Bucket, key string, v any) error {
	data := b.Get([]byte(key))
	if data == nil {
		return ErrNotFound
	}
	return json.Unmarshal(data, v)
}
