package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// RunReaper runs o.Argv as its child with our stdin, stdout and stderr,
// as a child subreaper, and ends the command's whole tree — whatever it
// started, however it detached (setsid, double fork: orphans come to us) —
// when:
//   - the command exits: the rest is SIGKILLed at once (nothing outlives
//     the call);
//   - the reaper gets SIGTERM, SIGINT or SIGHUP (dsh cancelled the call,
//     or dsh died: our parent-death signal is SIGTERM): SIGTERM to every
//     descendant, o.Grace, then SIGKILL to all.
//
// It returns once it has reaped every descendant. The command runs in a
// process group of its own (so a shell's job control and the group-kill
// habits of tools work as usual) with SIGKILL as its parent-death signal.
func RunReaper(o ReaperOptions, stderr io.Writer) int {
	if o.Grace <= 0 {
		o.Grace = DefaultReaperGrace
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "dsh: %v\n", err)
		return 126
	}
	if err := BecomeSubreaper(); err != nil {
		return fail(err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// Setup may restrict this thread only (Landlock): the command must be
	// forked from the same thread, so it stays locked to this goroutine
	// (and is never reused: the reaper exits after).
	runtime.LockOSThread()
	var st ReaperStart
	if o.Setup != nil {
		var err error
		if st, err = o.Setup(o.Argv); err != nil {
			return fail(err)
		}
	}
	argv := o.Argv
	if len(st.Argv) > 0 {
		argv = st.Argv
	}
	path, err := lookPath(argv[0])
	if err != nil {
		return fail(err)
	}
	sys := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, AmbientCaps: st.AmbientCaps}
	setNamespaces(sys, st.Cloneflags, st.MapUser)
	child, err := os.StartProcess(path, argv, &os.ProcAttr{
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr}, Sys: sys,
	})
	if err != nil {
		return fail(fmt.Errorf("start %s: %w", argv[0], err))
	}
	r := &reaper{child: child.Pid, reaped: make(chan reapedProc, 16)}
	go r.reapAll()
	status := r.run(sigs, o.Grace)
	return exitWith(status)
}

type reapedProc struct {
	pid int
	ws  syscall.WaitStatus
}

type reaper struct {
	child  int
	reaped chan reapedProc // closed when we have no child left
}

// reapAll waits for any child of ours (the command, and every orphan that
// came to us) until there is none left.
func (r *reaper) reapAll() {
	defer close(r.reaped)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil { // ECHILD: the tree is empty, and stays so
			return
		}
		r.reaped <- reapedProc{pid, ws}
	}
}

// run waits for the command's end or a signal, then ends the tree and
// returns the command's wait status.
func (r *reaper) run(sigs <-chan os.Signal, grace time.Duration) syscall.WaitStatus {
	var status syscall.WaitStatus
	var graceC <-chan time.Time
wait:
	for {
		select {
		case p, ok := <-r.reaped:
			if !ok {
				return status
			}
			if p.pid == r.child {
				status = p.ws
				break wait
			}
		case <-sigs:
			if graceC == nil {
				signalTree(syscall.SIGTERM)
				t := time.NewTimer(grace)
				defer t.Stop()
				graceC = t.C
			}
		case <-graceC:
			break wait
		}
	}
	// Later signals change nothing: the tree is being killed (sigs stays
	// subscribed, so they cannot end the reaper before it reaped all).
	// Kill what is alive; every reaped process may have left orphans that
	// came to us since the last scan, so scan again after each. The usual
	// case, a command that left nothing behind, needs no scan: with no
	// child of ours left there is no descendant either.
	if hasChildren() {
		signalTree(syscall.SIGKILL)
	}
	for p := range r.reaped {
		if p.pid == r.child {
			status = p.ws
		}
		signalTree(syscall.SIGKILL)
	}
	return status
}

// exitWith turns the command's wait status into ours: its exit code, or
// its signal re-raised on ourselves (so the parent sees "killed by
// SIGKILL"), or 128+N if the signal did not end us.
func exitWith(ws syscall.WaitStatus) int {
	if !ws.Signaled() {
		return ws.ExitStatus()
	}
	sig := ws.Signal()
	// Raise it on this very thread, so it is delivered before the syscall
	// returns rather than to some other thread later, after we exited.
	runtime.LockOSThread()
	signal.Reset(sig)
	_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), sig)
	return 128 + int(sig)
}

// hasChildren reports whether any child of ours is left, alive or a
// zombie not yet reaped (waitid without waiting or reaping: ECHILD when
// there is none). Every descendant has an ancestor that is our child, so
// false means the tree is empty.
func hasChildren() bool {
	var info [128]byte // siginfo_t
	_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pAll, 0, uintptr(unsafe.Pointer(&info[0])),
		syscall.WEXITED|syscall.WNOHANG|syscall.WNOWAIT|syscall.WALL, 0, 0)
	return errno != syscall.ECHILD
}

// pAll is P_ALL from <sys/wait.h>: any child.
const pAll = 0

// signalTree sends sig to every descendant of ours.
func signalTree(sig syscall.Signal) {
	for _, pid := range Descendants(os.Getpid()) {
		_ = syscall.Kill(pid, sig)
	}
}

// Descendants lists the processes below pid in the process tree. It walks
// the tree down from pid through /proc/<pid>/task/<tid>/children, which
// costs a few reads per process of the tree, not of the machine; on a
// kernel without those files it falls back to the parent field of every
// /proc/<pid>/stat. Zombies are included (signalling them is harmless).
// The list is a snapshot: a process may fork after it is read.
func Descendants(pid int) []int {
	if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(syscall.Gettid()) + "/children"); err != nil {
		return descendantsByScan(pid)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		next := childrenOf(queue[0])
		queue = append(queue[1:], next...)
		out = append(out, next...)
	}
	return out
}

// childrenOf reads the children of every thread of pid.
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

func descendantsByScan(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentOf(p); ok {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		next := children[queue[0]]
		queue = append(queue[1:], next...)
		out = append(out, next...)
	}
	return out
}

// parentOf reads the ppid field of /proc/<pid>/stat (the field after the
// parenthesised command name, which may itself hold spaces and ')').
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	return exec.LookPath(name)
}
