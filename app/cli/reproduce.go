package cli

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"amid/host"
	hostrun "amid/host/run"
	"amid/plugins/compute"
)

func reproduceCmd() *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "reproduce PACKAGE OUT",
		Short: "Re-run a model package's prediction into OUT/predictions with its own plugin and weights",
		Long: `reproduce starts the plugin binary bundled in PACKAGE (checked against the sha256 its manifest
records), reads the test cases from the data folder the package names (or --data), checks
their bytes against the recorded sha256s, and writes predictions into OUT/predictions.
amid verify compares them byte for byte with the package's predictions.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := hostrun.Reproduce(cmd.Context(), args[0], args[1], data, host.SupervisorOptions(cmd.ErrOrStderr()))
			if err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "predictions written to %s, computed with %s\n", filepath.Join(args[1], "predictions"), id)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "the data folder (default: the one the package records)")
	return cmd
}

// reproduceHook re-runs a package for amid verify.
func reproduceHook(ctx context.Context, pkg, out string) (compute.Identity, error) {
	return hostrun.Reproduce(ctx, pkg, out, "", host.SupervisorOptions(nil))
}
