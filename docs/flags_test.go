package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// root is the module's root, seen from this package's folder.
const root = ".."

// root is the name the flag markers give the bridge itself (no subcommand).
const rootCommand = "aep-mcp-bridge"

// buildOnce builds the binary the docs describe, once per test binary.
var buildOnce struct {
	sync.Once
	path string
	err  error
	out  []byte
}

// bridgeBinary builds cmd/aep-mcp-bridge from this tree and returns its path.
func bridgeBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "docs-bin")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "aep-mcp-bridge")
		cmd := exec.Command("go", "build", "-o", buildOnce.path, "./cmd/aep-mcp-bridge")
		cmd.Dir = root
		buildOnce.out, buildOnce.err = cmd.CombinedOutput()
	})
	if buildOnce.err != nil {
		t.Fatalf("building the binary: %v\n%s", buildOnce.err, buildOnce.out)
	}
	return buildOnce.path
}

// statSources stats every file the binary is built from, so that go test's
// result cache, which records the files a test opens or stats, runs these
// tests again when any of them changes.
func statSources(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		switch filepath.Ext(p) {
		case ".go", ".js", ".css", ".html", ".md", ".mod", ".sum":
			_, err = os.Stat(p)
		}
		if filepath.Base(p) == "run" && filepath.Base(filepath.Dir(p)) == ".ci" {
			_, err = os.Stat(p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// helpFlag is one flag as --help lists it.
type helpFlag struct {
	usage, dflt string
}

var (
	// helpFlagLine is a flag's first line in Go's flag.PrintDefaults
	// layout ("  -name type"), also taking "--name".
	helpFlagLine = regexp.MustCompile(`^ +--?([A-Za-z0-9][A-Za-z0-9-]*)(?:[ =]|$)`)
	helpDefault  = regexp.MustCompile(`\(default (.+)\)\s*$`)
)

// helpOutput runs the binary's --help for command (rootCommand for the
// bridge itself) and returns what it printed on stdout and stderr.
func helpOutput(t *testing.T, bin, command string) string {
	t.Helper()
	args := []string{"--help"}
	if command != rootCommand {
		// "operators/add" is the subcommand add of operators.
		args = append(strings.Split(command, "/"), "--help")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_STATE_HOME=")
	cmd.Stdin = strings.NewReader("")
	out, _ := cmd.CombinedOutput() // --help exits 2, as flag.ErrHelp does
	return string(out)
}

// parseHelpFlags reads the flags and their defaults from --help output.
func parseHelpFlags(help string) map[string]helpFlag {
	flags := map[string]helpFlag{}
	name := ""
	for _, line := range strings.Split(help, "\n") {
		indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		if m := helpFlagLine.FindStringSubmatch(line); m != nil && !strings.Contains(indent, "\t") {
			name = m[1]
			flags[name] = helpFlag{}
			continue
		}
		if name != "" && strings.Contains(indent, "\t") {
			f := flags[name]
			f.usage = strings.TrimSpace(f.usage + " " + strings.TrimSpace(line))
			flags[name] = f
			continue
		}
		name = ""
	}
	for n, f := range flags {
		if m := helpDefault.FindStringSubmatch(f.usage); m != nil {
			d := m[1]
			if u, err := strconv.Unquote(d); err == nil {
				d = u
			}
			f.dflt = d
			flags[n] = f
		}
	}
	return flags
}

// docTable is a table that follows a marker comment in a Markdown page.
type docTable struct {
	page, marker string
	line         int
	header       []string
	rows         [][]string
}

var (
	markerRE   = regexp.MustCompile(`^<!-- (flags|no-flags|exit-status): (.+?) -->$`)
	codeSpanRE = regexp.MustCompile("`([^`]+)`")
)

// docPages is the README and every page under docs/.
func docPages(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{}
	for _, n := range append(names, filepath.Join(root, "README.md")) {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		pages[filepath.Base(n)] = string(b)
	}
	return pages
}

// markedTables finds every marker comment and the table under it.
func markedTables(t *testing.T, pages map[string]string) []docTable {
	t.Helper()
	var out []docTable
	for page, text := range pages {
		lines := strings.Split(text, "\n")
		for i, l := range lines {
			m := markerRE.FindStringSubmatch(strings.TrimSpace(l))
			if m == nil {
				continue
			}
			tb := docTable{page: page, marker: m[1] + ": " + m[2], line: i + 1}
			for j := i + 1; j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "|"); j++ {
				cells := splitRow(lines[j])
				switch {
				case tb.header == nil:
					tb.header = cells
				case strings.Trim(strings.Join(cells, ""), "-: ") == "":
					// the delimiter row
				default:
					tb.rows = append(tb.rows, cells)
				}
			}
			if m[1] != "no-flags" && len(tb.rows) == 0 {
				t.Errorf("%s:%d: the marker %q has no table under it", page, tb.line, tb.marker)
			}
			out = append(out, tb)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].page+strconv.Itoa(out[i].line) < out[j].page+strconv.Itoa(out[j].line)
	})
	return out
}

// splitRow splits a Markdown table row into its trimmed cells.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	var cells []string
	cur := strings.Builder{}
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// column returns the index of the header cell named name, or -1.
func (tb docTable) column(name string) int {
	return slices.IndexFunc(tb.header, func(h string) bool { return strings.EqualFold(h, name) })
}

// codeSpans returns the code spans of a cell.
func codeSpans(cell string) []string {
	var out []string
	for _, m := range codeSpanRE.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// flagNames returns the flags a cell names: the code spans that start
// with "--", by their name.
func flagNames(cell string) []string {
	var out []string
	for _, s := range codeSpans(cell) {
		if strings.HasPrefix(s, "--") && len(s) > 2 {
			out = append(out, strings.Fields(s[2:])[0])
		}
	}
	return out
}

// sameDefault reports whether the docs' value d states --help's default h:
// the same text, or the same duration however it is written (10m, 10m0s).
func sameDefault(d, h string) bool {
	if d == h {
		return true
	}
	dd, err1 := time.ParseDuration(d)
	hd, err2 := time.ParseDuration(h)
	return err1 == nil && err2 == nil && dd == hd
}

// TestFlagTables compares every flag table of the README and docs/ with
// the --help of the subcommands it documents: the same flags, and the
// defaults --help states. A marker names the subcommands
// ("<!-- flags: inbox pending respond tail -->"), optionally "except"
// others whose flags the table leaves out ("serve except aep-mcp-bridge");
// a "commands" column says which of the named subcommands take a flag
// ("all" for every one). Every subcommand the bridge's usage lists must
// be documented by one.
func TestFlagTables(t *testing.T) {
	t.Parallel()
	statSources(t)
	bin := bridgeBinary(t)
	helps := map[string]string{}
	help := func(cmd string) string {
		if _, ok := helps[cmd]; !ok {
			helps[cmd] = helpOutput(t, bin, cmd)
		}
		return helps[cmd]
	}
	flagsOf := func(cmd string) map[string]helpFlag {
		f := parseHelpFlags(help(cmd))
		if len(f) == 0 && cmd != "answers-from" {
			t.Errorf("%s --help lists no flags; it printed:\n%s", cmd, help(cmd))
		}
		return f
	}

	known := append(subcommands(help(rootCommand)), rootCommand)
	for _, c := range subcommands(help(rootCommand)) {
		// A subcommand's own subcommands ("operators add") are marked
		// "operators/add".
		for _, sub := range subcommands(help(c)) {
			if sub != c && strings.Contains(help(c), "\nSubcommands") {
				known = append(known, c+"/"+sub)
			}
		}
	}
	documented := map[string]bool{}
	for _, tb := range markedTables(t, docPages(t)) {
		kind, spec, _ := strings.Cut(tb.marker, ": ")
		where := tb.page + ":" + strconv.Itoa(tb.line)
		if unknown := slices.DeleteFunc(strings.Fields(strings.Replace(spec, " except ", " ", 1)), func(c string) bool { return slices.Contains(known, c) }); len(unknown) > 0 {
			t.Errorf("%s: the marker names %v, which %s --help does not list among its subcommands %v", where, unknown, rootCommand, known)
			continue
		}
		if kind == "exit-status" {
			for _, c := range strings.Fields(spec) {
				checkExitStatus(t, where+" ("+c+")", tb, help(c))
			}
			continue
		}
		names, except, _ := strings.Cut(spec, " except ")
		cmds := strings.Fields(names)
		if kind == "no-flags" {
			for _, c := range cmds {
				documented[c] = true
				if f := parseHelpFlags(help(c)); len(f) != 0 {
					t.Errorf("%s: says %s takes no flags; its --help lists %v", where, c, keys(f))
				}
			}
			continue
		}
		left := map[string]bool{}
		for _, c := range strings.Fields(except) {
			for n := range flagsOf(c) {
				left[n] = true
			}
		}
		flagCol, cmdCol, defCol := 0, tb.column("commands"), tb.column("default")
		for _, c := range cmds {
			documented[c] = true
			want := flagsOf(c)
			var wantNames []string
			for n := range want {
				if !left[n] {
					wantNames = append(wantNames, n)
				}
			}
			var got []string
			for _, row := range tb.rows {
				if cmdCol >= 0 && !rowNames(row[cmdCol], c) {
					continue
				}
				for _, n := range flagNames(row[flagCol]) {
					got = append(got, n)
					h, ok := want[n]
					if !ok || h.dflt == "" || defCol < 0 {
						continue
					}
					if !slices.ContainsFunc(codeSpans(row[defCol]), func(d string) bool { return sameDefault(d, h.dflt) }) {
						t.Errorf("%s: %s --%s: the default column says %q; --help says (default %q)", where, c, n, row[defCol], h.dflt)
					}
				}
			}
			sort.Strings(got)
			sort.Strings(wantNames)
			if diff := cmp.Diff(wantNames, got); diff != "" {
				t.Errorf("%s: the flags of %q (-%s --help, +docs):\n%s", where, c, c, diff)
			}
		}
	}

	for _, c := range subcommands(help(rootCommand)) {
		if !documented[c] {
			t.Errorf("no flag table documents %q, which %s --help lists; add one with a <!-- flags: %s --> marker (or <!-- no-flags: %s -->)", c, rootCommand, c, c)
		}
	}
	if !documented[rootCommand] {
		t.Errorf("no flag table documents the bridge itself (<!-- flags: %s -->)", rootCommand)
	}
}

// rowNames reports whether a "commands" cell names cmd, or says "all".
func rowNames(cell, cmd string) bool {
	return strings.EqualFold(strings.TrimSpace(cell), "all") || slices.Contains(codeSpans(cell), cmd)
}

// subcommands reads the subcommands the bridge's --help lists: in its
// usage lines ("aep-mcp-bridge serve [flags] …") and in its list of
// subcommands (a "Subcommands" heading, then one indented name a line).
// help, which shows this same text, is left out.
func subcommands(help string) []string {
	var out []string
	add := func(name string) {
		if name != "help" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	usage, _, _ := strings.Cut(help, "\n\n")
	for _, m := range regexp.MustCompile(`(?:aep-mcp-bridge|\|)\s+([a-z][a-z-]+)\b`).FindAllStringSubmatch(usage, -1) {
		add(m[1])
	}
	if i := strings.Index(help, "\nSubcommands"); i >= 0 {
		list, _, _ := strings.Cut(help[i+1:], "\n\n")
		for _, m := range regexp.MustCompile(`(?m)^\s+([a-z][a-z-]+)\s`).FindAllStringSubmatch(list, -1) {
			add(m[1])
		}
	}
	return out
}

// checkExitStatus compares a table of exit statuses with the statuses the
// command's --help lists after "Exit status".
func checkExitStatus(t *testing.T, where string, tb docTable, help string) {
	t.Helper()
	i := strings.Index(strings.ToLower(help), "exit status")
	if i < 0 {
		t.Errorf("%s: documents exit statuses; --help lists none:\n%s", where, help)
		return
	}
	block, _, _ := strings.Cut(help[i:], "\n\n")
	var want, got []string
	for _, m := range regexp.MustCompile(`(?:^|[\s,:;])([0-9]{1,3})\s+[a-z]`).FindAllStringSubmatch(block, -1) {
		want = append(want, m[1])
	}
	for _, row := range tb.rows {
		got = append(got, codeSpans(row[0])...)
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: exit statuses (-help, +docs):\n%s", where, diff)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
