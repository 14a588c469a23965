package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"amid/host"
	"amid/host/catalog"
	"amid/host/config"
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

// openHost opens the store and the plugin catalog from the environment's settings; the
// plugins log to stderr. Close it when done.
func openHost(stderr io.Writer) (*host.Host, error) {
	return host.Open(config.FromEnv(), stderr)
}

// deviceSetting names the device setting the plugins are started with, e.g. "AMID_DEVICE=auto".
func deviceSetting() string {
	d := config.FromEnv().Device
	if d == "" {
		d = config.DeviceAuto
	}
	return config.EnvDevice + "=" + d
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
	// TrustedBy says who trusted it: "build" (a built-in plugin as this AMID was built with
	// it) or "user" (amid plugins trust); "" when it is not trusted.
	TrustedBy string `json:"trusted_by,omitempty"`
}

func pluginsListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the plugins found, with their sha256 and whether they are trusted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := openHost(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer h.Close()
			cat := h.Catalog
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
				switch {
				case e.AsBuilt():
					r.TrustedBy = "build"
				case r.Trusted:
					r.TrustedBy = "user"
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
				if r.TrustedBy == "build" {
					trusted = "yes (as built)"
				}
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
			h, err := openHost(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer h.Close()
			cat := h.Catalog
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
			h, err := openHost(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			e, err := h.Catalog.Find(args[0])
			h.Close() // the store is not needed while the plugin runs
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
			fmt.Fprintf(out, "metrics: %s\nhardware:\n", strings.Join(d.Metrics, ", "))
			for _, hw := range d.Hardware {
				fmt.Fprintf(out, "  %s\n", hw)
			}
			fmt.Fprintf(out, "computes with: %s (%s)\nsha256: %s\npath: %s\n", d.Compute, deviceSetting(), e.SHA256, e.Path)
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
	return supervisor.Describe(ctx, e, host.SupervisorOptions(stderr))
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
