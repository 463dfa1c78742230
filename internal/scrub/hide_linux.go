package scrub

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Hide overwrites, in this process's original environment block and
// command line, the values of the environment variables named env and of
// the command-line flags named flags (without dashes), up to an argument
// "--", and adds env to the variables ChildEnv withholds from children
// (even when it returns an error). What the program reads (os.Getenv,
// os.Args) is unchanged: os.Args is replaced by copies first, since the
// runtime's point into the block. Call it with flags first in main,
// before anything keeps a string of os.Args; it may be called again later
// with the names of more variables (flags nil), as the program learns
// which it read a secret from. It returns an error when something was to
// be hidden and could not be; when nothing was, it does nothing more.
func Hide(env, flags []string) error {
	remember(env)
	type block struct {
		file  string // the block as the kernel serves it
		r     [2]uint64
		spans []span
	}
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return fmt.Errorf("hiding credentials: reading /proc/self/stat: %w", err)
	}
	args, environ, err := blocks(stat)
	if err != nil {
		return fmt.Errorf("hiding credentials: %w", err)
	}
	todo := []block{{file: "/proc/self/environ", r: environ}, {file: "/proc/self/cmdline", r: args}}
	found := false
	for i := range todo {
		b, err := os.ReadFile(todo[i].file)
		if err != nil {
			return fmt.Errorf("hiding credentials: %w", err)
		}
		if i == 0 {
			todo[i].spans = envSpans(b, env)
		} else {
			todo[i].spans = argSpans(b, flags)
		}
		found = found || len(todo[i].spans) > 0
	}
	if !found {
		return nil
	}
	// The runtime's os.Args point into the argument block itself (its
	// environment is a copy): give the program copies first. Only when
	// the block changes, so that a later call, which hides variables
	// only, never writes os.Args while other goroutines may read it.
	if len(todo[1].spans) > 0 {
		for i := range os.Args {
			os.Args[i] = strings.Clone(os.Args[i])
		}
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("hiding credentials: %w; pass the tokens through the token files of the state folder instead", err)
	}
	defer mem.Close()
	for _, b := range todo {
		for _, s := range b.spans {
			at := b.r[0] + uint64(s.off)
			if at+uint64(s.n) > b.r[1] {
				return fmt.Errorf("hiding credentials: %s is longer than the block /proc/self/stat gives it", b.file)
			}
			if _, err := mem.WriteAt(bytes.Repeat([]byte{s.fill}, s.n), int64(at)); err != nil {
				return fmt.Errorf("hiding credentials: overwriting the original block through /proc/self/mem: %w; pass the tokens through the token files of the state folder instead", err)
			}
		}
	}
	return nil
}

// blocks reads the addresses of the argument and environment blocks from
// /proc/self/stat: fields 48 to 51 (proc(5)), counted after the command
// name, which is in parentheses and may hold spaces and parentheses.
func blocks(stat []byte) (args, environ [2]uint64, err error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return args, environ, fmt.Errorf("/proc/self/stat has no command name")
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is field 3 (state); field n is fields[n-3].
	if len(fields) < 51-2 {
		return args, environ, fmt.Errorf("/proc/self/stat has %d fields; the kernel is older than Linux 3.5", len(fields)+2)
	}
	var v [4]uint64
	for k := range v {
		if v[k], err = strconv.ParseUint(fields[48-3+k], 10, 64); err != nil {
			return args, environ, fmt.Errorf("field %d of /proc/self/stat: %w", 48+k, err)
		}
	}
	return [2]uint64{v[0], v[1]}, [2]uint64{v[2], v[3]}, nil
}
