// Package ui holds AMID's desktop screens, built with Fyne. It never imports the Fyne
// driver (fyne.io/fyne/v2/app): main.go creates the app and hands it here, so every screen
// is testable headless with fyne.io/fyne/v2/test.
//
// The screens: Home (recent runs and the model packages AMID knows), New task (a task file, a built-in ReX-MLE task or a
// prepared ReX-MLE folder; kind, budget, planner, LLM endpoint), Monitor (the run's lanes,
// loss plot, log, ETA; pause, resume, cancel), Results (lanes, per-fold scores, why the
// chosen one won), Review (the test cases' predictions over their images; approve, reject,
// comment), Export (the package, refused until review is complete unless a reason is
// recorded), Use a model (a package on new patients' files, folders or PACS studies:
// progress, each result over its image the least sure first, with its volumes; the
// reader's decisions in the predict run's own audit log), Plugins (list, trust, details),
// Settings and a standalone Viewer.
//
// Host work runs in goroutines; widgets change only on the UI goroutine, through the App's
// bridge (viewer/bridge), which the screens' viewers share: a background result is posted
// to it (App.do), a stream of state (the Monitor's) coalesces into its newest. The theme
// is Fyne's, which follows the system's light or dark setting.
package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/driver/desktop"
	"fyne.io/fyne/v2/widget"

	"amid/assets"
	"amid/host"
	"amid/host/config"
	"amid/host/run"
	"amid/viewer/bridge"
)

// Options configure the main window.
type Options struct {
	// Image and Labels, when set, open in the Viewer screen, which is then shown first;
	// otherwise the Viewer shows the bundled sample study and Home is shown first.
	Image, Labels string
	// Run, when set, is a run folder opened on the Review screen, which is shown first.
	Run string
	// bridge reaches the UI goroutine (tests: one whose flushes a test runs); nil:
	// bridge.Default().
	bridge *bridge.Bridge
}

// App is the desktop application: one window with a tab per screen.
type App struct {
	A fyne.App
	W fyne.Window

	ui *bridge.Bridge // the way to the UI goroutine

	// folders are the settings this window opens AMID with: the Settings screen's saved
	// folders, or the environment's where it names them (config.Settings.WithEnv). Saved
	// changes apply the next time the program starts.
	folders config.Settings

	mu     sync.Mutex
	host   *host.Host // opened on first use, closed with the window
	runDir string     // the run the run screens show

	tabs     *container.AppTabs
	home     *homeScreen
	newTask  *newTaskScreen
	monitor  *monitorScreen
	results  *resultsScreen
	review   *reviewScreen
	export   *exportScreen
	use      *useScreen
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
	app := &App{A: a, ui: o.bridge}
	if app.ui == nil {
		app.ui = bridge.Default()
	}
	app.folders = savedSettings(a.Preferences()).WithEnv()
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
	app.use = newUseScreen(app)
	app.plugins = newPluginsScreen(app)
	app.settings = newSettingsScreen(app)
	app.tabs = container.NewAppTabs(
		container.NewTabItem("Home", app.home.obj),
		container.NewTabItem("New task", app.newTask.obj),
		container.NewTabItem("Monitor", app.monitor.obj),
		container.NewTabItem("Results", app.results.obj),
		container.NewTabItem("Review", app.review.obj),
		container.NewTabItem("Export", app.export.obj),
		container.NewTabItem("Use model", app.use.obj),
		container.NewTabItem("Plugins", app.plugins.obj),
		container.NewTabItem("Settings", app.settings.obj),
		container.NewTabItem("Viewer", app.viewer.obj),
	)
	app.tabs.SetTabLocation(container.TabLocationLeading)
	app.tabs.OnSelected = func(t *container.TabItem) { app.shown(t.Text) }
	if o.Image != "" {
		app.tabs.SelectIndex(tabViewer)
	}
	if o.Run != "" {
		app.OpenRun(o.Run)
		app.tabs.SelectIndex(tabReview)
	}
	// Undo and redo of a correction, on the screen that shows one.
	undo := &desktop.CustomShortcut{KeyName: fyne.KeyZ, Modifier: fyne.KeyModifierShortcutDefault}
	redo := &desktop.CustomShortcut{KeyName: fyne.KeyZ, Modifier: fyne.KeyModifierShortcutDefault | fyne.KeyModifierShift}
	w.Canvas().AddShortcut(undo, func(fyne.Shortcut) { app.correcting(func(c *corrector) { c.step(false) }) })
	w.Canvas().AddShortcut(redo, func(fyne.Shortcut) { app.correcting(func(c *corrector) { c.step(true) }) })
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
	tabUse
	tabPlugins
	tabSettings
	tabViewer
)

// do runs f on the UI goroutine with the bridge's next flush, after what was posted before
// it: the result of a piece of background work. It never runs f on the caller's goroutine.
func (a *App) do(f func()) { a.ui.Post(nil, f) }

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
	case "Use model":
		a.use.refresh()
	case "Plugins":
		a.plugins.refresh()
	}
}

// correcting runs f on the correction bar of the screen shown, if it has one.
func (a *App) correcting(f func(*corrector)) {
	switch a.tabs.SelectedIndex() {
	case tabReview:
		f(a.review.corr)
	case tabUse:
		f(a.use.corr)
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

// env returns what a run needs from the host, opening it (the store and the plugin
// catalog) on first use.
func (a *App) env() (run.Env, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.host == nil {
		h, err := host.Open(a.folders, io.Discard)
		if err != nil {
			return run.Env{}, err
		}
		a.host = h
	}
	return a.host.Env(), nil
}

// close stops a running run (its state is saved) and closes the store.
func (a *App) close() {
	a.monitor.stop()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.host != nil {
		a.host.Close()
		a.host = nil
	}
}

// runsDir is the folder new runs are created in: runs/ in the data folder.
func (a *App) runsDir() (string, error) {
	p, err := a.folders.Paths()
	if err != nil {
		return "", err
	}
	return p.Runs, nil
}

// Preference keys.
const (
	prefRecentRuns   = "recent_runs"
	prefRecentPkgs   = "recent_packages"
	prefPACSURL      = "pacs_url"
	prefPACSUser     = "pacs_user"
	prefTaskFolder   = "last_task_folder"
	prefDataFolder   = "last_data_folder"
	prefExportFolder = "last_export_folder"
	prefHome         = "data_folder"
	prefPluginDir    = "plugin_folder"
	prefLLMURL       = "llm_base_url"
	prefLLMModel     = "llm_model"
	prefLLMKeyEnv    = "llm_key_env"
	prefDevice       = "device"
	prefExecutor     = "executor"
	prefPartition    = "slurm_partition"
	prefAccount      = "slurm_account"
	prefSlurmJobs    = "slurm_jobs"
	prefSlurmCPUs    = "slurm_cpus"
	prefSlurmGPUs    = "slurm_gpus"
	maxRecent        = 20
)

// rememberRun puts dir first among the recent runs.
func rememberRun(p fyne.Preferences, dir string) { remember(p, prefRecentRuns, dir) }

// remember puts path first in the preference list key, once, keeping maxRecent.
func remember(p fyne.Preferences, key, path string) {
	list := slices.DeleteFunc(p.StringList(key), func(s string) bool { return s == path })
	list = append([]string{path}, list...)
	if len(list) > maxRecent {
		list = list[:maxRecent]
	}
	p.SetStringList(key, list)
}

// savedSettings are the folders, the device and the executor the Settings screen saved.
func savedSettings(p fyne.Preferences) config.Settings {
	return config.Settings{Home: p.String(prefHome), PluginDir: p.String(prefPluginDir), Device: p.String(prefDevice), Executor: savedExecutor(p),
		PACS: config.PACS{URL: p.String(prefPACSURL), User: p.String(prefPACSUser)}}
}

// savedExecutor is where the Settings screen saved that new runs train.
func savedExecutor(p fyne.Preferences) config.Executor {
	return config.Executor{Kind: p.String(prefExecutor), Partition: p.String(prefPartition), Account: p.String(prefAccount),
		Jobs: p.Int(prefSlurmJobs), CPUs: p.Int(prefSlurmCPUs), GPUs: p.Int(prefSlurmGPUs)}
}

// pacs is the PACS the Use a model screen retrieves studies from and stores results in:
// the Settings screen's, or the environment's where it names one.
func (a *App) pacs() config.PACS {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.folders.PACS
}

// setPACS makes p (with the environment's values where it has them) the PACS.
func (a *App) setPACS(p config.PACS) {
	p = config.Settings{PACS: p}.WithEnv().PACS
	a.mu.Lock()
	defer a.mu.Unlock()
	a.folders.PACS = p
}

// setExecutor makes e where the runs started from now on train (an open host's too).
func (a *App) setExecutor(e config.Executor) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.folders.Executor = e
	if a.host != nil {
		a.host.Executor = e
	}
}

// setDevice makes the plugins of the next runs compute on device (a config.CheckDevice
// setting), unless $AMID_DEVICE names another.
func (a *App) setDevice(device string) error {
	s := config.Settings{Device: device}.WithEnv()
	env, err := s.DeviceEnv()
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.folders.Device = s.Device
	if a.host != nil {
		old := a.host.Supervisor.Env
		a.host.Supervisor.Env = append(slices.DeleteFunc(slices.Clone(old), func(e string) bool {
			return strings.HasPrefix(e, config.EnvDevice+"=")
		}), env...)
	}
	return nil
}

// rowList is a list of labels, each row's text the String of (*items)[i]; choosing a row
// calls chosen with its item. template sizes the rows.
func rowList[T fmt.Stringer](items *[]T, template string, chosen func(T)) *widget.List {
	l := widget.NewList(func() int { return len(*items) },
		func() fyne.CanvasObject { return widget.NewLabel(template) },
		func(i widget.ListItemID, o fyne.CanvasObject) {
			if i < len(*items) {
				o.(*widget.Label).SetText((*items)[i].String())
			}
		})
	l.OnSelected = func(i widget.ListItemID) {
		if i < len(*items) {
			chosen((*items)[i])
		}
	}
	return l
}

// errText is err as one line for a status label.
func errText(err error) string {
	if errors.Is(err, context.Canceled) {
		return "stopped"
	}
	return fmt.Sprint(err)
}
