package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"amid/host/catalog"
	"amid/host/config"
	"amid/host/store"
	"amid/host/supervisor"
	"amid/plugins/compute"
	"amid/plugins/protocol"
)

func pluginsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "List, trust and describe task plugins",
		Long: `Task plugins are executables named amid-plugin-NAME in the built-in folder (plugins next
to the amid binary) or in the user's plugin folder ($` + config.EnvPluginDir + `, default plugins in the
data folder $` + config.EnvHome + `). A new or changed binary is refused until it is trusted.`,
	}
	cmd.AddCommand(pluginsListCmd(), pluginsTrustCmd(), pluginsDescribeCmd())
	return cmd
}

// openCatalog opens the store and the plugin catalog; close the store when done.
func openCatalog() (*catalog.Catalog, error) {
	path, err := config.StorePath()
	if err != nil {
		return nil, err
	}
	st, err := store.Open(path, store.DefaultTimeout)
	if err != nil {
		return nil, err
	}
	b, err := config.BuiltinPluginDir()
	if err != nil {
		st.Close()
		return nil, err
	}
	u, err := config.PluginDir()
	if err != nil {
		st.Close()
		return nil, err
	}
	return &catalog.Catalog{Builtin: b, User: u, Store: st}, nil
}

func pluginOptions(stderr io.Writer) supervisor.Options {
	return supervisor.Options{Logger: hclog.New(&hclog.LoggerOptions{Name: "amid", Level: hclog.Error, Output: stderr})}
}

// pluginRow is one line of `amid plugins list`.
type pluginRow struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Kinds   []string `json:"kinds"`
	SHA256  string   `json:"sha256"`
	Trusted bool     `json:"trusted"`
	State   string   `json:"state"`
	Problem string   `json:"problem,omitempty"`
	Path    string   `json:"path"`
	Builtin bool     `json:"builtin"`
}

func pluginsListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the plugins found, with their sha256 and whether they are trusted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cat, err := openCatalog()
			if err != nil {
				return err
			}
			defer cat.Store.Close()
			es, err := cat.Scan()
			if err != nil {
				return err
			}
			rows := make([]pluginRow, 0, len(es))
			for _, e := range es {
				r := pluginRow{Name: e.Name, SHA256: e.SHA256, Trusted: e.State == catalog.Trusted, State: string(e.State), Problem: e.Problem, Path: e.Path, Builtin: e.Builtin, Kinds: []string{}}
				if e.Record != nil && e.Record.TrustedSHA256 == e.SHA256 {
					r.Version, r.Kinds = e.Record.Version, append(r.Kinds, e.Record.Kinds...)
				}
				rows = append(rows, r)
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			if len(rows) == 0 {
				fmt.Fprintf(out, "no plugins in %s or %s\n", cat.Builtin, cat.User)
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tKINDS\tSHA256\tTRUSTED\tPATH")
			for _, r := range rows {
				trusted := "yes"
				if !r.Trusted {
					trusted = "no (" + r.State + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, orDash(r.Version), orDash(strings.Join(r.Kinds, ",")), shortSum(r.SHA256), trusted, r.Path)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	return cmd
}

func pluginsTrustCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "trust NAME",
		Short: "Trust a plugin binary as it is now (its sha256), after checking that it describes itself",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := openCatalog()
			if err != nil {
				return err
			}
			defer cat.Store.Close()
			e, err := cat.Find(args[0])
			if err != nil {
				return err
			}
			d, err := cat.TrustDescribed(e, func(e *catalog.Entry) (*protocol.DescribeResponse, error) {
				return describe(cmd.Context(), e, cmd.ErrOrStderr())
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "trusted %s %s (%s), sha256 %s\n", d.Name, d.Version, e.Path, e.SHA256)
			return nil
		},
	}
}

// describeOut is `amid plugins describe --json`.
type describeOut struct {
	Name            string              `json:"name"`
	Version         string              `json:"version"`
	ProtocolVersion int                 `json:"protocol_version"`
	Tasks           []protocol.TaskKind `json:"tasks"`
	Metrics         []string            `json:"metrics"`
	ConfigSchema    json.RawMessage     `json:"config_schema"`
	Hardware        []string            `json:"hardware"`
	Compute         compute.Identity    `json:"compute,omitzero"`
	SHA256          string              `json:"sha256"`
	Path            string              `json:"path"`
}

func pluginsDescribeCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Start a trusted plugin and print what it says it can do",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := openCatalog()
			if err != nil {
				return err
			}
			e, err := cat.Find(args[0])
			cat.Store.Close() // the store is not needed while the plugin runs
			if err != nil {
				return err
			}
			d, err := describe(cmd.Context(), e, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(describeOut{
					Name: d.Name, Version: d.Version, ProtocolVersion: d.ProtocolVersion, Tasks: d.Tasks,
					Metrics: d.Metrics, ConfigSchema: d.ConfigSchema, Hardware: d.Hardware, Compute: d.Compute, SHA256: e.SHA256, Path: e.Path,
				})
			}
			fmt.Fprintf(out, "%s %s (protocol %d)\n", d.Name, d.Version, d.ProtocolVersion)
			for _, t := range d.Tasks {
				fmt.Fprintf(out, "task: %s %v\n", t.Kind, t.Dims)
			}
			fmt.Fprintf(out, "metrics: %s\nhardware: %s\ncomputes with: %s\nsha256: %s\npath: %s\n", strings.Join(d.Metrics, ", "), strings.Join(d.Hardware, ", "), d.Compute, e.SHA256, e.Path)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the description as JSON")
	return cmd
}

// describe starts a trusted plugin, asks it to describe itself and stops it.
func describe(ctx context.Context, e *catalog.Entry, stderr io.Writer) (*protocol.DescribeResponse, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p, err := supervisor.Start(ctx, e, pluginOptions(stderr))
	if err != nil {
		return nil, err
	}
	defer p.Kill()
	return p.Describe(ctx)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shortSum(s string) string {
	if len(s) > 16 {
		return s[:16]
	}
	return s
}
