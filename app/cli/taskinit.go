package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"amid/host/taskinit"
)

// taskCmd is the task command group: amid task init.
func taskCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "task",
		Short: "Write a task definition",
	}
	c.AddCommand(taskInitCmd())
	return c
}

func taskInitCmd() *cobra.Command {
	var o taskinit.Options
	var out string
	var force bool
	c := &cobra.Command{
		Use:   "init DATA_DIR [--out task.yaml]",
		Short: "Guess a task.yaml from a dataset's layout and say what was guessed, from which files",
		Long: `init looks at a data folder, recognises the layout AMID reads (image and label pairs
such as nnU-Net's imagesTr/labelsTr or {id}_img/{id}_seg, DICOM series with SEG or RTSTRUCT
labels, a COCO JSON, AMID's annotation JSON, a class table, one folder a class, YOLO or
Pascal VOC boxes), writes a task definition that reads back and finds its cases there, and
prints what it guessed. Where the folder does not tell (two layouts fit, a column that could
be classes or a score, no test split), it says what is ambiguous and exits 2; --kind,
--layout, --label-column, --test or --uncertain settles it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if out == "" {
				out = filepath.Join(dir, "task.yaml")
			}
			if _, err := os.Stat(out); err == nil && !force {
				return fmt.Errorf("task init: %s exists; name another file with --out, or --force to replace it", out)
			}
			r, err := taskinit.Guess(dir, o)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "amid: task init: %v\n", err)
				if errors.Is(err, taskinit.ErrAmbiguous) {
					return exitError{2}
				}
				return exitError{1}
			}
			if err := os.WriteFile(out, r.YAML, 0o644); err != nil {
				return fmt.Errorf("task init: writing %s: %w", out, err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s: %s\n", dir, r.What)
			for _, n := range r.Notes {
				fmt.Fprintf(w, "  %s\n", n)
			}
			fmt.Fprintf(w, "wrote %s (%s, %dD, metric %s): %d training and %d test cases; check it before a run\n",
				out, r.Task.Kind, r.Task.Dims, r.Task.Metric.Name, r.Train, r.Test)
			return nil
		},
	}
	f := c.Flags()
	f.StringVarP(&out, "out", "o", "", "the task file to write (default DATA_DIR/task.yaml)")
	f.BoolVar(&force, "force", false, "replace the task file if it exists")
	f.StringVar(&o.Kind, "kind", "", "keep the layouts of this kind; a CSV's integer column: classification (class indices) or iqa (a score)")
	f.StringVar(&o.Layout, "layout", "", "keep one layout: "+strings.Join(taskinit.Layouts, ", "))
	f.StringSliceVar(&o.LabelColumns, "label-column", nil, "a class table's label column (repeat, or comma-separate, for several)")
	f.StringVar(&o.Test, "test", "", "the folder of the test images, relative to DATA_DIR")
	f.StringVar(&o.ID, "id", "", "the task id (default: from the folder's name)")
	f.StringVar(&o.Uncertain, "uncertain", "", "what a multi-label table's −1 cells mean: ignore, positive or negative")
	return c
}
