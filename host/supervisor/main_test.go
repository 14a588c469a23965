package supervisor

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"amid/host/catalog"
	"amid/host/store"
	"amid/plugins/plugintest"
)

// Binaries built once by TestMain: the example plugin from its own module, and the faulty
// plugin from this one.
var echoBin, faultyBin string

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		childHost()
		return
	}
	plugintest.MainWith(m, func(dir string) (err error) {
		if echoBin, err = plugintest.BuildPlugin("../../plugins/examples/echo", "echo", dir); err != nil {
			return err
		}
		faultyBin, err = plugintest.BuildPlugin("../../plugins/internal/faulty", "faulty", dir)
		return err
	})
}

// env is one test's host: a store, a user plugin folder and a catalog.
type env struct {
	t     *testing.T
	store *store.Store
	cat   *catalog.Catalog
	dir   string
	log   *syncBuffer
	opts  Options
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newEnv(t *testing.T) *env {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "amid.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	e := &env{t: t, store: st, dir: dir, log: &syncBuffer{}}
	e.cat = &catalog.Catalog{User: dir, Store: st}
	e.opts = Options{
		Logger:  hclog.New(&hclog.LoggerOptions{Name: "amid", Level: hclog.Debug, Output: io.MultiWriter(e.log)}),
		Backoff: 10 * time.Millisecond,
	}
	t.Cleanup(func() {
		if err := st.Check(); err != nil {
			t.Errorf("store after the test: %v", err)
		}
		st.Close()
		if t.Failed() {
			t.Logf("host log:\n%s", e.log.String())
		}
	})
	if err := st.CreateRun(&store.Run{ID: "run1", Task: "test"}); err != nil {
		t.Fatal(err)
	}
	return e
}

// install copies a plugin binary into the user folder as amid-plugin-name.
func (e *env) install(src, name string, mode os.FileMode) string {
	e.t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		e.t.Fatal(err)
	}
	dst := filepath.Join(e.dir, catalog.Prefix+name)
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		e.t.Fatal(err)
	}
	return dst
}

// trusted installs and trusts a plugin and returns its entry.
func (e *env) trusted(src, name string) *catalog.Entry {
	e.t.Helper()
	e.install(src, name, 0o755)
	en, err := e.cat.Find(name)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.cat.Trust(en); err != nil {
		e.t.Fatal(err)
	}
	return en
}

// alive reports whether pid is a live (not zombie) process.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the ")" that closes the command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

// gone waits up to d for pid to end.
func gone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for alive(pid) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}
