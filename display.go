package main

import (
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// x11Sockets is where X servers put their local sockets.
const x11Sockets = "/tmp/.X11-unix"

// checkDisplay reports, in one sentence, why no window can be opened on the X display
// named by display (the DISPLAY variable), or nil when an X server answers there. Fyne's
// GLFW driver panics with a stack trace when it cannot open the display; this check runs
// first so the user reads the cause instead. Only platforms whose Fyne driver uses X11 are
// checked; a DISPLAY this function cannot parse is left to the driver.
func checkDisplay(display, sockets string) error {
	switch runtime.GOOS {
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
	default:
		return nil
	}
	if display == "" {
		return fmt.Errorf("no display: DISPLAY is not set (run amid-desktop in a desktop session, or under xvfb-run)")
	}
	host, num, ok := parseDisplay(display)
	if !ok {
		return nil
	}
	var addrs [][2]string // network, address
	if host == "" || host == "unix" {
		p := filepath.Join(sockets, "X"+strconv.Itoa(num))
		addrs = append(addrs, [2]string{"unix", p}, [2]string{"unix", "@" + p})
	} else {
		addrs = append(addrs, [2]string{"tcp", net.JoinHostPort(host, strconv.Itoa(6000+num))})
	}
	var last error
	for _, a := range addrs {
		c, err := net.DialTimeout(a[0], a[1], 2*time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		last = err
	}
	return fmt.Errorf("cannot open the display %q: no X server answers at %s (%w)", display, addrs[0][1], last)
}

// parseDisplay splits an X display name, [host]:number[.screen], into its host and number.
func parseDisplay(d string) (host string, num int, ok bool) {
	i := strings.LastIndexByte(d, ':')
	if i < 0 || strings.Contains(d[:i], "/") {
		return "", 0, false // none, or a launchd-style socket path
	}
	host, n := d[:i], d[i+1:]
	if j := strings.IndexByte(n, '.'); j >= 0 {
		n = n[:j]
	}
	num, err := strconv.Atoi(n)
	if err != nil || num < 0 || num > 59535 {
		return "", 0, false
	}
	return host, num, true
}
