package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupParentName is the directory, next to or below the server's own
// cgroup, that holds one child group per sandbox.
const cgroupParentName = "agentplane-sandboxes"

// cgroups places sandboxes in per-sandbox control groups when the host
// lets the server create them. It is detected at start-up (detectCgroups):
// cgroup v2 with memory and pids delegated, else the v1 memory and pids
// hierarchies, each independently. What it cannot cover falls back to
// rlimits (see rlimits in bwrap_limits.go).
type cgroups struct {
	v2 bool
	// memParent and pidsParent are the directories sandbox groups are
	// created in; empty when that controller is not usable. On v2 they
	// are the same directory.
	memParent, pidsParent string
}

// cgroupSet is one sandbox's groups.
type cgroupSet struct {
	v2          bool
	memDir      string
	pidsDir     string
	procsFiles  []string
	memCounters string // file with the oom_kill counter
}

// detectCgroups finds writable cgroup parents, or returns nil.
func detectCgroups() *cgroups {
	own, mounts, err := cgroupLayout()
	if err != nil {
		return nil
	}
	if dir, ok := mounts["cgroup2"]; ok {
		if p := v2Parent(dir, own[""]); p != "" {
			return &cgroups{v2: true, memParent: p, pidsParent: p}
		}
	}
	c := &cgroups{}
	for _, ctl := range []string{"memory", "pids"} {
		mount, ok := mounts[ctl]
		if !ok {
			continue
		}
		parent := filepath.Join(mount, own[ctl], cgroupParentName)
		limitFile, value := "memory.limit_in_bytes", "67108864"
		if ctl == "pids" {
			limitFile, value = "pids.max", "64"
		}
		if probeCgroup(parent, limitFile, value) {
			if ctl == "memory" {
				c.memParent = parent
			} else {
				c.pidsParent = parent
			}
		}
	}
	if c.memParent == "" && c.pidsParent == "" {
		return nil
	}
	return c
}

// cgroupLayout reads the server's own cgroup per controller ("" for v2)
// and where each hierarchy is mounted ("cgroup2" for the unified one).
func cgroupLayout() (own, mounts map[string]string, err error) {
	own, mounts = map[string]string{}, map[string]string{}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, nil, err
	}
	for line := range strings.Lines(string(data)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for ctl := range strings.SplitSeq(parts[1], ",") {
			own[ctl] = parts[2]
		}
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent dev root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 || fields[3] != "/" {
			continue // a bind of a sub-tree: paths in /proc/self/cgroup would not match
		}
		switch tail[0] {
		case "cgroup2":
			mounts["cgroup2"] = fields[4]
		case "cgroup":
			for opt := range strings.SplitSeq(tail[2], ",") {
				if opt == "memory" || opt == "pids" {
					mounts[opt] = fields[4]
				}
			}
		}
	}
	return own, mounts, sc.Err()
}

// v2Parent returns a usable v2 parent for sandbox groups: a sibling of
// the server's own group (the no-internal-processes rule forbids children
// with controllers under a group that holds processes), with memory and
// pids enabled for its children; "" when that is not allowed.
func v2Parent(mount, own string) string {
	ownDir := filepath.Join(mount, own)
	ctrls, err := os.ReadFile(filepath.Join(ownDir, "cgroup.controllers"))
	if err != nil || !hasFields(ctrls, "memory", "pids") {
		return ""
	}
	parent := filepath.Join(filepath.Dir(ownDir), cgroupParentName)
	if own == "/" {
		parent = filepath.Join(ownDir, cgroupParentName)
	}
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return ""
	}
	if writeCgroup(filepath.Join(parent, "cgroup.subtree_control"), "+memory +pids") != nil {
		return ""
	}
	if !probeCgroup(parent, "memory.max", "67108864") {
		return ""
	}
	return parent
}

// probeCgroup checks that a child group can be created under parent and
// limited, then removes it.
func probeCgroup(parent, limitFile, value string) bool {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return false
	}
	probe, err := os.MkdirTemp(parent, "probe-")
	if err != nil {
		return false
	}
	defer os.Remove(probe)
	return writeCgroup(filepath.Join(probe, limitFile), value) == nil
}

// create makes the groups for sandbox id with l's memory and process
// limits. On v1 the swap limit is set equal to the memory limit where swap
// accounting exists, so a hog cannot page out instead of being stopped.
func (c *cgroups) create(id string, l Limits) (*cgroupSet, error) {
	s := &cgroupSet{v2: c.v2}
	mem := strconv.FormatInt(l.MemoryBytes, 10)
	procs := strconv.Itoa(l.MaxProcs)
	var writes [][2]string
	if c.memParent != "" {
		s.memDir = filepath.Join(c.memParent, id)
		if c.v2 {
			writes = append(writes, [2]string{"memory.max", mem}, [2]string{"memory.swap.max", "0"})
			s.memCounters = filepath.Join(s.memDir, "memory.events")
		} else {
			writes = append(writes, [2]string{"memory.limit_in_bytes", mem}, [2]string{"memory.memsw.limit_in_bytes", mem})
			s.memCounters = filepath.Join(s.memDir, "memory.oom_control")
		}
	}
	if c.pidsParent != "" {
		s.pidsDir = filepath.Join(c.pidsParent, id)
	}
	for _, dir := range s.dirs() {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		s.procsFiles = append(s.procsFiles, filepath.Join(dir, "cgroup.procs"))
	}
	if s.pidsDir != "" {
		writes = append(writes, [2]string{"pids.max", procs})
	}
	for _, w := range writes {
		dir := s.memDir
		if w[0] == "pids.max" {
			dir = s.pidsDir
		}
		err := writeCgroup(filepath.Join(dir, w[0]), w[1])
		if err != nil && !(errors.Is(err, os.ErrNotExist) && strings.Contains(w[0], "swap")) {
			_ = s.remove()
			return nil, fmt.Errorf("limit cgroup %s: %w", w[0], err)
		}
	}
	return s, nil
}

// dirs are the set's distinct directories.
func (s *cgroupSet) dirs() []string {
	var out []string
	if s.memDir != "" {
		out = append(out, s.memDir)
	}
	if s.pidsDir != "" && s.pidsDir != s.memDir {
		out = append(out, s.pidsDir)
	}
	return out
}

// join moves pid into the set. The process is still held at its gate, so
// everything it will start is born inside.
func (s *cgroupSet) join(pid int) error {
	for _, f := range s.procsFiles {
		if err := writeCgroup(f, strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("join cgroup: %w", err)
		}
	}
	return nil
}

// counters returns how often the kernel OOM-killed in the set and how
// often a fork hit the process limit.
func (s *cgroupSet) counters() (oomKills, forkFails int64) {
	if s.memCounters != "" {
		oomKills = readCounter(s.memCounters, "oom_kill")
	}
	if s.pidsDir != "" {
		forkFails = readCounter(filepath.Join(s.pidsDir, "pids.events"), "max")
	}
	return oomKills, forkFails
}

// remove kills anything left in the set and deletes its directories.
func (s *cgroupSet) remove() error {
	var errs []error
	for _, dir := range s.dirs() {
		var err error
		for range 100 {
			if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			killCgroup(dir)
			time.Sleep(10 * time.Millisecond)
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func killCgroup(dir string) {
	data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for f := range strings.FieldsSeq(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// writeCgroup writes one value to an existing cgroup file (never creating
// it, so a missing optional knob reports ErrNotExist).
func writeCgroup(file, value string) error {
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readCounter reads "name value" from a flat-keyed cgroup file.
func readCounter(file, name string) int64 {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && k == name {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func hasFields(data []byte, want ...string) bool {
	have := strings.Fields(string(bytes.TrimSpace(data)))
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}
