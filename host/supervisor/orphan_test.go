package supervisor

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"amid/assets/fileio"
	"amid/host/catalog"
	"amid/host/store"
)

const childEnv = "AMID_SUPERVISOR_CHILD"

// childHost is a host process for the orphan tests: it starts the plugin named by
// AMID_SUPERVISOR_CHILD (path), prints "pid N", waits for a line on stdin and then ends
// the way AMID_CHILD_END says:
// "close" kills its plugins and exits, "exit" exits without cleaning up, "wait" waits to
// be killed.
func childHost() {
	path := os.Getenv(childEnv)
	sum, err := fileio.SHA256(path)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	e := &catalog.Entry{Name: "echo", Path: path, SHA256: sum, State: catalog.Trusted, Record: &store.Plugin{TrustedSHA256: sum}}
	p, err := Start(context.Background(), e, Options{})
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	fmt.Printf("pid %d\n", p.Pid())
	bufio.NewReader(os.Stdin).ReadString('\n')
	switch os.Getenv("AMID_CHILD_END") {
	case "close":
		p.Kill()
		os.Exit(0)
	case "exit":
		os.Exit(0)
	default:
		select {}
	}
}

// TestNoOrphans ends a host in three ways and checks that its plugin ends with it.
func TestNoOrphans(t *testing.T) {
	for _, end := range []string{"close", "exit", "sigkill"} {
		t.Run(end, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+echoBin, "AMID_CHILD_END="+end)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "pid ") {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("child host said %q (%v)", line, err)
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
			if !alive(pid) {
				t.Fatalf("plugin %d is not running", pid)
			}
			if end == "sigkill" {
				cmd.Process.Signal(syscall.SIGKILL)
			} else {
				fmt.Fprintln(in, "end")
			}
			cmd.Wait()
			if !gone(pid, 5*time.Second) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("plugin %d outlived its host (%s)", pid, end)
			}
		})
	}
}
