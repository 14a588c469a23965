package audit_test

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"amid/host/audit"
)

// A log of two entries, exported as JSON Lines and verified; then one changed byte in the
// export breaks the chain at the entry it changed.
func Example() {
	dir, err := os.MkdirTemp("", "amid-audit-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	l, err := audit.Open(filepath.Join(dir, "audit.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()

	first, err := l.Append(audit.Entry{Role: audit.RoleHost, Action: audit.ActionTaskLoaded,
		Inputs: map[string]string{"task.yaml": strings.Repeat("a", 64)}})
	if err != nil {
		log.Fatal(err)
	}
	second, err := l.Append(audit.Entry{Role: audit.PluginRole("segmentation"), Action: audit.ActionLaneTrained,
		Outputs: map[string]string{"fold0.ckpt": strings.Repeat("b", 64)}, Details: []byte(`{"lane":"unet-2d","steps":400}`)})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(first.Seq, first.Prev == "", second.Seq, second.Prev == first.Hash)

	var jsonl bytes.Buffer
	if err := l.ExportJSONL(&jsonl); err != nil {
		log.Fatal(err)
	}
	n, last, err := audit.VerifyJSONL(bytes.NewReader(jsonl.Bytes()))
	fmt.Println(n, last == second.Hash, err)

	forged := bytes.Replace(jsonl.Bytes(), []byte(`"steps":400`), []byte(`"steps":900`), 1)
	_, _, err = audit.VerifyJSONL(bytes.NewReader(forged))
	fmt.Println(errors.Is(err, audit.ErrBroken))
	// Output:
	// 1 true 2 true
	// 2 true <nil>
	// true
}
