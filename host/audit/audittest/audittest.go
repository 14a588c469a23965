// Package audittest reads a run's audit log in tests.
package audittest

import (
	"testing"

	"amid/host/audit"
)

// Entries returns the entries of the audit log in the bbolt file db, reporting an error
// on t when they do not verify as a chain.
func Entries(t testing.TB, db string) []audit.Entry {
	t.Helper()
	lg, err := audit.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	es, err := lg.Entries()
	if err != nil {
		t.Fatal(err)
	}
	if err := audit.Verify(es); err != nil {
		t.Errorf("audit log %s: %v", db, err)
	}
	return es
}

// Last returns the newest entry of the audit log in the bbolt file db whose action is
// action, or the zero entry when there is none; the log must verify as Entries checks.
func Last(t testing.TB, db, action string) audit.Entry {
	t.Helper()
	var last audit.Entry
	for _, e := range Entries(t, db) {
		if e.Action == action {
			last = e
		}
	}
	return last
}
