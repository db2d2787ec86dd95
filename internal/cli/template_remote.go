package cli

import (
	"context"

	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pristinedb/pristine/internal/catalog"
	"github.com/pristinedb/pristine/internal/oci"
	"github.com/pristinedb/pristine/internal/template"
	"github.com/pristinedb/pristine/internal/units"
)

// remoteFlags registers the flags that say how to reach a registry.
func remoteFlags(fl *pflag.FlagSet, r *oci.Remote) {
	fl.BoolVar(&r.PlainHTTP, "plain-http", false, "talk plain HTTP to the registry (a registry on loopback)")
	fl.StringVar(&r.CAFile, "ca-file", "", "PEM file of certificate authorities to trust for the registry")
	fl.IntVar(&r.Parallel, "parallel", 4, "chunks moved at once")
}

func (g *Globals) remoteLog(r *oci.Remote) {
	if !g.JSON || g.ErrIsTerminal() {
		r.Log = func(format string, args ...any) { g.stderrf("pristine: "+format, args...) }
	}
}

func newTemplatePushCmd(g *Globals) *cobra.Command {
	var opt oci.PushOptions
	var chunk string
	cmd := &cobra.Command{
		Use:   "push NAME|HASH REF",
		Short: "upload a template to an OCI registry (REF: host/repository[:tag])",
		Long: `Uploads a template as an OCI artifact: its archive in chunks, uploaded in parallel.
Without a tag in REF, the template is tagged NAME-HASH32 (what build --cache looks
for) and NAME (its latest push). A push that failed half way resumes: chunks the
registry has are skipped. Credentials: docker login (config.json and credential
helpers), or PRISTINE_REGISTRY_USERNAME and PRISTINE_REGISTRY_PASSWORD, or
PRISTINE_REGISTRY_TOKEN.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.openBuilder(cmd.Context(), "auto")
			if err != nil {
				return err
			}
			m, err := st.Catalog().Get(args[0])
			if err != nil {
				return err
			}
			ref, err := oci.ParseRef(args[1])
			if err != nil {
				return err
			}
			if ref.Reference.Reference == "" {
				opt.Tags = []string{oci.ContentTag(m.Name, m.Hash), m.Name}
			}
			if opt.ChunkSize, err = parseBytes(chunk); err != nil {
				return err
			}
			g.remoteLog(&opt.Remote)
			stats, err := oci.Push(cmd.Context(), st, m, args[1], opt)
			if err != nil {
				return err
			}
			if g.JSON {
				return g.printJSON(stats)
			}
			fmt.Fprintf(g.IO.Out, "pushed template %s to %s (tags %v): %s in %d chunks, %s uploaded, %d already there, %.2fs\n",
				m.Name, stats.Ref, stats.Tags, units.Bytes(stats.ArchiveBytes), stats.Chunks, units.Bytes(stats.Uploaded), stats.Skipped, stats.Elapsed.Seconds())
			return nil
		},
	}
	fl := cmd.Flags()
	remoteFlags(fl, &opt.Remote)
	fl.BoolVar(&opt.Compress, "compress", false, "compress extents with zstd (smaller uploads, slower pack, no reflink on pull)")
	fl.StringVar(&chunk, "chunk-size", "32M", "size of one layer")
	return cmd
}

func newTemplatePullCmd(g *Globals) *cobra.Command {
	var opt oci.PullOptions
	cmd := &cobra.Command{
		Use:   "pull REF [NAME]",
		Short: "download a template from an OCI registry into the store",
		Long: `Downloads a template pushed with template push: REF is host/repository:tag, or
host/repository with the template NAME (its latest push). Every chunk is checked
against its digest, a template of another server version is refused before
download, and the template appears only when complete. An interrupted pull
resumes: verified chunks are kept.

The pulled template is found by its name (pool up --template NAME), but the
content key its manifest claims is not trusted: it is filed under a key
derived from the manifest's digest and never answers template build. To
share builds across a fleet, use template build --cache REPO, which trusts
REPO to answer for content keys (docs/security.md).`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.openBuilder(cmd.Context(), "auto")
			if err != nil {
				return err
			}
			if len(args) == 2 {
				opt.Name = args[1]
			}
			g.remoteLog(&opt.Remote)
			if g.ErrIsTerminal() {
				opt.Progress = g.IO.Err
			}
			m, stats, err := oci.Pull(cmd.Context(), st, args[0], opt)
			if err != nil {
				return err
			}
			if g.JSON {
				return g.printJSON(map[string]any{"template": m.API(), "pull": stats})
			}
			if stats.Present {
				fmt.Fprintf(g.IO.Out, "template %s already here: %s (%s)\n", m.Name, m.Hash[:12], units.Bytes(m.Bytes))
				return nil
			}
			fmt.Fprintf(g.IO.Out, "pulled template %s: %s (%s): %s downloaded in %.2fs, imported in %.2fs\n",
				m.Name, m.Hash[:12], units.Bytes(m.Bytes), units.Bytes(stats.Downloaded), stats.Download.Seconds(), stats.Import.Seconds())
			return nil
		},
	}
	remoteFlags(cmd.Flags(), &opt.Remote)
	return cmd
}

// cacheFlags are the flags `template build` takes for a registry cache.
type cacheFlags struct {
	oci.CacheOptions
}

func addCacheFlags(fl *pflag.FlagSet, c *cacheFlags) {
	fl.StringVar(&c.Repo, "cache", "", "OCI repository shared by a fleet (e.g. ghcr.io/acme/templates): pull the template if it is there, else build it once and push it")
	fl.DurationVar(&c.Wait, "cache-wait", 20*time.Minute, "with --cache: longest wait for another runner's build before building here")
	remoteFlags(fl, &c.Remote)
}

// runCachedBuild is `template build --cache REPO`.
func runCachedBuild(ctx context.Context, g *Globals, plan *template.Plan, f BuildFlags) (*catalog.Meta, bool, error) {
	g.remoteLog(&f.Cache.Remote)
	m, outcome, err := oci.CachedBuild(ctx, plan, f.Cache.CacheOptions)
	if err != nil {
		return nil, false, err
	}
	if outcome == oci.FromRegistry {
		g.stderrf("pristine: template %s pulled from %s", m.Name, f.Cache.Repo)
	}
	return m, outcome == oci.BuiltHere, nil
}
