package ui

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/container"
	"fyne.io/fyne/v2/dialog"
	"fyne.io/fyne/v2/widget"

	"amid/host"
	"amid/host/catalog"
	"amid/host/supervisor"
	"amid/plugins/protocol"
)

// pluginsScreen lists the plugins found, trusts a new one after showing its sha256, and
// shows what a trusted one says it can do.
type pluginsScreen struct {
	a       *App
	obj     fyne.CanvasObject
	entries []catalog.Entry
	sel     int
	list    *widget.List
	details *widget.Label
	status  *widget.Label
	trust   *widget.Button
	desc    *widget.Button
}

func newPluginsScreen(a *App) *pluginsScreen {
	s := &pluginsScreen{a: a, sel: -1, details: widget.NewLabel("Choose a plugin."), status: widget.NewLabel("")}
	s.details.Wrapping = fyne.TextWrapWord
	s.status.Wrapping = fyne.TextWrapWord
	s.list = widget.NewList(func() int { return len(s.entries) },
		func() fyne.CanvasObject { return widget.NewLabel("plugin name and state") },
		func(i widget.ListItemID, o fyne.CanvasObject) { o.(*widget.Label).SetText(pluginLine(&s.entries[i])) })
	s.list.OnSelected = func(i widget.ListItemID) {
		s.sel = i
		s.showDetails()
	}
	s.trust = widget.NewButton("Trust…", s.confirmTrust)
	s.desc = widget.NewButton("Describe", s.describe)
	s.trust.Disable()
	s.desc.Disable()
	title := widget.NewLabelWithStyle("Plugins", fyne.TextAlignLeading, fyne.TextStyle{Bold: true})
	right := container.NewBorder(container.NewHBox(s.trust, s.desc), nil, nil, nil, container.NewVScroll(s.details))
	split := container.NewHSplit(s.list, right)
	split.Offset = 0.4
	s.obj = container.NewBorder(container.NewVBox(title, container.NewHBox(widget.NewButton("Refresh", s.refresh))), s.status, nil, nil, split)
	return s
}

func pluginLine(e *catalog.Entry) string {
	v := ""
	if e.Record != nil && e.Record.TrustedSHA256 == e.SHA256 && e.Record.Version != "" {
		v = " " + e.Record.Version
	}
	return fmt.Sprintf("%s%s — %s — %s", e.Name, v, e.State, short(e.SHA256))
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}

// refresh scans the plugin folders off the UI goroutine.
func (s *pluginsScreen) refresh() {
	go func() {
		env, err := s.a.env()
		var es []catalog.Entry
		if err == nil {
			es, err = env.Catalog.Scan()
		}
		s.a.do(func() {
			if err != nil {
				s.status.SetText(errText(err))
				return
			}
			s.entries, s.sel = es, -1
			s.list.UnselectAll()
			s.list.Refresh()
			s.details.SetText("Choose a plugin.")
			s.trust.Disable()
			s.desc.Disable()
			s.status.SetText(fmt.Sprintf("%d plugins in %s and %s", len(es), env.Catalog.Builtin, env.Catalog.User))
		})
	}()
}

func (s *pluginsScreen) selected() *catalog.Entry {
	if s.sel < 0 || s.sel >= len(s.entries) {
		return nil
	}
	return &s.entries[s.sel]
}

func (s *pluginsScreen) showDetails() {
	e := s.selected()
	if e == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Name: %s\nPath: %s\nBuilt in: %v\nState: %s\nsha256: %s\n", e.Name, e.Path, e.Builtin, e.State, e.SHA256)
	if e.AsBuilt() {
		b.WriteString("Trusted as built: this AMID was built with this binary.\n")
	}
	if e.Problem != "" {
		fmt.Fprintf(&b, "Problem: %s\n", e.Problem)
	}
	if e.Record != nil && e.Record.TrustedSHA256 == e.SHA256 {
		fmt.Fprintf(&b, "Version: %s\nKinds: %s\n", e.Record.Version, strings.Join(e.Record.Kinds, ", "))
	}
	if len(e.Shadows) > 0 {
		fmt.Fprintf(&b, "Hides: %s\n", strings.Join(e.Shadows, ", "))
	}
	s.details.SetText(b.String())
	if e.State == catalog.Trusted {
		s.trust.Disable()
		s.desc.Enable()
	} else {
		s.trust.Enable()
		s.desc.Disable()
	}
}

// confirmTrust shows the binary's sha256 and trusts it when confirmed.
func (s *pluginsScreen) confirmTrust() {
	e := s.selected()
	if e == nil {
		return
	}
	msg := widget.NewLabel(fmt.Sprintf("Trust %s?\n\n%s\n\nsha256 %s\n\nAMID will run this program. Trust it only if the sha256 is the one its author published.", e.Name, e.Path, e.SHA256))
	msg.Wrapping = fyne.TextWrapWord
	d := dialog.NewCustomConfirm("Trust plugin", "Trust", "Cancel", msg, func(ok bool) {
		if ok {
			s.trustEntry(*e)
		}
	}, s.a.W)
	d.Resize(fyne.NewSize(560, 300))
	d.Show()
}

// trustEntry trusts e (off the UI goroutine), then asks it to describe itself; a plugin
// that cannot stays untrusted.
func (s *pluginsScreen) trustEntry(e catalog.Entry) {
	s.status.SetText("Trusting " + e.Name + "…")
	go func() {
		env, err := s.a.env()
		if err == nil {
			err = trustPlugin(env.Catalog, &e, env.Supervisor)
		}
		s.a.do(func() {
			if err != nil {
				s.status.SetText(errText(err))
			} else {
				s.status.SetText(fmt.Sprintf("trusted %s, sha256 %s", e.Name, e.SHA256))
			}
			s.refreshKeep()
		})
	}()
}

// refreshKeep rescans and keeps the status line.
func (s *pluginsScreen) refreshKeep() {
	msg := s.status.Text
	s.refresh()
	go func() {
		time.Sleep(200 * time.Millisecond)
		s.a.do(func() { s.status.SetText(msg) })
	}()
}

// trustPlugin trusts e as it is now if it describes itself (catalog.TrustDescribed).
func trustPlugin(cat *catalog.Catalog, e *catalog.Entry, opts supervisor.Options) error {
	_, err := cat.TrustDescribed(e, func(e *catalog.Entry) (*protocol.DescribeResponse, error) {
		return supervisor.Describe(context.Background(), e, opts)
	})
	return err
}

// describe starts the selected trusted plugin and shows what it says.
func (s *pluginsScreen) describe() {
	e := s.selected()
	if e == nil {
		return
	}
	entry := *e
	s.status.SetText("Asking " + entry.Name + "…")
	go func() {
		d, err := supervisor.Describe(context.Background(), &entry, host.SupervisorOptions(io.Discard))
		s.a.do(func() {
			if err != nil {
				s.status.SetText(errText(err))
				return
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%s %s (protocol %d)\nsha256: %s\npath: %s\n", d.Name, d.Version, d.ProtocolVersion, entry.SHA256, entry.Path)
			for _, t := range d.Tasks {
				fmt.Fprintf(&b, "task: %s %v\n", t.Kind, t.Dims)
			}
			fmt.Fprintf(&b, "metrics: %s\nhardware: %s\nconfig schema: %s\n", strings.Join(d.Metrics, ", "), strings.Join(d.Hardware, ", "), string(d.ConfigSchema))
			s.details.SetText(b.String())
			s.status.SetText("")
		})
	}()
}
