// Command pristine gives every test in a parallel CI suite its own pristine
// copy of a real MariaDB database. All logic lives in internal/ packages; this
// file only hands control to the command tree.
package main

import (
	"os"

	"github.com/pristinedb/pristine/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
