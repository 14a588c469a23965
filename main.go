// Command amid-desktop is AMID's desktop application. Fyne's tooling reads FyneApp.toml
// beside this file; the screens live in app/ui.
//
// Usage:
//
//	amid-desktop                  the Home screen: recent runs, new task, review, export
//	amid-desktop IMAGE [LABELS]   the Viewer screen on an image (and its label image)
//	amid-desktop -lane-program    print the amid program the process and Slurm executors
//	                              run for each lane-fold (amid lane exec), and exit
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"fyne.io/fyne/v2/app"

	"amid/app/ui"
	"amid/host/lanejob"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: amid-desktop [IMAGE [LABELS] | RUN] | amid-desktop -lane-program")
		flag.PrintDefaults()
	}
	laneProgram := flag.Bool("lane-program", false, "print the amid program that trains each lane-fold under the process and Slurm executors, and exit")
	flag.Parse()
	if *laneProgram {
		p, err := lanejob.Program()
		if err != nil {
			fmt.Fprintln(os.Stderr, "amid-desktop:", err)
			os.Exit(1)
		}
		fmt.Println(p)
		return
	}
	var o ui.Options
	switch flag.NArg() {
	case 0:
	case 1:
		if _, err := os.Stat(filepath.Join(flag.Arg(0), "run.json")); err == nil {
			o.Run = flag.Arg(0) // a run folder: its review
		} else {
			o.Image = flag.Arg(0)
		}
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
