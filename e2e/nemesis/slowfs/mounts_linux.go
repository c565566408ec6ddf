package slowfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MountInfo is one line of /proc/self/mountinfo.
type MountInfo struct {
	Dir    string // the mount point
	FSType string // "fuse.slowfs", "tmpfs", ...
	Source string // the name Mount was given, for a slow file system
}

// Mounts lists the mounts of the calling process's mount namespace,
// innermost last.
func Mounts() ([]MountInfo, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return parseMountInfo(b)
}

// parseMountInfo reads mountinfo lines: "36 35 98:0 /mnt1 /mnt2 rw,noatime
// master:1 - ext3 /dev/root rw,errors=continue" (proc(5)); the optional
// fields before "-" vary in number.
func parseMountInfo(b []byte) ([]MountInfo, error) {
	var ms []MountInfo
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if len(f) < 5 || sep < 0 || sep+2 >= len(f) {
			return nil, fmt.Errorf("slowfs: unexpected mountinfo line %q", sc.Text())
		}
		ms = append(ms, MountInfo{Dir: unescape(f[4]), FSType: f[sep+1], Source: unescape(f[sep+2])})
	}
	return ms, sc.Err()
}

// unescape decodes the octal escapes (\040 for a space) mountinfo writes
// for blanks and backslashes.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
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
