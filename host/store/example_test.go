package store_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"amid/host/store"
)

// A run with one lane: the lane's state and the event that explains it are written in
// one transaction, and a second process that opens the same file is told AMID runs.
func Example() {
	dir, err := os.MkdirTemp("", "amid-store-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(filepath.Join(dir, "amid.db"), 0)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	if err := st.CreateRun(&store.Run{ID: "liver-1", Task: "liver.yaml"}); err != nil {
		log.Fatal(err)
	}
	lane := &store.Lane{RunID: "liver-1", ID: "unet-2d", Plugin: "segmentation", State: store.LanePending}
	if err := st.PutLane(lane, &store.Event{Kind: "lane", Message: "lane unet-2d planned"}); err != nil {
		log.Fatal(err)
	}
	got, err := st.Lane("liver-1", "unet-2d")
	if err != nil {
		log.Fatal(err)
	}
	evs, err := st.Events("liver-1", "") // the run's whole log, in order
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Plugin, got.State)
	for _, ev := range evs {
		fmt.Println(ev.Seq, ev.Kind, ev.Message)
	}

	_, err = store.Open(filepath.Join(dir, "amid.db"), 50*time.Millisecond)
	fmt.Println(errors.Is(err, store.ErrLocked))
	// Output:
	// segmentation pending
	// 1 run run liver-1 created
	// 2 lane lane unet-2d planned
	// true
}
