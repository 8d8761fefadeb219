package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"syscall"

	"tec/driver"
)

// fallbackMemory is the limit of --max-memory auto where the memory
// available cannot be read (no /proc/meminfo): 8 GiB.
const fallbackMemory = 8 << 30

// memLimit is the most memory a run may need; bytes 0 is no limit.
type memLimit struct {
	bytes  int64
	source string // where the limit comes from, for messages
}

// parseMemoryLimit parses --max-memory: "auto" (the memory available, as
// availableMemory reads it with read, or less where the process's resource
// limits leave less: rlimitMemory), "0" (no limit) or a size.
func parseMemoryLimit(s string, read func(string) ([]byte, error)) (memLimit, error) {
	if s == "auto" {
		n, source := availableMemory(read)
		if m, msource, ok := rlimitMemory(read, syscall.Getrlimit); ok && m < n {
			n, source = m, msource
		}
		return memLimit{bytes: n, source: source}, nil
	}
	n, err := parseSize(s)
	if err != nil {
		return memLimit{}, fmt.Errorf("--max-memory: %w", err)
	}
	return memLimit{bytes: n, source: "that --max-memory " + s + " allows"}, nil
}

// parseSize parses a size in bytes: a number with an optional unit, B, kB,
// MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024).
func parseSize(s string) (int64, error) {
	num := strings.TrimRightFunc(s, func(r rune) bool { return r >= 'A' && r <= 'z' })
	unit := strings.TrimSpace(s[len(num):])
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) {
		return 0, fmt.Errorf("want a size such as 512MiB, 8GB or 0, got %q", s)
	}
	units := map[string]float64{"": 1, "B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}
	scale, ok := units[unit]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q in %q (want B, kB, MB, GB, TB, KiB, MiB, GiB or TiB)", unit, s)
	}
	if v*scale >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return int64(v * scale), nil
}

// availableMemory returns the memory a run may take and where that figure
// comes from: MemAvailable of /proc/meminfo, lowered to what the cgroup
// (v2) of the process may still take when that is less; fallbackMemory
// where /proc/meminfo cannot be read.
func availableMemory(read func(string) ([]byte, error)) (int64, string) {
	data, err := read("/proc/meminfo")
	if err != nil {
		return fallbackMemory, "that --max-memory auto allows where /proc/meminfo cannot be read"
	}
	avail, ok := memInfoField(data, "MemAvailable")
	if !ok {
		return fallbackMemory, "that --max-memory auto allows where /proc/meminfo has no MemAvailable"
	}
	n, source := avail, "available (MemAvailable in /proc/meminfo)"
	if limit, err := readCgroupInt(read, "/sys/fs/cgroup/memory.max"); err == nil {
		if cur, err := readCgroupInt(read, "/sys/fs/cgroup/memory.current"); err == nil && limit-cur < n {
			n, source = max(limit-cur, 0), "available to the process's cgroup (memory.max - memory.current)"
		}
	}
	return n, source
}

// runtimeReserve is the address space and data that rlimitMemory counts
// as taken where /proc/self/status cannot be read: about what the Go
// runtime has reserved by the time the limit is read (0.7 to 1.6 GB of
// address space on amd64, depending on the limit).
const runtimeReserve = 2 << 30

// rlimitMemory returns the memory a run may take under the soft limits of
// the process's address space (RLIMIT_AS, ulimit -v) and data segment
// (RLIMIT_DATA, ulimit -d), the smaller of the two, and where that figure
// comes from; ok is false where neither is set. A process past either
// limit gets no more memory from the kernel, and the Go runtime then dies
// with "fatal error: out of memory" instead of returning an error, so such
// a run must be refused before it starts. A run may take two thirds of what
// a limit leaves (the limit less VmSize or VmData of /proc/self/status,
// read with read): the rest is headroom for the runtime's own mappings,
// thread stacks and the garbage the collector has not yet freed. Measured
// with prlimit --as, a run needing 1.6 GB fits in what the limit leaves
// with 3 % to spare (docs/cli.md), so the third is a 1.5-fold margin.
func rlimitMemory(read func(string) ([]byte, error), getrlimit func(resource int, lim *syscall.Rlimit) error) (n int64, source string, ok bool) {
	status, _ := read("/proc/self/status")
	limits := []struct {
		resource int
		field    string // the field of /proc/self/status the limit bounds
		name     string
	}{
		{syscall.RLIMIT_AS, "VmSize", "the address-space limit (RLIMIT_AS, ulimit -v)"},
		{syscall.RLIMIT_DATA, "VmData", "the data-segment limit (RLIMIT_DATA, ulimit -d)"},
	}
	for _, l := range limits {
		var lim syscall.Rlimit
		// RLIM_INFINITY is the largest uint64: no limit.
		if err := getrlimit(l.resource, &lim); err != nil || lim.Cur > math.MaxInt64 {
			continue
		}
		used, found := memInfoField(status, l.field)
		if !found {
			used = runtimeReserve
		}
		left := max(int64(lim.Cur)-used, 0) / 3 * 2
		if !ok || left < n {
			n, ok = left, true
			source = fmt.Sprintf("that %s of %s leaves a run (two thirds of what the process has not taken)", l.name, formatBytes(int64(lim.Cur)))
		}
	}
	return n, source, ok
}

// memInfoField returns the value in bytes of a field of /proc/meminfo.
func memInfoField(data []byte, field string) (int64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			return 0, false
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		return n, true
	}
	return 0, false
}

// readCgroupInt reads a cgroup file holding one number; "max" is an error.
func readCgroupInt(read func(string) ([]byte, error), path string) (int64, error) {
	data, err := read(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(data))
	if s == "max" {
		return 0, errors.New("no limit")
	}
	return strconv.ParseInt(s, 10, 64)
}

// checkMemory refuses a run whose estimated memory exceeds the limit,
// before anything is allocated. Its hint offers -D only where the file
// has constants to set (checkWork's rule).
func (e *env) checkMemory(model, device string, need driver.Memory, limit memLimit) error {
	if limit.bytes == 0 || need.Total <= limit.bytes {
		return nil
	}
	var largest []string
	for _, u := range need.Largest {
		if u.Bytes > 0 {
			largest = append(largest, fmt.Sprintf("%s %s %s", u.Name, u.Type, formatBytes(u.Bytes)))
		}
	}
	what := "its largest tensors: "
	if len(largest) == 1 {
		what = "its largest tensor: "
	}
	hint := "use smaller sizes (-D NAME=VALUE), or set the limit with --max-memory SIZE (0: no limit)"
	if !e.hasConstants() {
		hint = "the file has no constants to make the model smaller: set the limit with --max-memory SIZE (0: no limit), or run it where more memory is free"
	}
	return fmt.Errorf("model %s needs about %s of memory on %s (%s bytes), more than the %s %s; %s%s"+hintSep+"%s",
		model, formatBytes(need.Total), device, thousands(need.Total), formatBytes(limit.bytes), limit.source, what, strings.Join(largest, ", "), hint)
}

// formatBytes formats a number of bytes for people: "7.2 GB".
func formatBytes(n int64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	v, i := float64(n), 0
	for v >= 1000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.3g %s", v, units[i])
}

// thousands formats n with commas between groups of three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
