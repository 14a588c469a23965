package ui

import (
	"strings"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"amid/host/config"
)

// settingsScreen edits the data folder, the plugin folder and the LLM endpoint defaults;
// the theme follows the system.
type settingsScreen struct {
	a                        *App
	obj                      fyne.CanvasObject
	home, plugins            *widget.Entry
	llmURL, llmModel, llmKey *widget.Entry
	status                   *widget.Label
}

func newSettingsScreen(a *App) *settingsScreen {
	p := a.A.Preferences()
	s := &settingsScreen{a: a, home: widget.NewEntry(), plugins: widget.NewEntry(), llmURL: widget.NewEntry(),
		llmModel: widget.NewEntry(), llmKey: widget.NewEntry(), status: widget.NewLabel("")}
	s.status.Wrapping = fyne.TextWrapWord
	// The folders shown are the saved ones, or when none are saved the ones in use.
	use, _ := a.folders.Paths()
	s.home.SetText(p.StringWithFallback(prefHome, use.Home))
	s.plugins.SetText(p.StringWithFallback(prefPluginDir, use.UserPlugins))
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
		widget.NewFormItem("LLM base URL", s.llmURL),
		widget.NewFormItem("LLM model", s.llmModel),
		widget.NewFormItem("LLM key variable", s.llmKey),
	)
	save := widget.NewButton("Save", s.save)
	save.Importance = widget.HighImportance
	note := widget.NewLabel("The theme follows the system's light or dark setting. $" + config.EnvHome + " and $" +
		config.EnvPluginDir + ", when set, take precedence over these folders. The LLM key is read from the named environment variable, never stored.")
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
	msg := "Saved. The folders apply the next time AMID starts"
	if env := config.EnvOverrides(); len(env) > 0 {
		msg += ", unless $" + strings.Join(env, " and $") + " (set now) still names them"
	}
	s.status.SetText(msg + ".")
}
