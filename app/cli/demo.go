package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"amid/host/synth"
)

func demoCmd() *cobra.Command {
	var cases int
	var seed uint64
	cmd := &cobra.Command{
		Use:   "demo DIR",
		Short: "Write the demo task (generated head CTs) into DIR, ready for amid run DIR/task.yaml",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := synth.Demo(args[0], cases, seed); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "demo task written: %s (answers in %s)\n", filepath.Join(args[0], "task.yaml"), filepath.Join(args[0], "answers"))
			return nil
		},
	}
	cmd.Flags().IntVar(&cases, "cases", 16, "training cases (a quarter as many test cases are added)")
	cmd.Flags().Uint64Var(&seed, "seed", 1, "seed of the first case")
	return cmd
}
