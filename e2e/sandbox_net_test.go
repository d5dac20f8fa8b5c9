package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSandboxNetworkOffClosesEverySocket: with sandboxNetwork false, a
// command reaches neither a host process's unix socket bound to a path
// (the class of docker.sock), nor one in the abstract namespace, nor the
// host over UDP — and each does work with the sandbox off, so each check
// can tell. As root and as an unprivileged user.
func TestSandboxNetworkOffClosesEverySocket(t *testing.T) {
	forEachSandboxUser(t, testSandboxNetworkOff)
}

func testSandboxNetworkOff(t *testing.T, u sandboxUser) {
	// A system python3, which nobody can run too (not a pyenv under /root).
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("the socket attempts are /usr/bin/python3 one-liners")
	}
	sw := newSandboxWorld(t, u)
	sock := filepath.Join(sw.base, "host.sock")
	ln, err := net.Listen("unix", sock)
	must(t, err)
	defer ln.Close()
	must(t, os.Chmod(sock, 0o777))
	abstract := "dsh-e2e-abstract-" + strconv.Itoa(os.Getpid())
	aln, err := net.Listen("unix", "@"+abstract)
	must(t, err)
	defer aln.Close()
	for _, l := range []net.Listener{ln, aln} {
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	udpMark := filepath.Join(sw.base, "udp-received")
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	must(t, err)
	defer pc.Close()
	go func() {
		buf := make([]byte, 64)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_ = os.WriteFile(udpMark, buf[:n], 0o644)
		}
	}()
	udpPort := strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
	connect := func(addr string) string {
		return py + ` -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' ` + addr
	}
	es := []escape{
		{"connect to a host unix socket by path", connect(sock) + ` && echo connected > unix-path`,
			func(*testing.T) bool { return strings.Contains(sw.read("unix-path"), "connected") }, false},
		{"connect to a host abstract unix socket", py + ` -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("\0` + abstract + `")' && echo connected > unix-abstract`,
			func(*testing.T) bool { return strings.Contains(sw.read("unix-abstract"), "connected") }, false},
		{"send UDP to the host", py + ` -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"udp", ("127.0.0.1", ` + udpPort + `))'`,
			func(*testing.T) bool { b, _ := os.ReadFile(udpMark); return string(b) == "udp" }, false},
	}
	r := sw.runEscapes(t, "reach the host unconfined", es, "DSH_SANDBOX=off")
	if r.Code != 0 {
		t.Fatalf("unconfined run: %d\n%s", r.Code, r.Stderr)
	}
	for _, e := range es {
		if !e.escaped(t) {
			t.Errorf("%s: did not work unconfined either, so the sandboxed check cannot tell", e.name)
		}
	}
	for _, f := range []string{filepath.Join(sw.Cwd, "unix-path"), filepath.Join(sw.Cwd, "unix-abstract"), udpMark, filepath.Join(sw.Cwd, "ran")} {
		os.Remove(f)
	}
	r = sw.runEscapes(t, "reach the host with the network off", es, "DSH_SANDBOX=required", "DSH_SANDBOX_NETWORK=false")
	if r.Code != 0 || sw.read("ran") != "ran\n" {
		t.Fatalf("sandboxed run: %d, control command ran: %q\n%s", r.Code, sw.read("ran"), r.Stderr)
	}
	for _, e := range es {
		if e.escaped(t) {
			t.Errorf("%s: escaped the sandbox with the network off", e.name)
		}
	}
}
