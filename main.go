// Command amid-desktop is AMID's desktop application. Fyne's tooling reads FyneApp.toml
// beside this file; the screens live in app/ui.
package main

import (
	"log"

	"fyne.io/fyne/v2/app"

	"amid/app/ui"
)

func main() {
	a := app.NewWithID("org.amid.desktop")
	w, err := ui.NewMainWindow(a)
	if err != nil {
		log.Fatal(err)
	}
	w.ShowAndRun()
}
