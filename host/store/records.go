package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"

	"amid/plugins/compute"
)

// Plugin is what the store knows of a plugin binary: its trust and its last description.
type Plugin struct {
	Name          string    `json:"name"`
	Path          string    `json:"path"`
	TrustedSHA256 string    `json:"trusted_sha256,omitempty"` // empty: never trusted
	TrustedAt     time.Time `json:"trusted_at,omitzero"`
	Version       string    `json:"version,omitempty"` // from Describe of the trusted binary
	Kinds         []string  `json:"kinds,omitempty"`
}

// Run is one model-development run.
type Run struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Task    string    `json:"task"`
}

// Lane states.
const (
	LanePending   = "pending"
	LaneRunning   = "running"
	LaneFinished  = "finished"
	LaneFailed    = "failed"
	LaneCancelled = "cancelled"
)

// Lane is one plugin configuration trained within a run.
type Lane struct {
	RunID            string           `json:"run_id"`
	ID               string           `json:"id"`
	Plugin           string           `json:"plugin"`
	PluginSHA256     string           `json:"plugin_sha256"`
	Config           json.RawMessage  `json:"config,omitempty"`
	State            string           `json:"state"`
	Step             int64            `json:"step"`
	LastCheckpoint   string           `json:"last_checkpoint,omitempty"` // newest reported, not verified
	Checkpoint       string           `json:"checkpoint,omitempty"`      // final, verified
	CheckpointSHA256 string           `json:"checkpoint_sha256,omitempty"`
	Compute          compute.Identity `json:"compute,omitzero"` // what trained the final checkpoint
	Attempts         int              `json:"attempts"`
	Error            string           `json:"error,omitempty"` // one sentence when failed
	Started          time.Time        `json:"started,omitzero"`
	Ended            time.Time        `json:"ended,omitzero"`
	// Validation is what the plugin measured on the validation cases at the end.
	Validation map[string]float64 `json:"validation,omitempty"`
}

// Event is one entry of the append-only event log.
type Event struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	RunID   string    `json:"run_id,omitempty"`
	LaneID  string    `json:"lane_id,omitempty"`
	Plugin  string    `json:"plugin,omitempty"`
	Kind    string    `json:"kind"`
	Message string    `json:"message"`
}

// PutPlugin writes a plugin record and, when ev is not nil, an event, in one transaction.
func (s *Store) PutPlugin(p *Plugin, ev *Event) error {
	if p.Name == "" {
		return errors.New("store: plugin without a name")
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := put(tx.Bucket(bucketPlugins), p.Name, p); err != nil {
			return err
		}
		return appendEvent(tx, ev)
	})
}

// Plugin reads a plugin record; the error wraps ErrNotFound when there is none.
func (s *Store) Plugin(name string) (*Plugin, error) {
	var p Plugin
	err := s.db.View(func(tx *bolt.Tx) error { return get(tx.Bucket(bucketPlugins), name, &p) })
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", name, err)
	}
	return &p, nil
}

// Plugins lists the plugin records by name.
func (s *Store) Plugins() ([]Plugin, error) {
	var out []Plugin
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketPlugins).ForEach(func(_, v []byte) error {
			var p Plugin
			if err := json.Unmarshal(v, &p); err != nil {
				return err
			}
			out = append(out, p)
			return nil
		})
	})
	return out, err
}

// CreateRun writes a new run; it fails if the ID exists.
func (s *Store) CreateRun(r *Run) error {
	if r.ID == "" {
		return errors.New("store: run without an ID")
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRuns)
		if b.Get([]byte(r.ID)) != nil {
			return fmt.Errorf("store: run %s exists", r.ID)
		}
		if err := put(b, r.ID, r); err != nil {
			return err
		}
		return appendEvent(tx, &Event{RunID: r.ID, Kind: "run", Message: "run " + r.ID + " created"})
	})
}

func laneKey(run, lane string) string { return run + "\x00" + lane }

// PutLane writes a lane and the event that explains its change in one transaction. The
// lane's run must exist.
func (s *Store) PutLane(l *Lane, ev *Event) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketRuns).Get([]byte(l.RunID)) == nil {
			return fmt.Errorf("lane %s: run %s: %w", l.ID, l.RunID, ErrNotFound)
		}
		if err := put(tx.Bucket(bucketLanes), laneKey(l.RunID, l.ID), l); err != nil {
			return err
		}
		if ev != nil {
			ev.RunID, ev.LaneID = l.RunID, l.ID
			if ev.Plugin == "" {
				ev.Plugin = l.Plugin
			}
		}
		return appendEvent(tx, ev)
	})
}

// Lane reads a lane.
func (s *Store) Lane(run, id string) (*Lane, error) {
	var l Lane
	err := s.db.View(func(tx *bolt.Tx) error { return get(tx.Bucket(bucketLanes), laneKey(run, id), &l) })
	if err != nil {
		return nil, fmt.Errorf("lane %s/%s: %w", run, id, err)
	}
	return &l, nil
}

// AppendEvent appends an event to the log.
func (s *Store) AppendEvent(ev *Event) error {
	return s.db.Update(func(tx *bolt.Tx) error { return appendEvent(tx, ev) })
}

func appendEvent(tx *bolt.Tx, ev *Event) error {
	if ev == nil {
		return nil
	}
	b := tx.Bucket(bucketEvents)
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	ev.Seq = seq
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	return b.Put(binary.BigEndian.AppendUint64(nil, seq), data)
}

// Events returns the log's events, oldest first, for one run and lane (empty strings match
// all).
func (s *Store) Events(run, lane string) ([]Event, error) {
	var out []Event
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketEvents).ForEach(func(_, v []byte) error {
			var e Event
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			if (run == "" || e.RunID == run) && (lane == "" || e.LaneID == lane) {
				out = append(out, e)
			}
			return nil
		})
	})
	return out, err
}

// Check verifies the store's invariants: every record decodes, every lane belongs to a run
// and is in a known state, a finished lane names a checkpoint and its sha256, a failed lane
// says why, an event of a lane refers to an existing lane, and event numbers increase.
func (s *Store) Check() error {
	return s.db.View(func(tx *bolt.Tx) error {
		runs := tx.Bucket(bucketRuns)
		lanes := tx.Bucket(bucketLanes)
		var problems []string
		err := lanes.ForEach(func(k, v []byte) error {
			var l Lane
			if err := json.Unmarshal(v, &l); err != nil {
				problems = append(problems, fmt.Sprintf("lane %q does not decode: %v", k, err))
				return nil
			}
			if runs.Get([]byte(l.RunID)) == nil {
				problems = append(problems, fmt.Sprintf("lane %s belongs to missing run %s", l.ID, l.RunID))
			}
			switch l.State {
			case LanePending, LaneRunning, LaneCancelled:
			case LaneFinished:
				if l.Checkpoint == "" || len(l.CheckpointSHA256) != 64 {
					problems = append(problems, fmt.Sprintf("finished lane %s has no verified checkpoint", l.ID))
				}
			case LaneFailed:
				if l.Error == "" {
					problems = append(problems, fmt.Sprintf("failed lane %s does not say why", l.ID))
				}
			default:
				problems = append(problems, fmt.Sprintf("lane %s is in unknown state %q", l.ID, l.State))
			}
			return nil
		})
		if err != nil {
			return err
		}
		var last uint64
		err = tx.Bucket(bucketEvents).ForEach(func(k, v []byte) error {
			var e Event
			if err := json.Unmarshal(v, &e); err != nil {
				problems = append(problems, fmt.Sprintf("event %x does not decode: %v", k, err))
				return nil
			}
			if e.Seq <= last || binary.BigEndian.Uint64(k) != e.Seq {
				problems = append(problems, fmt.Sprintf("event %d is out of order", e.Seq))
			}
			last = e.Seq
			if e.LaneID != "" && lanes.Get([]byte(laneKey(e.RunID, e.LaneID))) == nil {
				problems = append(problems, fmt.Sprintf("event %d refers to missing lane %s/%s", e.Seq, e.RunID, e.LaneID))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(problems) > 0 {
			sort.Strings(problems)
			return fmt.Errorf("store %s is inconsistent: %v", s.path, problems)
		}
		return nil
	})
}

// PutCalibration keeps what a plugin measured on this machine under key (the plugin's
// sha256 and the compute identity it measured with), for later runs to reuse.
func (s *Store) PutCalibration(key string, b []byte) error {
	if key == "" {
		return errors.New("store: calibration without a key")
	}
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketCalib).Put([]byte(key), b) })
}

// Calibration reads what PutCalibration kept under key; the error wraps ErrNotFound when
// there is nothing.
func (s *Store) Calibration(key string) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketCalib).Get([]byte(key))
		if v == nil {
			return ErrNotFound
		}
		out = append([]byte(nil), v...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("calibration %s: %w", key, err)
	}
	return out, nil
}
