// Package ui holds AMID's desktop screens, built with Fyne. It never imports the Fyne
// driver (fyne.io/fyne/v2/app): main.go creates the app and hands it here, so every screen
// is testable headless with fyne.io/fyne/v2/test.
//
// The screens: Home (recent runs), New task (a task file, a built-in ReX-MLE task or a
// prepared ReX-MLE folder; kind, budget, planner, LLM endpoint), Monitor (the run's lanes,
// loss plot, log, ETA; pause, resume, cancel), Results (lanes, per-fold scores, why the
// chosen one won), Review (the test cases' predictions over their images; approve, reject,
// comment), Export (the package, refused until review is complete unless a reason is
// recorded), Plugins (list, trust, details), Settings and a standalone Viewer.
//
// Host work runs in goroutines; widgets change only on the UI goroutine, through App.do
// (fyne.Do). The theme is Fyne's, which follows the system's light or dark setting.
package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"github.com/hashicorp/go-hclog"

	"amid/assets"
	"amid/host/catalog"
	"amid/host/config"
	"amid/host/run"
	"amid/host/store"
	"amid/host/supervisor"
)

// Options configure the main window.
type Options struct {
	// Image and Labels, when set, open in the Viewer screen, which is then shown first;
	// otherwise the Viewer shows the bundled sample study and Home is shown first.
	Image, Labels string
	// do runs a function on the UI goroutine (tests: a queue the test drains); nil: fyne.Do.
	do func(func())
}

// App is the desktop application: one window with a tab per screen.
type App struct {
	A fyne.App
	W fyne.Window

	do func(func())

	mu     sync.Mutex
	cat    *catalog.Catalog // opened on first use, closed with the window
	runDir string           // the run the run screens show

	tabs     *container.AppTabs
	home     *homeScreen
	newTask  *newTaskScreen
	monitor  *monitorScreen
	results  *resultsScreen
	review   *reviewScreen
	export   *exportScreen
	plugins  *pluginsScreen
	settings *settingsScreen
	viewer   *viewerScreen
}

// NewMainWindow builds the main window with the Home screen first.
func NewMainWindow(a fyne.App) (fyne.Window, error) {
	app, err := New(a, Options{})
	if err != nil {
		return nil, err
	}
	return app.W, nil
}

// New builds the application's window.
func New(a fyne.App, o Options) (*App, error) {
	app := &App{A: a, do: o.do}
	if app.do == nil {
		app.do = fyne.Do
	}
	applySettings(a.Preferences())
	w := a.NewWindow("AMID")
	w.SetIcon(fyne.NewStaticResource("icon.png", assets.Icon))
	app.W = w
	var err error
	if app.viewer, err = newViewerScreen(app, o.Image, o.Labels); err != nil {
		return nil, err
	}
	app.home = newHomeScreen(app)
	app.newTask = newNewTaskScreen(app)
	app.monitor = newMonitorScreen(app)
	app.results = newResultsScreen(app)
	app.review = newReviewScreen(app)
	app.export = newExportScreen(app)
	app.plugins = newPluginsScreen(app)
	app.settings = newSettingsScreen(app)
	app.tabs = container.NewAppTabs(
		container.NewTabItem("Home", app.home.obj),
		container.NewTabItem("New task", app.newTask.obj),
		container.NewTabItem("Monitor", app.monitor.obj),
		container.NewTabItem("Results", app.results.obj),
		container.NewTabItem("Review", app.review.obj),
		container.NewTabItem("Export", app.export.obj),
		container.NewTabItem("Plugins", app.plugins.obj),
		container.NewTabItem("Settings", app.settings.obj),
		container.NewTabItem("Viewer", app.viewer.obj),
	)
	app.tabs.SetTabLocation(container.TabLocationLeading)
	app.tabs.OnSelected = func(t *container.TabItem) { app.shown(t.Text) }
	if o.Image != "" {
		app.tabs.SelectIndex(tabViewer)
	}
	w.SetContent(app.tabs)
	w.Resize(fyne.NewSize(1100, 760))
	w.SetOnClosed(app.close)
	app.home.refresh()
	return app, nil
}

// Tab indexes.
const (
	tabHome = iota
	tabNewTask
	tabMonitor
	tabResults
	tabReview
	tabExport
	tabPlugins
	tabSettings
	tabViewer
)

// shown refreshes a screen when its tab is selected.
func (a *App) shown(name string) {
	switch name {
	case "Home":
		a.home.refresh()
	case "Results":
		a.results.load(a.RunDir())
	case "Review":
		a.review.load(a.RunDir())
	case "Export":
		a.export.load(a.RunDir())
	case "Plugins":
		a.plugins.refresh()
	}
}

// RunDir is the run the run screens show ("" none).
func (a *App) RunDir() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.runDir
}

// OpenRun makes dir the current run, remembers it among the recent runs and shows the
// monitor (a run not finished) or its results. Call on the UI goroutine.
func (a *App) OpenRun(dir string) {
	a.mu.Lock()
	a.runDir = dir
	a.mu.Unlock()
	rememberRun(a.A.Preferences(), dir)
	st, err := run.LoadState(dir)
	if err == nil && st.Phase == run.PhaseDone {
		a.tabs.SelectIndex(tabResults)
		return
	}
	a.monitor.show(dir)
	a.tabs.SelectIndex(tabMonitor)
}

// env returns what a run needs from the host, opening the plugin catalog (and its store)
// on first use.
func (a *App) env() (run.Env, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cat == nil {
		path, err := config.StorePath()
		if err != nil {
			return run.Env{}, err
		}
		st, err := store.Open(path, store.DefaultTimeout)
		if err != nil {
			return run.Env{}, err
		}
		b, err := config.BuiltinPluginDir()
		if err != nil {
			st.Close()
			return run.Env{}, err
		}
		u, err := config.PluginDir()
		if err != nil {
			st.Close()
			return run.Env{}, err
		}
		a.cat = &catalog.Catalog{Builtin: b, User: u, Store: st}
	}
	return run.Env{Catalog: a.cat, Supervisor: pluginOptions(io.Discard)}, nil
}

func pluginOptions(w io.Writer) supervisor.Options {
	return supervisor.Options{Logger: hclog.New(&hclog.LoggerOptions{Name: "amid", Level: hclog.Error, Output: w})}
}

// close stops a running run (its state is saved) and closes the store.
func (a *App) close() {
	a.monitor.stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cat != nil {
		a.cat.Store.Close()
		a.cat = nil
	}
}

// runsDir is the folder new runs are created in: runs/ in the data folder.
func runsDir() (string, error) {
	h, err := config.Home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, "runs"), nil
}

// Preference keys.
const (
	prefRecentRuns   = "recent_runs"
	prefTaskFolder   = "last_task_folder"
	prefDataFolder   = "last_data_folder"
	prefExportFolder = "last_export_folder"
	prefHome         = "data_folder"
	prefPluginDir    = "plugin_folder"
	prefLLMURL       = "llm_base_url"
	prefLLMModel     = "llm_model"
	prefLLMKeyEnv    = "llm_key_env"
	maxRecent        = 20
)

// rememberRun puts dir first among the recent runs.
func rememberRun(p fyne.Preferences, dir string) {
	list := slices.DeleteFunc(p.StringList(prefRecentRuns), func(s string) bool { return s == dir })
	list = append([]string{dir}, list...)
	if len(list) > maxRecent {
		list = list[:maxRecent]
	}
	p.SetStringList(prefRecentRuns, list)
}

// applySettings sets the data and plugin folders from the settings unless the environment
// already names them.
func applySettings(p fyne.Preferences) {
	for env, key := range map[string]string{config.EnvHome: prefHome, config.EnvPluginDir: prefPluginDir} {
		if v := p.String(key); v != "" && os.Getenv(env) == "" {
			_ = os.Setenv(env, v)
		}
	}
}

// errText is err as one line for a status label.
func errText(err error) string {
	if errors.Is(err, context.Canceled) {
		return "stopped"
	}
	return fmt.Sprint(err)
}
