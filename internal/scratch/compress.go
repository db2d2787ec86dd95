package scratch

import (
	"fmt"
	"strconv"
	"strings"
)

// defaultZstdLevel is btrfs's own level for "compress=zstd".
const defaultZstdLevel = 3

// maxZstdLevel is the highest level btrfs takes for zstd.
const maxZstdLevel = 15

// ParseCompress checks a --compress value and returns it in the form the
// record keeps and btrfs's compress= mount option takes: "" (none) or
// "zstd:LEVEL". "zstd" alone means level 3, btrfs's default.
func ParseCompress(s string) (string, error) {
	switch s {
	case "", "none", "no":
		return "", nil
	case "zstd":
		return fmt.Sprintf("zstd:%d", defaultZstdLevel), nil
	}
	lvl, ok := strings.CutPrefix(s, "zstd:")
	n, err := strconv.Atoi(lvl)
	if !ok || err != nil || n < 1 || n > maxZstdLevel {
		return "", fmt.Errorf("--compress %q: want zstd or zstd:LEVEL with a level from 1 to %d (btrfs's zstd levels; 3 is its default)", s, maxZstdLevel)
	}
	return fmt.Sprintf("zstd:%d", n), nil
}

// mountOptions returns the mount options for a scratch filesystem of
// fsType with compression compress (as ParseCompress returns it).
// btrfs compresses only data it checksums (a nodatasum inode is never
// compressed), so a compressed scratch keeps data checksums: compress=
// replaces nodatasum.
func mountOptions(fsType, compress string) string {
	_, _, opts := mkfsCommand(fsType, "")
	if compress == "" || fsType != "btrfs" {
		return opts
	}
	return "compress=" + compress
}

// checkCompress refuses compression on a filesystem without it.
func checkCompress(fsType, compress string) error {
	if compress != "" && fsType != "btrfs" {
		return fmt.Errorf("scratch up: --compress %s needs --fs btrfs: %s has no transparent compression; use --fs btrfs (the default), or drop --compress", compress, fsType)
	}
	return nil
}
