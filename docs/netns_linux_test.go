package docs

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/agenteventprotocol/aep-mcp-bridge/internal/testenv"
)

// ranInNetns runs this test again in a new user and network namespace,
// where the README's fixed ports are the test's alone, and reports
// whether it could; the result of that run is this test's. When the
// machine refuses the namespaces (a container without the right to make
// them), the test runs here, on the machine's loopback, which then needs
// the ports free.
func ranInNetns(t *testing.T) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(), inNetnsEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Start()
	if err != nil {
		t.Logf("no network namespace of its own (%v): the commands run on this machine's loopback", err)
		if err := portsFree(); err != nil {
			testenv.Missing(t, "the README's ports 127.0.0.1:8787 and 127.0.0.1:8788 free ("+err.Error()+")",
				"stop what listens there, or run the tests where user namespaces are allowed")
		}
		return false
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		t.Fatalf("the README's commands failed (run in a network namespace of their own):\n%s", out.String())
	case err != nil:
		t.Fatal(err)
	case !strings.Contains(out.String(), "--- PASS: "+t.Name()):
		t.Fatalf("the run in a network namespace did not pass %s:\n%s", t.Name(), out.String())
	}
	t.Logf("ran in a network namespace of its own:\n%s", out.String())
	return true
}

// loopbackUp brings up lo, which a new network namespace starts with down.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var ifr struct {
		name  [syscall.IFNAMSIZ]byte
		flags uint16
		_     [22]byte
	}
	copy(ifr.name[:], "lo")
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCGIFFLAGS, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return e
	}
	ifr.flags |= syscall.IFF_UP
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.SIOCSIFFLAGS, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return e
	}
	return nil
}
