package verify

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteText prints a report for people: what was compared, then each
// difference with the source's and the target's text.
func WriteText(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "source: %s\ntarget: %s\n", r.Source, r.Target)
	pairs := make([]string, len(r.Pairs))
	for i, p := range r.Pairs {
		pairs[i] = p.Source
		if p.Target != p.Source {
			pairs[i] += " -> " + p.Target
		}
	}
	fmt.Fprintf(&b, "schemas: %s\n", strings.Join(pairs, ", "))
	kinds := make([]string, 0, len(r.Objects))
	for k := range r.Objects {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool { return kindOrder[kinds[i]] < kindOrder[kinds[j]] })
	counts := make([]string, len(kinds))
	for i, k := range kinds {
		counts[i] = fmt.Sprintf("%d %s", r.Objects[k], plural(k, r.Objects[k]))
	}
	fmt.Fprintf(&b, "compared: %s in %.2fs\n", strings.Join(counts, ", "), r.Seconds)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "not compared: %s\n", n)
	}
	for _, d := range r.Known {
		b.WriteString("\nknown difference: " + d.Kind + " " + d.Object)
		if d.Part != "" {
			b.WriteString(": " + d.Part)
		}
		fmt.Fprintf(&b, " (%s, docs/security.md)\n", knownNote(d))
		if d.Source != "" {
			fmt.Fprintf(&b, "  source: %s\n", indent(d.Source))
		}
		if d.Target != "" {
			fmt.Fprintf(&b, "  target: %s\n", indent(d.Target))
		}
	}
	for _, d := range r.Diffs {
		b.WriteString("\n" + d.Kind + " " + d.Object)
		if d.Part != "" {
			b.WriteString(": " + d.Part)
		}
		switch d.Change {
		case Missing:
			b.WriteString(" is missing in the target\n")
		case Extra:
			b.WriteString(" is only in the target\n")
		default:
			b.WriteString(" differs\n")
		}
		if d.Source != "" {
			fmt.Fprintf(&b, "  source: %s\n", indent(d.Source))
		}
		if d.Target != "" {
			fmt.Fprintf(&b, "  target: %s\n", indent(d.Target))
		}
	}
	if r.Clean() && len(r.Known) > 0 {
		fmt.Fprintf(&b, "\nclean: the target is the source, object for object, but for %d known %s\n", len(r.Known), plural("difference", len(r.Known)))
	} else if r.Clean() {
		b.WriteString("clean: the target is the source, object for object\n")
	} else {
		fmt.Fprintf(&b, "\n%d %s\n", len(r.Diffs), plural("difference", len(r.Diffs)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n          ") }

func plural(word string, n int) string {
	if n == 1 {
		return word
	}
	switch {
	case strings.HasSuffix(word, "y"):
		return word[:len(word)-1] + "ies"
	case strings.HasSuffix(word, "s"):
		return word + "es"
	}
	return word + "s"
}
