// Package app holds AMID's user interfaces: the desktop screens (app/ui, Fyne) and the
// headless command-line program (app/cli, built as bin/amid from app/cmd/amid). The CLI and
// everything it imports build with CGO_ENABLED=0 and import no Fyne package.
package app
