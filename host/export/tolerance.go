package export

import (
	"fmt"
	"io/fs"

	"amid/host/task"
	"amid/plugins/taskspec"
)

// packageSpec is the plugin-facing task spec of the package's task.yaml.
func packageSpec(fsys fs.FS) (*taskspec.Spec, error) {
	b, err := fs.ReadFile(fsys, FileTask)
	if err != nil {
		return nil, err
	}
	t, err := task.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FileTask, err)
	}
	return t.Spec(), nil
}
