package scratch

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// mount is one line of /proc/self/mountinfo.
type mount struct {
	dev    string // "major:minor"
	point  string // where it is mounted
	fsType string
	source string
	opts   string // the filesystem's own options
}

// mounts reads /proc/self/mountinfo.
func mounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
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
		out = append(out, mount{
			dev:    fields[2],
			point:  unescape(fields[4]),
			fsType: fields[sep+1],
			source: unescape(fields[sep+2]),
			opts:   strings.Join(fields[sep+3:], " "),
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

// mountAt returns the topmost mount at point, if any.
func mountAt(point string) (*mount, error) {
	ms, err := mounts()
	if err != nil {
		return nil, err
	}
	var found *mount
	for i := range ms {
		if ms[i].point == point {
			found = &ms[i]
		}
	}
	return found, nil
}

// mountsBelow returns the mount points strictly below dir.
func mountsBelow(dir string) ([]string, error) {
	ms, err := mounts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		if strings.HasPrefix(m.point, dir+"/") {
			out = append(out, m.point)
		}
	}
	return out, nil
}
