package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"amid/host/audit"
	"amid/host/export"
)

func auditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check and show a hash-chained audit log",
		Long: `An audit log records every step of a run (task loaded, folds locked, lanes trained,
review decisions, export) as a chain of entries, each holding the hash of the one before.
PATH is an exported log (.jsonl), a bbolt file holding the log, or a model package folder
(its audit.jsonl).`,
	}
	cmd.AddCommand(auditVerifyCmd(), auditShowCmd())
	return cmd
}

func auditVerifyCmd() *cobra.Command {
	var bucket string
	cmd := &cobra.Command{
		Use:   "verify PATH",
		Short: "Check that no entry of an audit log was changed, removed, inserted or reordered",
		Long: `Checks the chain of an audit log and prints its entry count and last hash, or names
the first bad entry in one line and exits with status 1. Entries cut off the end leave a
valid shorter chain: compare the last hash with the one recorded elsewhere (a package's
manifest.json; amid verify does).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			entries, broken, err := readAudit(args[0], bucket)
			if err != nil {
				return err
			}
			if broken != nil {
				return fmt.Errorf("%s: %w", args[0], broken)
			}
			last := ""
			if len(entries) > 0 {
				last = entries[len(entries)-1].Hash
			}
			fmt.Fprintf(cmd.OutOrStdout(), "audit log intact: %d entries, last hash %s\n", len(entries), orNone(last))
			return nil
		},
	}
	cmd.Flags().StringVar(&bucket, "bucket", audit.DefaultBucket, "bucket of a bbolt file that holds the log")
	return cmd
}

func auditShowCmd() *cobra.Command {
	var bucket string
	cmd := &cobra.Command{
		Use:   "show PATH",
		Short: "Print an audit log's entries as a table, then whether its chain is intact",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			entries, broken, err := readAudit(args[0], bucket)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			printEntries(out, entries)
			if broken != nil {
				return fmt.Errorf("%s: %w", args[0], broken)
			}
			last := ""
			if len(entries) > 0 {
				last = entries[len(entries)-1].Hash
			}
			fmt.Fprintf(out, "audit log intact: %d entries, last hash %s\n", len(entries), orNone(last))
			return nil
		},
	}
	cmd.Flags().StringVar(&bucket, "bucket", audit.DefaultBucket, "bucket of a bbolt file that holds the log")
	return cmd
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// isBbolt says whether a file's first 20 bytes hold bbolt's magic number 0xED0CDAED at
// offset 16 (the first meta page: a 16-byte page header, then the magic as a native
// uint32).
func isBbolt(head []byte) bool {
	if len(head) < 20 {
		return false
	}
	m := head[16:20]
	return bytes.Equal(m, []byte{0xed, 0xda, 0x0c, 0xed}) || bytes.Equal(m, []byte{0xed, 0x0c, 0xda, 0xed})
}

// readAudit reads the audit log at path: a JSON Lines export, a bbolt file or a package
// folder. err says the log cannot be read at all; broken, that its chain is not intact
// (entries then holds what could be read).
func readAudit(path, bucket string) (entries []audit.Entry, broken, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if st.IsDir() {
		p := filepath.Join(path, export.FileAudit)
		if _, err := os.Stat(p); err != nil {
			return nil, nil, fmt.Errorf("%s holds no %s: it is not a model package", path, export.FileAudit)
		}
		path = p
	}
	head := make([]byte, 20)
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	n, _ := io.ReadFull(f, head)
	f.Close()
	if isBbolt(head[:n]) {
		l, err := audit.OpenReadOnly(path, bucket)
		if err != nil {
			return nil, nil, err
		}
		defer l.Close()
		entries, err := l.Entries()
		if err != nil {
			return nil, err, nil
		}
		return entries, audit.Verify(entries), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	entries, broken = audit.ReadJSONL(bytes.NewReader(data))
	if broken != nil {
		// Show what can be read: every entry, chained or not, up to a line that is none.
		entries, _ = audit.DecodeJSONL(bytes.NewReader(data))
	}
	return entries, broken, nil
}

// printEntries prints entries as a table: seq, time, role, action, inputs and outputs (by
// name), details and the hash's first 12 digits.
func printEntries(w io.Writer, entries []audit.Entry) {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tTIME\tROLE\tACTION\tINPUTS\tOUTPUTS\tDETAILS\tHASH")
	for _, e := range entries {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Seq, e.Time.UTC().Format("2006-01-02 15:04:05.000"),
			e.Role, e.Action, names(e.Inputs), names(e.Outputs), clip(string(e.Details), 60), clip(e.Hash, 12))
	}
	tw.Flush()
}

// names lists a map's keys, sorted, within 48 characters.
func names(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := strings.Join(keys, ",")
	if len(keys) > 1 && len(s) > 48 {
		return fmt.Sprintf("%d files", len(keys))
	}
	return clip(s, 48)
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
