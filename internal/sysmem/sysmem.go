// Package sysmem reads how much memory the machine has and can still give.
package sysmem

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
)

// Available is MemAvailable from /proc/meminfo, in bytes.
func Available() (int64, error) { return meminfo("MemAvailable:") }

// AvailableOr is Available, or def when /proc/meminfo cannot say.
func AvailableOr(def int64) int64 {
	if n, err := Available(); err == nil {
		return n
	}
	return def
}

// Total is MemTotal from /proc/meminfo, in bytes.
func Total() (int64, error) { return meminfo("MemTotal:") }

func meminfo(key string) (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == key {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no " + key + " in /proc/meminfo")
}
