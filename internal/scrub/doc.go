// Package scrub hides the bridge's credentials from what other processes
// of the same user can read about it without reading its memory: its
// environment as /proc/PID/environ shows it, and its command line as
// /proc/PID/cmdline (and ps) show it. It also keeps the set of variables
// the bridge read a secret from, so that no process the bridge spawns
// inherits them (ChildEnv).
//
// Linux keeps a process's original environment and arguments in its own
// memory, between the env_start/env_end and arg_start/arg_end addresses of
// /proc/PID/stat, and serves those bytes to every process of the same
// user (the command line to every user). The Go runtime copied both when
// the process started (os.Environ, os.Args), so the original bytes can be
// overwritten in place, through /proc/self/mem, without changing what the
// program itself reads. Overwriting in place keeps every string where it
// was, so a C library's environ pointers stay valid.
//
// What it cannot hide: the values were readable from the moment the
// process started until Hide ran (a few milliseconds), by whoever looked
// then; and a process that may read this process's memory (root, or the
// same user where ptrace is allowed, kernel.yama.ptrace_scope 0) still
// finds the runtime's copies. On systems other than Linux, Hide does
// nothing.
package scrub
