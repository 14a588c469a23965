// Command amid-desktop is AMID's desktop application. Fyne's tooling reads FyneApp.toml
// beside this file; the screens live in app/ui.
//
// Usage:
//
//	amid-desktop                  the Home screen: recent runs, new task, review, export
//	amid-desktop IMAGE [LABELS]   the Viewer screen on an image (and its label image)
package main

import (
	"flag"
	"fmt"
	"log"
	"os"

	"fyne.io/fyne/v2/app"

	"amid/app/ui"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: amid-desktop [IMAGE [LABELS]]")
		flag.PrintDefaults()
	}
	flag.Parse()
	var o ui.Options
	switch flag.NArg() {
	case 0:
	case 1:
		o.Image = flag.Arg(0)
	case 2:
		o.Image, o.Labels = flag.Arg(0), flag.Arg(1)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err := checkDisplay(os.Getenv("DISPLAY"), x11Sockets); err != nil {
		fmt.Fprintln(os.Stderr, "amid-desktop:", err)
		os.Exit(1)
	}
	a := app.NewWithID("org.amid.desktop")
	w, err := ui.New(a, o)
	if err != nil {
		log.Fatal(err)
	}
	w.W.ShowAndRun()
}
