// Command gendocs writes the man pages and shell completions of pristine
// and pristine-bench from their command trees, for scripts/release.sh:
//
//	go run ./scripts/gendocs -out DIR -version VERSION -date UNIX
//
// DIR/BINARY/man/man1 gets one page per command of BINARY (cobra's man
// pages), DIR/BINARY/completions its bash, zsh and fish completions, the same text the
// binaries' own `completion` commands print. Nothing here is in either
// binary: the man pages' renderer stays out of the product.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/pristinedb/pristine/internal/bench/benchcli"
	"github.com/pristinedb/pristine/internal/cli"
)

func main() {
	out := flag.String("out", "dist", "directory to write BINARY/man/man1 and BINARY/completions under")
	version := flag.String("version", "devel", "version named in the man pages' footer")
	date := flag.Int64("date", 0, "the man pages' date, in seconds since 1970 (the commit's, for reproducible pages; 0: now)")
	flag.Parse()
	when := time.Now().UTC()
	if *date > 0 {
		when = time.Unix(*date, 0).UTC()
	}
	for _, root := range []*cobra.Command{cli.NewRoot(cli.Stdio{}), benchcli.NewRoot(cli.OSStdio())} {
		if err := write(root, *out, *version, when); err != nil {
			fmt.Fprintf(os.Stderr, "gendocs: %s: %v\n", root.Name(), err)
			os.Exit(1)
		}
	}
}

// write writes root's man pages and completions under out/NAME.
func write(root *cobra.Command, out, version string, when time.Time) error {
	out = filepath.Join(out, root.Name())
	root.DisableAutoGenTag = true
	escapeAngles(root)
	man := filepath.Join(out, "man", "man1")
	if err := os.MkdirAll(man, 0o755); err != nil {
		return err
	}
	hdr := &doc.GenManHeader{Section: "1", Date: &when, Source: "pristine " + version, Manual: "pristine manual"}
	if err := doc.GenManTree(root, hdr, man); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	comp := filepath.Join(out, "completions")
	if err := os.MkdirAll(comp, 0o755); err != nil {
		return err
	}
	name := root.Name()
	for file, gen := range map[string]func(string) error{
		name + ".bash": func(p string) error { return root.GenBashCompletionFileV2(p, true) },
		"_" + name:     root.GenZshCompletionFile,
		name + ".fish": func(p string) error { return root.GenFishCompletionFile(p, true) },
	} {
		if err := gen(filepath.Join(comp, file)); err != nil {
			return fmt.Errorf("completion %s: %w", file, err)
		}
	}
	return nil
}

// escapeAngles keeps the help texts' placeholders (<root>, <pool>) in the
// man pages: their markdown renderer would take them for HTML tags and drop
// them.
func escapeAngles(c *cobra.Command) {
	esc := strings.NewReplacer("<", `\<`, ">", `\>`)
	c.Short, c.Long = esc.Replace(c.Short), esc.Replace(c.Long)
	for _, sub := range c.Commands() {
		escapeAngles(sub)
	}
}
