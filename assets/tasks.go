package assets

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Tasks holds the built-in task definitions (amid/host/task YAML): tasks/rexmle/<id>.yaml
// for each of the 20 ReX-MLE challenges, laid out for the prepared/public folder that
// ReX-MLE's prepare.py writes.
//
//go:embed tasks/rexmle/*.yaml
var Tasks embed.FS

// RexMLETasksDir is the folder of Tasks holding the ReX-MLE task definitions, and the same
// folder relative to the module root for programs run from a checkout.
const RexMLETasksDir = "tasks/rexmle"

// RexMLETask returns the task definition of ReX-MLE challenge id.
func RexMLETask(id string) ([]byte, error) {
	if !fs.ValidPath(id) || strings.Contains(id, "/") {
		return nil, fmt.Errorf("assets: no built-in task %q", id)
	}
	b, err := Tasks.ReadFile(path.Join(RexMLETasksDir, id+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("assets: no built-in task %q", id)
	}
	return b, nil
}

// RexMLETaskIDs lists the ids of the built-in ReX-MLE task definitions, sorted.
func RexMLETaskIDs() []string {
	ents, _ := fs.ReadDir(Tasks, RexMLETasksDir)
	var ids []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			ids = append(ids, n)
		}
	}
	sort.Strings(ids)
	return ids
}
