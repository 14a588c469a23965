package main

import (
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestParseDisplay(t *testing.T) {
	for _, c := range []struct {
		in   string
		host string
		num  int
		ok   bool
	}{
		{":0", "", 0, true},
		{":97.0", "", 97, true},
		{"unix:3", "unix", 3, true},
		{"localhost:10.0", "localhost", 10, true},
		{"/private/tmp/com.apple.launchd.x/org.xquartz:0", "", 0, false},
		{"nonsense", "", 0, false},
		{":x", "", 0, false},
	} {
		h, n, ok := parseDisplay(c.in)
		if h != c.host || n != c.num || ok != c.ok {
			t.Errorf("parseDisplay(%q) = %q, %d, %v; want %q, %d, %v", c.in, h, n, ok, c.host, c.num, c.ok)
		}
	}
}

// TestCheckDisplay checks the display against real sockets: a unix socket in a folder of
// its own standing for /tmp/.X11-unix, and a TCP listener whose port names the display.
func TestCheckDisplay(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the display is checked on X11 platforms; the test's sockets are Linux's")
	}
	dir := t.TempDir()
	if err := checkDisplay("", dir); err == nil || !strings.Contains(err.Error(), "DISPLAY is not set") {
		t.Errorf("no DISPLAY: got %v", err)
	}
	err := checkDisplay(":42", dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "X42")) {
		t.Errorf("no server on :42: got %v, want an error naming its socket", err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "X42"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := checkDisplay(":42.0", dir); err != nil {
		t.Errorf("a server on :42: %v", err)
	}

	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tl.Close()
	port := tl.Addr().(*net.TCPAddr).Port
	if port < 6000 { // X's TCP ports start at 6000 (display 0)
		t.Skipf("ephemeral port %d is below X's range", port)
	}
	if err := checkDisplay("127.0.0.1:"+strconv.Itoa(port-6000), dir); err != nil {
		t.Errorf("a TCP server on port %d: %v", port, err)
	}
}
