package ui

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"amid/host/catalog"
	"amid/host/config"
	"amid/host/supervisor"
	"amid/plugins/protocol"
)

// settingsScreen edits the data folder, the plugin folder, the device plugins compute on
// (with the machine's devices listed), the LLM endpoint defaults and where new runs train
// their lanes (config.Executor: this machine, or a Slurm cluster with its partition,
// account and jobs at once); the theme follows the system.
type settingsScreen struct {
	a                        *App
	obj                      fyne.CanvasObject
	home, plugins            *widget.Entry
	device                   *widget.Select
	devices                  *widget.Label
	llmURL, llmModel, llmKey *widget.Entry
	executor                 *widget.Select
	partition, account       *widget.Entry
	jobs, cpus, gpus         *widget.Entry
	pacsURL, pacsUser        *widget.Entry
	status                   *widget.Label
}

// deviceChoices are the device settings offered before the machine's devices are listed.
var deviceChoices = []string{config.DeviceAuto, config.DeviceCPU, config.DeviceVulkan}

// devicePlugin is the built-in plugin asked for the machine's devices (every built-in
// plugin lists the same ones).
const devicePlugin = "segmentation"

// executorChoices are the executor kinds the Settings screen offers, as config names them.
var executorChoices = []string{config.ExecutorLocal, config.ExecutorProcess, config.ExecutorSlurm}

func newSettingsScreen(a *App) *settingsScreen {
	p := a.A.Preferences()
	s := &settingsScreen{a: a, home: widget.NewEntry(), plugins: widget.NewEntry(), llmURL: widget.NewEntry(),
		llmModel: widget.NewEntry(), llmKey: widget.NewEntry(), partition: widget.NewEntry(), account: widget.NewEntry(),
		jobs: widget.NewEntry(), cpus: widget.NewEntry(), gpus: widget.NewEntry(), status: widget.NewLabel(""),
		pacsURL: widget.NewEntry(), pacsUser: widget.NewEntry()}
	s.status.Wrapping = fyne.TextWrapWord
	// The folders shown are the saved ones, or when none are saved the ones in use.
	use, _ := a.folders.Paths()
	s.home.SetText(p.StringWithFallback(prefHome, use.Home))
	s.plugins.SetText(p.StringWithFallback(prefPluginDir, use.UserPlugins))
	saved := cmp.Or(p.String(prefDevice), config.DeviceAuto)
	opts := slices.Clone(deviceChoices)
	if !slices.Contains(opts, saved) {
		opts = append(opts, saved) // a device by number, listed when it was chosen
	}
	s.device = widget.NewSelect(opts, nil)
	s.device.SetSelected(saved)
	s.devices = widget.NewLabel("")
	s.devices.Wrapping = fyne.TextWrapWord
	s.devices.Hide() // until the devices are listed
	list := widget.NewButton("List devices", s.listDevices)
	s.llmURL.SetText(p.String(prefLLMURL))
	s.llmModel.SetText(p.String(prefLLMModel))
	s.llmKey.SetText(p.StringWithFallback(prefLLMKeyEnv, "AMID_LLM_API_KEY"))
	// The executor shown is the saved one (the environment's, when it names one, applies
	// in its place and the note says so).
	ex := savedExecutor(p)
	s.executor = widget.NewSelect(executorChoices, func(k string) { s.slurmFields(k == config.ExecutorSlurm) })
	s.partition.SetPlaceHolder("the cluster's default")
	s.account.SetPlaceHolder("the user's default")
	s.jobs.SetPlaceHolder("CPU jobs at once (4)")
	s.cpus.SetPlaceHolder("cores a job (4)")
	s.gpus.SetPlaceHolder("GPU jobs at once (0)")
	s.partition.SetText(ex.Partition)
	s.account.SetText(ex.Account)
	for _, f := range []struct {
		e *widget.Entry
		n int
	}{{s.jobs, ex.Jobs}, {s.cpus, ex.CPUs}, {s.gpus, ex.GPUs}} {
		if f.n > 0 {
			f.e.SetText(strconv.Itoa(f.n))
		}
	}
	s.executor.SetSelected(cmp.Or(ex.Kind, config.ExecutorLocal))
	s.pacsURL.SetPlaceHolder("the PACS's DICOMweb root, such as http://pacs:8042/dicom-web")
	s.pacsURL.SetText(p.String(prefPACSURL))
	s.pacsUser.SetText(p.String(prefPACSUser))
	folder := func(e *widget.Entry) fyne.CanvasObject {
		b := widget.NewButton("Folder…", func() {
			dialog.ShowFolderOpen(func(u fyne.ListableURI, err error) {
				if err == nil && u != nil {
					e.SetText(u.Path())
				}
			}, a.W)
		})
		return container.NewBorder(nil, nil, nil, b, e)
	}
	form := widget.NewForm(
		widget.NewFormItem("Data folder", folder(s.home)),
		widget.NewFormItem("Plugin folder", folder(s.plugins)),
		widget.NewFormItem("Device", container.NewBorder(nil, nil, nil, list, s.device)),
		widget.NewFormItem("LLM base URL", s.llmURL),
		widget.NewFormItem("LLM model", s.llmModel),
		widget.NewFormItem("LLM key variable", s.llmKey),
		widget.NewFormItem("Lanes train", s.executor),
		widget.NewFormItem("Slurm partition", s.partition),
		widget.NewFormItem("Slurm account", s.account),
		widget.NewFormItem("Slurm jobs", container.NewGridWithColumns(3, s.jobs, s.cpus, s.gpus)),
		widget.NewFormItem("PACS", s.pacsURL),
		widget.NewFormItem("PACS user", s.pacsUser),
	)
	save := widget.NewButton("Save", s.save)
	save.Importance = widget.HighImportance
	note := widget.NewLabel("The device auto takes a discrete GPU, then an integrated one, else the CPU (never a software Vulkan device such as lavapipe). " +
		"The theme follows the system's light or dark setting. $" + config.EnvHome + ", $" +
		config.EnvPluginDir + " and $" + config.EnvDevice + ", when set, take precedence over these settings. The LLM key is read from the named environment variable, never stored. " +
		"Lanes train on this machine (local), in a process of their own each (process) or as Slurm jobs (slurm), from the next run started on; a run keeps where it began. $" +
		config.EnvExecutor + " and $AMID_SLURM_…, when set, take precedence. The PACS's password is read from $" + config.EnvPACSPassword + ", never stored; $" +
		config.EnvPACSURL + " and $" + config.EnvPACSUser + ", when set, take precedence.")
	note.Wrapping = fyne.TextWrapWord
	title := widget.NewLabelWithStyle("Settings", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	// It scrolls once the devices are listed, rather than growing the window.
	s.obj = container.NewVScroll(container.NewVBox(title, form, s.devices, container.NewHBox(save), note, s.status))
	return s
}

// slurmFields enables the Slurm fields when the Slurm executor is chosen.
func (s *settingsScreen) slurmFields(on bool) {
	for _, e := range []*widget.Entry{s.partition, s.account, s.jobs, s.cpus, s.gpus} {
		if on {
			e.Enable()
		} else {
			e.Disable()
		}
	}
}

// executorEntered is the executor the fields say, or what is wrong with them.
func (s *settingsScreen) executorEntered() (config.Executor, error) {
	e := config.Executor{Kind: s.executor.Selected, Partition: strings.TrimSpace(s.partition.Text), Account: strings.TrimSpace(s.account.Text)}
	for _, f := range []struct {
		what string
		e    *widget.Entry
		n    *int
	}{{"CPU jobs at once", s.jobs, &e.Jobs}, {"cores a job", s.cpus, &e.CPUs}, {"GPU jobs at once", s.gpus, &e.GPUs}} {
		t := strings.TrimSpace(f.e.Text)
		if t == "" {
			continue
		}
		n, err := strconv.Atoi(t)
		if err != nil || n < 0 {
			return config.Executor{}, fmt.Errorf("the Slurm executor's %s is %q, not a whole number of at least 0", f.what, t)
		}
		*f.n = n
	}
	return e, e.Validate()
}

// save stores the settings; new folders apply to the next store opened (a restart), the
// device and the executor to the next run started.
func (s *settingsScreen) save() {
	ex, err := s.executorEntered()
	if err != nil {
		s.status.SetText("Not saved: " + err.Error() + ".")
		return
	}
	p := s.a.A.Preferences()
	p.SetString(prefExecutor, ex.Kind)
	p.SetString(prefPartition, ex.Partition)
	p.SetString(prefAccount, ex.Account)
	p.SetInt(prefSlurmJobs, ex.Jobs)
	p.SetInt(prefSlurmCPUs, ex.CPUs)
	p.SetInt(prefSlurmGPUs, ex.GPUs)
	s.a.setExecutor(config.Settings{Executor: ex}.WithEnv().Executor)
	p.SetString(prefHome, strings.TrimSpace(s.home.Text))
	p.SetString(prefPluginDir, strings.TrimSpace(s.plugins.Text))
	p.SetString(prefLLMURL, strings.TrimSpace(s.llmURL.Text))
	p.SetString(prefLLMModel, strings.TrimSpace(s.llmModel.Text))
	p.SetString(prefLLMKeyEnv, strings.TrimSpace(s.llmKey.Text))
	pacs := config.PACS{URL: strings.TrimSpace(s.pacsURL.Text), User: strings.TrimSpace(s.pacsUser.Text)}
	p.SetString(prefPACSURL, pacs.URL)
	p.SetString(prefPACSUser, pacs.User)
	s.a.setPACS(pacs)
	if err := s.a.setDevice(s.device.Selected); err != nil {
		s.status.SetText(errText(err))
		return
	}
	p.SetString(prefDevice, s.device.Selected)
	msg := "Saved. The device and the executor apply to the next run started, the PACS at once, the folders the next time AMID starts"
	if env := config.EnvOverrides(); len(env) > 0 {
		msg += ", unless $" + strings.Join(env, " and $") + " (set now) still names them"
	}
	s.status.SetText(msg + ".")
}

// listDevices asks a built-in plugin for the machine's devices, lists them and offers
// each Vulkan device by number.
func (s *settingsScreen) listDevices() {
	s.devices.SetText("Asking the " + devicePlugin + " plugin…")
	s.devices.Show()
	go func() {
		env, err := s.a.env()
		var hw []string
		if err == nil {
			var e *catalog.Entry
			if e, err = env.Catalog.Find(devicePlugin); err == nil {
				var d *protocol.DescribeResponse
				if d, err = supervisor.Describe(context.Background(), e, env.Supervisor); err == nil {
					hw = d.Hardware
				}
			}
		}
		s.a.do(func() {
			if err != nil {
				s.devices.SetText(errText(err))
				return
			}
			s.showDevices(hw)
		})
	}()
}

// showDevices lists the hardware a plugin described and offers each Vulkan device
// ("vulkan:N …") as a setting of its own.
func (s *settingsScreen) showDevices(hw []string) {
	opts := slices.Clone(deviceChoices)
	if sel := s.device.Selected; !slices.Contains(opts, sel) {
		opts = append(opts, sel)
	}
	for _, h := range hw {
		if n, _, ok := strings.Cut(h, " "); ok && strings.HasPrefix(n, config.DeviceVulkan+":") && !slices.Contains(opts, n) {
			opts = append(opts, n)
		}
	}
	sel := s.device.Selected
	s.device.Options = opts
	s.device.SetSelected(sel)
	s.devices.SetText("Devices of this machine:\n" + strings.Join(hw, "\n"))
}
