// Package mountinfo reads the kernel's table of mounts, for code that
// must know what is mounted where before it unmounts or deletes anything.
package mountinfo

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Mount is one line of /proc/self/mountinfo.
type Mount struct {
	Dev     string // "major:minor"
	Point   string // where it is mounted
	FSType  string
	Source  string
	Options string // the filesystem's own options
	// MountOptions are the mount point's own options (ro or rw, nosuid,
	// ...), which can differ from its filesystem's.
	MountOptions string
}

// Read reads /proc/self/mountinfo.
func Read() ([]Mount, error) { return readFile("/proc/self/mountinfo") }

// ReadPID reads the mount table of process pid's mount namespace.
func ReadPID(pid int) ([]Mount, error) {
	return readFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
}

func readFile(path string) ([]Mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parse(f)
}

// parse reads mountinfo lines.
func parse(r io.Reader) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" && i >= 6 {
				sep = i
				break
			}
		}
		if sep < 0 || len(fields) < sep+3 {
			return nil, fmt.Errorf("mountinfo: malformed line %q", sc.Text())
		}
		out = append(out, Mount{
			Dev:     fields[2],
			Point:   unescape(fields[4]),
			FSType:  fields[sep+1],
			Source:  unescape(fields[sep+2]),
			Options: strings.Join(fields[sep+3:], " "),

			MountOptions: fields[5],
		})
	}
	return out, sc.Err()
}

// unescape undoes mountinfo's octal escapes (\040 for a space and so on).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// At returns the topmost mount at point, if any.
func At(point string) (*Mount, error) {
	ms, err := Read()
	if err != nil {
		return nil, err
	}
	var found *Mount
	for i := range ms {
		if ms[i].Point == point {
			found = &ms[i]
		}
	}
	return found, nil
}

// Below returns the mount points strictly below dir.
func Below(dir string) ([]string, error) {
	ms, err := Read()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		if strings.HasPrefix(m.Point, dir+"/") {
			out = append(out, m.Point)
		}
	}
	return out, nil
}

// Of returns the mount that holds path: the topmost mount whose point is
// path or its nearest ancestor (path should be absolute and resolved).
func Of(path string) (*Mount, error) {
	ms, err := Read()
	if err != nil {
		return nil, err
	}
	var found *Mount
	for i := range ms {
		p := ms[i].Point
		if p == path || p == "/" || strings.HasPrefix(path, p+"/") {
			if found == nil || len(p) >= len(found.Point) {
				found = &ms[i]
			}
		}
	}
	return found, nil
}

// Option returns the value of the filesystem option name (name=VALUE)
// in the mount's options, and whether it is there.
func (m *Mount) Option(name string) (string, bool) {
	for _, o := range strings.Split(m.Options, ",") {
		if k, v, _ := strings.Cut(o, "="); k == name {
			return v, true
		}
	}
	return "", false
}
