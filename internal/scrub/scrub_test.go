package scrub

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// apply overwrites block's spans as Hide does, and shows NUL as |.
func apply(block string, spans []span) string {
	b := []byte(block)
	for _, s := range spans {
		for i := range s.n {
			b[s.off+i] = s.fill
		}
	}
	return strings.ReplaceAll(string(b), "\x00", "|")
}

func TestEnvSpans(t *testing.T) {
	names := []string{"AEP_TOKEN", "AEP_MCP_TOKEN"}
	for _, tc := range []struct{ name, block, want string }{
		{name: "none", block: "HOME=/h\x00PATH=/bin\x00", want: "HOME=/h|PATH=/bin|"},
		{name: "both", block: "AEP_TOKEN=abc\x00HOME=/h\x00AEP_MCP_TOKEN=xyz1\x00", want: "AEP_TOKEN=||||HOME=/h|AEP_MCP_TOKEN=|||||"},
		{name: "a value holding =", block: "AEP_TOKEN=a=b\x00", want: "AEP_TOKEN=||||"},
		{name: "empty value", block: "AEP_TOKEN=\x00X=1\x00", want: "AEP_TOKEN=|X=1|"},
		{name: "a longer name is another variable", block: "AEP_TOKEN_FILE=/t\x00MY_AEP_TOKEN=k\x00", want: "AEP_TOKEN_FILE=/t|MY_AEP_TOKEN=k|"},
		{name: "no trailing NUL", block: "AEP_TOKEN=abc", want: "AEP_TOKEN=|||"},
		{name: "an entry without =", block: "AEP_TOKEN\x00AEP_TOKEN=s\x00", want: "AEP_TOKEN|AEP_TOKEN=||"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, apply(tc.block, envSpans([]byte(tc.block), names))); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestArgSpans(t *testing.T) {
	flags := []string{"token", "mcp-token"}
	for _, tc := range []struct{ name, block, want string }{
		{name: "next argument", block: "bridge\x00--token\x00s3cret\x00--\x00cat\x00", want: "bridge|--token|******|--|cat|"},
		{name: "one dash", block: "bridge\x00-token\x00s3\x00", want: "bridge|-token|**|"},
		{name: "with =", block: "bridge\x00--token=s3cret\x00-mcp-token=m\x00", want: "bridge|--token=******|-mcp-token=*|"},
		{name: "a subcommand's", block: "bridge\x00serve\x00--mcp-token\x00m1\x00--token\x00t1\x00", want: "bridge|serve|--mcp-token|**|--token|**|"},
		{name: "the server's own flags after --", block: "bridge\x00--\x00srv\x00--token\x00theirs\x00", want: "bridge|--|srv|--token|theirs|"},
		{name: "the program's name is not a flag", block: "--token\x00--listen\x00off\x00", want: "--token|--listen|off|"},
		{name: "other flags", block: "bridge\x00--tokens\x00x\x00--insecure-token\x00--state-dir\x00d\x00", want: "bridge|--tokens|x|--insecure-token|--state-dir|d|"},
		{name: "a flag at the end", block: "bridge\x00--token\x00", want: "bridge|--token|"},
		{name: "an empty value", block: "bridge\x00--token=\x00--token\x00\x00", want: "bridge|--token=|--token||"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, apply(tc.block, argSpans([]byte(tc.block), flags))); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestBlocks(t *testing.T) {
	// A command name with spaces and parentheses, then fields 3 to 52.
	fields := make([]string, 50)
	for i := range fields {
		fields[i] = "0"
	}
	fields[48-3], fields[49-3], fields[50-3], fields[51-3] = "100", "200", "300", "400"
	stat := "42 (a (b) c) " + strings.Join(fields, " ") + "\n"
	args, env, err := blocks([]byte(stat))
	if err != nil || args != [2]uint64{100, 200} || env != [2]uint64{300, 400} {
		t.Fatalf("got %v %v %v; want [100 200] [300 400]", args, env, err)
	}
	if _, _, err := blocks([]byte("42 (x) R 1 2")); err == nil || !strings.Contains(err.Error(), "older than Linux 3.5") {
		t.Fatalf("a short stat: %v; want an error naming the kernel", err)
	}
}

// helperEnv makes the test binary run hideAndReport instead of the tests.
const helperEnv = "AEP_SCRUB_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(hideAndReport())
	}
	mainWithLeakCheck(m)
}

// hideAndReport hides AEP_TOKEN and --token, then prints what
// /proc/self/environ and /proc/self/cmdline hold and what the program
// still reads, NUL shown as |.
func hideAndReport() int {
	if err := Hide([]string{"AEP_TOKEN"}, []string{"token"}); err != nil {
		os.Stdout.WriteString("error: " + err.Error())
		return 1
	}
	env, _ := os.ReadFile("/proc/self/environ")
	cmdline, _ := os.ReadFile("/proc/self/cmdline")
	for _, line := range []string{
		"environ " + strings.ReplaceAll(string(env), "\x00", "|"),
		"cmdline " + strings.ReplaceAll(string(cmdline), "\x00", "|"),
		"getenv " + os.Getenv("AEP_TOKEN"),
		"args " + strings.Join(os.Args[1:], " "),
	} {
		os.Stdout.WriteString(line + "\n")
	}
	return 0
}

// TestHide runs Hide in a process of its own: /proc shows neither value,
// and the program still reads both.
func TestHide(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Hide does nothing off Linux")
	}
	cmd := exec.Command(os.Args[0], "--token", "flag-secret-1", "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "AEP_TOKEN=env-secret-2")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the helper: %v\n%s", err, out)
	}
	got := string(out)
	for _, want := range []string{"|AEP_TOKEN=|||||||||||||", "|--token|*************|", "getenv env-secret-2\n", "args --token flag-secret-1 -test.run=^$\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("the helper reported:\n%s\nwant it to hold %q", got, want)
		}
	}
	environ, cmdline, _ := strings.Cut(got, "\ncmdline ")
	if strings.Contains(environ, "env-secret-2") || strings.Contains(strings.SplitN(cmdline, "\n", 2)[0], "flag-secret-1") {
		t.Errorf("/proc still shows a secret:\n%s", got)
	}
}

// TestChildEnv: a variable Hide was given, or ChildEnv is told of, leaves
// a child's environment, given or inherited, and everything else stays
// in order.
func TestChildEnv(t *testing.T) {
	if err := Hide([]string{"AEP_TEST_CHILD_SECRET"}, nil); err != nil {
		t.Fatal(err)
	}
	given := []string{"A=1", "AEP_TEST_CHILD_SECRET=s", "AEP_TEST_CHILD_SECRET_FILE=/f", "ALSO=x", "B=a=b", "NOEQUALS"}
	if diff := cmp.Diff([]string{"A=1", "AEP_TEST_CHILD_SECRET_FILE=/f", "B=a=b", "NOEQUALS"}, ChildEnv(given, "ALSO")); diff != "" {
		t.Errorf("given (-want +got):\n%s", diff)
	}
	t.Setenv("AEP_TEST_CHILD_SECRET", "inherited")
	t.Setenv("AEP_TEST_CHILD_KEPT", "kept")
	inherited := strings.Join(ChildEnv(nil), "\n")
	if strings.Contains(inherited, "AEP_TEST_CHILD_SECRET=") || !strings.Contains(inherited, "AEP_TEST_CHILD_KEPT=kept") {
		t.Errorf("inherited:\n%s", inherited)
	}
	if got := Secrets(); !slices.Contains(got, "AEP_TEST_CHILD_SECRET") {
		t.Errorf("Secrets() = %q", got)
	}
}

// TestChildEnvWithholdsTheCredentials: the bridge's own credentials leave
// every child's environment whether or not Hide was told of them, so a
// program that spawns without calling Hide first (a test, a subcommand)
// still withholds them.
func TestChildEnvWithholdsTheCredentials(t *testing.T) {
	given := []string{"AEP_TOKEN=a", "AEP_MCP_TOKEN=m", "AEP_NOTIFY_SECRET=n", "AEP_TOKEN_FILE=/f", "HOME=/h"}
	if diff := cmp.Diff([]string{"AEP_TOKEN_FILE=/f", "HOME=/h"}, ChildEnv(given)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"AEP_TOKEN", "AEP_MCP_TOKEN", "AEP_NOTIFY_SECRET"}, Credentials()); diff != "" {
		t.Errorf("Credentials (-want +got):\n%s", diff)
	}
}
