package scratch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/pristinedb/pristine/internal/rootdir"
)

// recordName is the file under the root that records the scratch filesystem.
const recordName = "scratch.json"

// record is what scratch.json holds. It is written before the image is
// created, so a crash half-way leaves enough behind for Down to clean up.
type record struct {
	State string `json:"state"` // "creating", then "up"
	FS    string `json:"fs"`
	Size  int64  `json:"size"`
	Dir   string `json:"dir"`
	Image string `json:"image"`
	Loop  string `json:"loop,omitempty"`
	// Compress is the btrfs compression it is mounted with ("zstd:3"),
	// so a mount again after a reboot uses it too.
	Compress string    `json:"compress,omitempty"`
	Created  time.Time `json:"created"`
}

// describe names the options the record was made with, as scratch up
// takes them.
func (rec *record) describe() string {
	s := fmt.Sprintf("%s of %s in %s", rec.FS, FormatSize(rec.Size), rec.Dir)
	if rec.Compress != "" {
		s += " with --compress " + rec.Compress
	}
	return s
}

// imagePath is the only image a root may create or delete in dir.
func imagePath(root *rootdir.Root, dir string) string {
	return filepath.Join(dir, "pristine-"+root.ID()+".img")
}

// readRecord returns the root's record, or nil when there is none. A record
// naming an image other than this root's own is refused.
func readRecord(root *rootdir.Root) (*record, error) {
	b, err := os.ReadFile(filepath.Join(root.Path, recordName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", recordName, err)
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("read %s: %w; remove it by hand after checking that nothing is mounted at %s", recordName, err, root.Data())
	}
	if rec.Dir == "" || !filepath.IsAbs(rec.Dir) || rec.Image != imagePath(root, rec.Dir) {
		return nil, fmt.Errorf("%s names image %q, which is not this root's (want pristine-%s.img); pristine will not touch it: fix or remove %s by hand",
			recordName, rec.Image, root.ID(), filepath.Join(root.Path, recordName))
	}
	return &rec, nil
}

// writeRecord writes the record to a temporary file and renames it into place.
func writeRecord(root *rootdir.Root, rec *record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(root.Path, recordName+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", recordName, err)
	}
	if err := os.Rename(tmp, filepath.Join(root.Path, recordName)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", recordName, err)
	}
	return nil
}

func removeRecord(root *rootdir.Root) error {
	err := os.Remove(filepath.Join(root.Path, recordName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", recordName, err)
	}
	return nil
}
