// Command amid is AMID's headless program: inspect and convert images, grade submissions,
// manage plugins and run tasks. See `amid --help`.
package main

import (
	"os"

	"amid/app/cli"
)

func main() { os.Exit(cli.Run()) }
