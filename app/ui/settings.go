package ui

import (
	"cmp"
	"context"
	"slices"
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
// (with the machine's devices listed) and the LLM endpoint defaults; the theme follows the
// system.
type settingsScreen struct {
	a                        *App
	obj                      fyne.CanvasObject
	home, plugins            *widget.Entry
	device                   *widget.Select
	devices                  *widget.Label
	llmURL, llmModel, llmKey *widget.Entry
	status                   *widget.Label
}

// deviceChoices are the device settings offered before the machine's devices are listed.
var deviceChoices = []string{config.DeviceAuto, config.DeviceCPU, config.DeviceVulkan}

// devicePlugin is the built-in plugin asked for the machine's devices (every built-in
// plugin lists the same ones).
const devicePlugin = "segmentation"

func newSettingsScreen(a *App) *settingsScreen {
	p := a.A.Preferences()
	s := &settingsScreen{a: a, home: widget.NewEntry(), plugins: widget.NewEntry(), llmURL: widget.NewEntry(),
		llmModel: widget.NewEntry(), llmKey: widget.NewEntry(), status: widget.NewLabel("")}
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
	s.devices = widget.NewLabel("auto takes a discrete GPU, then an integrated one, else the CPU (never a software Vulkan device such as lavapipe).")
	s.devices.Wrapping = fyne.TextWrapWord
	list := widget.NewButton("List devices", s.listDevices)
	s.llmURL.SetText(p.String(prefLLMURL))
	s.llmModel.SetText(p.String(prefLLMModel))
	s.llmKey.SetText(p.StringWithFallback(prefLLMKeyEnv, "AMID_LLM_API_KEY"))
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
		widget.NewFormItem("", s.devices),
		widget.NewFormItem("LLM base URL", s.llmURL),
		widget.NewFormItem("LLM model", s.llmModel),
		widget.NewFormItem("LLM key variable", s.llmKey),
	)
	save := widget.NewButton("Save", s.save)
	save.Importance = widget.HighImportance
	note := widget.NewLabel("The theme follows the system's light or dark setting. $" + config.EnvHome + ", $" +
		config.EnvPluginDir + " and $" + config.EnvDevice + ", when set, take precedence over these settings. The LLM key is read from the named environment variable, never stored.")
	note.Wrapping = fyne.TextWrapWord
	title := widget.NewLabelWithStyle("Settings", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	s.obj = container.NewVBox(title, form, container.NewHBox(save), note, s.status)
	return s
}

// save stores the settings; new folders apply to the next store opened (a restart).
func (s *settingsScreen) save() {
	p := s.a.A.Preferences()
	p.SetString(prefHome, strings.TrimSpace(s.home.Text))
	p.SetString(prefPluginDir, strings.TrimSpace(s.plugins.Text))
	p.SetString(prefLLMURL, strings.TrimSpace(s.llmURL.Text))
	p.SetString(prefLLMModel, strings.TrimSpace(s.llmModel.Text))
	p.SetString(prefLLMKeyEnv, strings.TrimSpace(s.llmKey.Text))
	if err := s.a.setDevice(s.device.Selected); err != nil {
		s.status.SetText(errText(err))
		return
	}
	p.SetString(prefDevice, s.device.Selected)
	msg := "Saved. The device applies to the next run, the folders the next time AMID starts"
	if env := config.EnvOverrides(); len(env) > 0 {
		msg += ", unless $" + strings.Join(env, " and $") + " (set now) still names them"
	}
	s.status.SetText(msg + ".")
}

// listDevices asks a built-in plugin for the machine's devices, lists them and offers
// each Vulkan device by number.
func (s *settingsScreen) listDevices() {
	s.devices.SetText("Asking the " + devicePlugin + " plugin…")
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
