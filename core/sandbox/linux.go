//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// oPath is O_PATH from <fcntl.h> (not in package syscall).
const oPath = 0x200000

func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
}

// probe says what this machine can contain, without starting anything:
// Landlock's ABI, and whether we may make namespaces (root with
// CAP_SYS_ADMIN, or user namespaces enabled). A namespace start refused
// at run time downgrades the level then (Sandbox.Fallback).
func probe() (Level, []string) {
	var why []string
	abi := landlockABI()
	if abi == 0 {
		why = append(why, "Landlock is not available (Linux 5.13+ with it enabled)")
	}
	ns := canNamespace()
	if !ns {
		why = append(why, "no PID and mount namespaces (they need root with CAP_SYS_ADMIN)")
	}
	switch {
	case abi > 0 && ns:
		return Full, nil
	case abi > 0:
		return LandlockOnly, why
	}
	return None, why
}

// canNamespace: root with CAP_SYS_ADMIN. Another user would need a user
// namespace, whose uid map dsh cannot write for its child: dsh makes
// itself non-dumpable (so no same-user process reads its environ), which
// makes the child's /proc files root's until it execs (measured: EACCES).
// Non-root users therefore get Landlock alone.
func canNamespace() bool {
	return os.Geteuid() == 0 && hasCapSysAdmin()
}

// hasCapSysAdmin reads CapEff (bit 21) from /proc/self/status.
func hasCapSysAdmin() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			var caps uint64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%x", &caps); err != nil {
				return false
			}
			return caps&(1<<21) != 0
		}
	}
	return false
}

func needUserNS() bool { return os.Geteuid() != 0 }

func cloneFlags(netns bool) uintptr {
	f := uintptr(syscall.CLONE_NEWPID | syscall.CLONE_NEWNS)
	if netns {
		f |= syscall.CLONE_NEWNET
	}
	if needUserNS() {
		f |= syscall.CLONE_NEWUSER
	}
	return f
}

// Apply is the reaper's setup for a Policy: the mounts (in the namespaces
// the reaper was started in), then Landlock on the reaper itself, which
// the command inherits.
func Apply(p Policy) error {
	if p.Namespaces {
		if err := mountView(p); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	if err := restrict(p); err != nil {
		return fmt.Errorf("sandbox: landlock: %w", err)
	}
	return nil
}

// mountView makes the command's view of the file system: our mounts
// private, a fresh /proc (the new PID namespace: only the command's
// processes), a private /tmp, and every hidden place covered. Writable
// folders that lie under a covered place are bound back on top.
func mountView(p Policy) error {
	if err := syscall.Mount("none", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	covers := append([]string{"/tmp"}, p.Hidden...)
	type keep struct {
		path string
		fd   int
	}
	var keeps []keep
	for _, w := range p.Writable {
		if !under(w, covers) {
			continue
		}
		fd, err := syscall.Open(w, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			continue // a missing folder needs no keeping
		}
		keeps = append(keeps, keep{w, fd})
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	if err := syscall.Mount("tmpfs", "/tmp", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("private /tmp: %w", err)
	}
	for _, h := range p.Hidden {
		if err := cover(h); err != nil {
			return err
		}
	}
	for _, k := range keeps {
		if err := os.MkdirAll(k.path, 0o755); err != nil {
			return fmt.Errorf("keep %s: %w", k.path, err)
		}
		src := fmt.Sprintf("/proc/self/fd/%d", k.fd)
		if err := syscall.Mount(src, k.path, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("keep %s: %w", k.path, err)
		}
		syscall.Close(k.fd)
	}
	return nil
}

// cover hides one place: an empty tmpfs over a folder, /dev/null over a
// file. Missing places need nothing.
func cover(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("hide %s: %w", path, err)
	}
	if fi.IsDir() {
		err = syscall.Mount("tmpfs", path, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=0755,size=16m")
	} else {
		err = syscall.Mount("/dev/null", path, "", syscall.MS_BIND, "")
	}
	if err != nil {
		return fmt.Errorf("hide %s: %w", path, err)
	}
	return nil
}

func under(path string, roots []string) bool {
	for _, r := range roots {
		if rel, err := filepath.Rel(r, path); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// restrict applies Landlock to the calling thread, which the caller
// keeps locked (runtime.LockOSThread) and starts the command from, so the
// command inherits it: read and execute everywhere, write the writable
// folders, /tmp and /dev; no signals or abstract sockets out of the
// domain; no TCP when the network is off without a network namespace. A
// kernel without some right leaves it out (best effort). One thread, not
// all (go-landlock's all-threads path): the reaper only needs the thread
// that forks the command, and the all-threads path can stall on a busy
// reaper's signals.
func restrict(p Policy) error {
	writable := []string{"/dev"}
	if !p.ReadOnly {
		writable = append(writable, "/tmp")
		writable = append(writable, p.Writable...)
	}
	cfg := landlock.V7.BestEffort()
	if p.Network || p.Namespaces {
		cfg.HandledAccessNet = 0
	}
	fd, flags, err := cfg.NewRulesetFD(
		landlock.RODirs("/"),
		landlock.RWDirs(existing(writable)...).WithRefer().WithIoctlDev(),
	)
	if err != nil {
		return err
	}
	if fd < 0 {
		return nil // no Landlock here (the probe said so)
	}
	defer syscall.Close(fd)
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", errno)
	}
	return llsys.LandlockRestrictSelf(fd, flags)
}

// prSetNoNewPrivs is PR_SET_NO_NEW_PRIVS from <linux/prctl.h>.
const prSetNoNewPrivs = 38

func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			out = append(out, p)
		}
	}
	return out
}
