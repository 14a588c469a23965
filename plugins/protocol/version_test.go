package protocol

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"amid/assets/ci"
	"amid/plugins/protocol/internal/pb"
)

// TestVersionMatchesProto fails when Version drifts from the .proto: its package name
// (amid.plugin.v<N>) and its "protocol_version = N" comment.
func TestVersionMatchesProto(t *testing.T) {
	want := fmt.Sprintf("amid.plugin.v%d", Version)
	if got := string(pb.File_plugin_proto.Package()); got != want {
		t.Errorf("generated package is %q, Version says %q", got, want)
	}
	src, err := os.ReadFile(filepath.Join("internal", "pb", "plugin.proto"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^// protocol_version = (\d+)$`).FindSubmatch(src)
	if m == nil {
		t.Fatal("plugin.proto lacks its \"// protocol_version = N\" line")
	}
	if n, _ := strconv.Atoi(string(m[1])); n != Version {
		t.Errorf("plugin.proto says protocol_version = %d, Version is %d", n, Version)
	}
	if !bytes.Contains(src, []byte("package "+want+";")) {
		t.Errorf("plugin.proto does not declare package %s", want)
	}
	if Handshake.ProtocolVersion != Version {
		t.Errorf("handshake protocol version %d, Version %d", Handshake.ProtocolVersion, Version)
	}
}

// TestGeneratedCurrent regenerates the wire code into a temporary folder and compares it
// with the committed files.
func TestGeneratedCurrent(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		ci.Missing(t, "protoc is not installed (Debian: protobuf-compiler)")
	}
	out := t.TempDir()
	cmd := exec.Command("./generate.sh", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate.sh: %v\n%s", err, b)
	}
	for _, name := range []string{"plugin.pb.go", "plugin_grpc.pb.go"} {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		have, err := os.ReadFile(filepath.Join("internal", "pb", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, have) {
			t.Errorf("internal/pb/%s is stale: run go generate ./plugins/protocol", name)
		}
	}
}
