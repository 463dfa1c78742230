package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
)

// pump is the physical floor: a process that spawns the server and copies
// bytes both ways without looking at them, the same process topology as
// the bridge.
func pump(argv []string) error {
	if len(argv) == 0 {
		return fmt.Errorf("pump needs a command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		io.Copy(os.Stdout, out)
		close(done)
	}()
	io.Copy(in, os.Stdin)
	in.Close()
	<-done
	return cmd.Wait()
}
