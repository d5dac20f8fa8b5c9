//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"unsafe"

	"github.com/dsh-dev/dsh/core/proc"

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

// probe says what this machine can contain: Landlock's ABI, and which
// namespaces we may make. Root with CAP_SYS_ADMIN starts the reaper in
// them itself (a start refused at run time downgrades then:
// Sandbox.Fallback). Another user cannot: a user namespace's uid map must
// be written by the parent, and dsh makes itself non-dumpable (so no
// same-user process reads its environ), which makes its child's /proc
// files root's until the child execs (measured: EACCES). The reaper,
// exec'd and so dumpable, can: it starts a second reaper in new user, PID
// and mount namespaces (Policy.Enter). Whether the kernel lets it
// (sysctls, AppArmor's restrict_unprivileged_userns, a seccomp filter, a
// /proc it may not mount) is known only by trying, so the reaper runs
// that once, here, with the machine's policy and /bin/true.
func probe(cfg Config) probed {
	var pr probed
	pr.abi = landlockABI()
	if pr.abi == 0 {
		pr.why = append(pr.why, "Landlock is not available (Linux 5.13+ with it enabled)")
		return pr
	}
	switch {
	case os.Geteuid() == 0 && hasCapSysAdmin():
		pr.level = Full
	case cfg.Reaper == "":
		pr.level = LandlockOnly
		pr.why = append(pr.why, "no PID and mount namespaces (root with CAP_SYS_ADMIN, or a reaper binary for a user namespace, is needed)")
	default:
		if err := probeUserNS(cfg); err != nil {
			pr.level = LandlockOnly
			pr.why = append(pr.why, "unprivileged user namespaces are refused here (a sysctl, AppArmor or seccomp): "+err.Error())
			break
		}
		pr.level, pr.userns = Full, true
	}
	return pr
}

// probeUserNS runs the reaper with the machine's policy in a user
// namespace over /bin/true, and returns what went wrong. Its environment
// is empty: the reapers are dumpable, so dsh's (the API key) must not be
// theirs.
func probeUserNS(cfg Config) error {
	var out bytes.Buffer
	p, err := proc.Start(probeCommand(cfg, &out))
	if err != nil {
		return err
	}
	<-p.Done()
	if st := p.State(); st == nil || !st.Success() {
		msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(out.String()), "dsh: "))
		if msg == "" {
			msg = fmt.Sprintf("the probe ended with %v", p.WaitErr())
		}
		return errors.New(msg)
	}
	return nil
}

func probeCommand(cfg Config, out io.Writer) proc.Config {
	pol := Policy{Hidden: clean(cfg.Hidden), Network: cfg.Network, Enter: true}
	return proc.Config{Argv: proc.ReaperArgv(cfg.Reaper, 0, pol.encode(), "/bin/true"),
		Env: []string{}, Stdout: out, Stderr: out, TailLines: -1}
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

// cloneFlags are the namespaces of a contained command: PID and mount,
// network when it is off; with user, for the second reaper of a user
// without CAP_SYS_ADMIN.
func cloneFlags(netns, user bool) uintptr {
	f := uintptr(syscall.CLONE_NEWPID | syscall.CLONE_NEWNS)
	if netns {
		f |= syscall.CLONE_NEWNET
	}
	if user {
		f |= syscall.CLONE_NEWUSER
	}
	return f
}

// capSysAdmin is CAP_SYS_ADMIN from <linux/capability.h>.
const capSysAdmin = 21

// enter is the first reaper's setup for Policy.Enter: start the binary
// again (/proc/self/exe, valid even if the file was replaced) as a second
// reaper in new PID and mount namespaces (and network, when off). Root
// with CAP_SYS_ADMIN (an editor's terminal, which dsh does not start) needs
// nothing more. Another user gets a user namespace too, with their uid and
// gid mapped to themselves (so the command keeps its uid and files their
// owners) and CAP_SYS_ADMIN kept across the exec (so the second reaper can
// mount; it drops every capability before it starts the command).
func enter(p Policy, argv []string) (proc.ReaperStart, error) {
	p.Enter, p.Namespaces = false, true
	st := proc.ReaperStart{Argv: proc.ReaperArgv("/proc/self/exe", 0, p.encode(), argv...)}
	user := !(isRoot() && hasCapSysAdmin())
	st.Cloneflags = cloneFlags(!p.Network, user)
	if user {
		st.MapUser, st.AmbientCaps = true, []uintptr{capSysAdmin}
	}
	return st, nil
}

// Apply is the reaper's setup for a Policy: the mounts (in the namespaces
// the reaper was started in), then Landlock on the reaper itself, which
// the command inherits, and with the network off the socket filter
// (sockets_linux.go).
func Apply(p Policy) error {
	if p.Namespaces {
		if err := mountView(p); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
		if err := dropCaps(); err != nil {
			return fmt.Errorf("sandbox: %w", err)
		}
	}
	if err := restrict(p); err != nil {
		return fmt.Errorf("sandbox: landlock: %w", err)
	}
	if !p.Network {
		// Without a network namespace, UDP and TCP too (Landlock's TCP
		// rules alone leave UDP open).
		if err := denySockets(!p.Namespaces); err != nil {
			return fmt.Errorf("sandbox: network off: %w", err)
		}
	}
	return nil
}

// dropCaps drops, on this thread (the one that starts the command), every
// capability a second reaper holds in its user namespace: the ambient
// set, which the command would keep across its exec, and the rest. Root's
// reaper keeps its own (it is root; Landlock bars it from unmounting).
func dropCaps() error {
	if os.Geteuid() == 0 {
		return nil
	}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prCapAmbient, prCapAmbientClearAll, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("clear ambient capabilities: %w", e)
	}
	hdr := struct{ version, pid uint32 }{linuxCapabilityVersion3, 0}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("drop capabilities: %w", e)
	}
	return nil
}

// From <linux/prctl.h> and <linux/capability.h>.
const (
	prCapAmbient            = 47
	prCapAmbientClearAll    = 4
	linuxCapabilityVersion3 = 0x20080522
)

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
	tmpFD, err := openTmp(p.Tmp)
	if err != nil {
		return err
	}
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
	if tmpFD >= 0 {
		err = syscall.Mount(fmt.Sprintf("/proc/self/fd/%d", tmpFD), "/tmp", "", syscall.MS_BIND|syscall.MS_REC, "")
		syscall.Close(tmpFD)
	} else {
		err = syscall.Mount("tmpfs", "/tmp", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777")
	}
	if err != nil {
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

// openTmp makes the session's temp folder if it is not there yet and
// opens it (O_PATH) before anything covers the way to it: it lies in the
// session's folder, under the hidden session root. -1 for none.
func openTmp(dir string) (int, error) {
	if dir == "" {
		return -1, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return -1, fmt.Errorf("session /tmp: %w", err)
	}
	fd, err := syscall.Open(dir, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("session /tmp %s: %w", dir, err)
	}
	return fd, nil
}

// cover hides one place: an empty tmpfs over a folder, /dev/null over a
// file. Missing places need nothing, nor places this user cannot even
// look at (a configured path under someone else's folder): the command,
// which runs as this user, cannot read them either.
func cover(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
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
	rules := []landlock.Rule{landlock.RWDirs(existing(writable)...).WithRefer().WithIoctlDev()}
	fd, flags, err := cfg.NewRulesetFD(append(rules, readRules(p)...)...)
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

// readRules: read and execute everywhere; with hidden places and no mount
// namespace to cover them, everywhere but there (readAllow).
func readRules(p Policy) []landlock.Rule {
	if p.Namespaces || len(p.Hidden) == 0 {
		return []landlock.Rule{landlock.RODirs("/")}
	}
	dirs, files, ways := readAllow(p.Hidden)
	return []landlock.Rule{
		landlock.PathAccess(landlock.AccessFSSet(llsys.AccessFSReadDir), ways...),
		landlock.RODirs(dirs...),
		landlock.ROFiles(files...),
	}
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
