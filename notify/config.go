package notify

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agenteventprotocol/aep-mcp-bridge/aep"
)

// Bounds of a notify file, and of a file its url_file or secret_file
// names.
const (
	MaxFileBytes      = 1 << 20
	MaxTargets        = 1000
	MaxValueFileBytes = 64 << 10
)

// FileConfig is what a notify file (--notify-file) says:
//
//	escalate: 5m                  # optional: --notify-escalate
//	targets:
//	  - name: ops                 # optional; escalate_to refers to it
//	    url_env: OPS_SLACK_URL    # or url: …, or url_file: PATH
//	    format: slack             # json (default, unless the host says), slack, discord, teams, ntfy
//	    capture: metadata         # none, metadata (default), redacted, full
//	    events: [opened, expiring]  # default: all
//	    escalate_to: [oncall]
//	  - name: oncall
//	    url: https://hooks.example/aep
//	    secret_env: ONCALL_SECRET # or secret: …, or secret_file: PATH; json needs one
//	    events: [expiring]
//
// YAML or JSON. A URL or secret is best kept out of the file (url_env,
// url_file, secret_env, secret_file): a file holding a secret inline must
// not be readable by group or others.
type FileConfig struct {
	Escalate time.Duration
	Targets  []Target
	// SecretEnv names the environment variables the file's url_env and
	// secret_env read, each once: their values are secrets (a chat
	// webhook's URL carries its token), which the caller keeps from the
	// processes it spawns.
	SecretEnv []string
	// inline reports a secret written in the file itself.
	inline bool
}

// Sources are where a notify file's url_env, url_file, secret_env and
// secret_file are read from; a relative file is relative to Dir.
type Sources struct {
	Env      func(string) (string, bool)
	ReadFile func(string) ([]byte, error)
	Dir      string
}

var (
	fileFields   = []string{"escalate", "targets"}
	targetFields = []string{"name", "url", "url_env", "url_file", "format", "secret", "secret_env", "secret_file",
		"capture", "events", "escalate_to"}
)

// LoadFile reads the notify file at path, with the environment and files
// of this process.
func LoadFile(path string) (FileConfig, error) {
	f, err := os.Open(path)
	if err != nil {
		return FileConfig{}, fmt.Errorf("--notify-file: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return FileConfig{}, fmt.Errorf("--notify-file: %w", err)
	}
	if info.Size() > MaxFileBytes {
		return FileConfig{}, fmt.Errorf("--notify-file %s: %d bytes, over the %d a notify file may have", path, info.Size(), MaxFileBytes)
	}
	data := make([]byte, info.Size())
	if _, err := f.ReadAt(data, 0); err != nil && info.Size() > 0 {
		return FileConfig{}, fmt.Errorf("--notify-file: %w", err)
	}
	cfg, err := ParseFile(data, Sources{Env: os.LookupEnv, ReadFile: readValueFile, Dir: filepath.Dir(path)})
	if err != nil {
		return FileConfig{}, fmt.Errorf("--notify-file %s: %w", path, err)
	}
	if cfg.inline && info.Mode().Perm()&0o077 != 0 {
		return FileConfig{}, fmt.Errorf("--notify-file %s holds a secret and group or others can read it; run chmod 600 %s, or move the secret to secret_env or secret_file", path, path)
	}
	return cfg, nil
}

// readValueFile reads a file a notify file's url_file or secret_file
// names: a regular file only (a FIFO would block the bridge's start, a
// device never end), and no more than one byte past MaxValueFileBytes, so
// the parser can tell it is too large. The FIFO is opened without
// blocking, and what was opened is what is checked.
func readValueFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(f, MaxValueFileBytes+1))
}

// ParseFile reads a notify file, YAML or JSON. It refuses the whole file
// on any problem, listing every one with its line and field; no error
// quotes a value, since values may be secrets.
func ParseFile(data []byte, src Sources) (cfg FileConfig, err error) {
	defer func() {
		// The YAML reader is third-party code fed a file an operator
		// wrote; a panic in it must not take the bridge down.
		if r := recover(); r != nil {
			cfg, err = FileConfig{}, errors.New("the YAML reader failed on this file; check its syntax, or write it as JSON")
		}
	}()
	if len(data) > MaxFileBytes {
		return FileConfig{}, fmt.Errorf("%d bytes, over the %d a notify file may have", len(data), MaxFileBytes)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return FileConfig{}, errors.New("not YAML or JSON: " + firstLine(err.Error()))
	}
	p := &fileParser{src: src}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return FileConfig{}, errors.New("the file must be a mapping with targets (and optionally escalate)")
	}
	p.file(doc.Content[0])
	if len(p.errs) > 0 {
		return FileConfig{}, errors.Join(p.errs...)
	}
	if err := checkTargets(p.cfg.Targets); err != nil {
		return FileConfig{}, err
	}
	return p.cfg, nil
}

// fileParser walks a notify file's nodes, collecting every problem.
type fileParser struct {
	src  Sources
	cfg  FileConfig
	errs []error
}

func (p *fileParser) fail(n *yaml.Node, field, format string, a ...any) {
	p.errs = append(p.errs, fmt.Errorf("line %d: %s: %s", n.Line, field, fmt.Sprintf(format, a...)))
}

// members returns a mapping's members by key, refusing unknown and
// repeated keys.
func (p *fileParser) members(n *yaml.Node, where string, known []string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch {
		case k.Kind != yaml.ScalarNode:
			p.fail(k, where, "keys must be names")
		case !slices.Contains(known, k.Value):
			p.fail(k, where, "unknown field; the fields are %s", strings.Join(known, ", "))
		case out[k.Value] != nil:
			p.fail(k, where+"."+k.Value, "given twice")
		default:
			out[k.Value] = v
		}
	}
	return out
}

func (p *fileParser) str(n *yaml.Node, field string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.fail(n, field, "must be a string")
		return "", false
	}
	return n.Value, true
}

func (p *fileParser) strs(n *yaml.Node, field string) ([]string, bool) {
	if n.Kind != yaml.SequenceNode {
		p.fail(n, field, "must be a list of strings")
		return nil, false
	}
	out := []string{}
	for i, e := range n.Content {
		s, ok := p.str(e, fmt.Sprintf("%s[%d]", field, i))
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func (p *fileParser) file(root *yaml.Node) {
	m := p.members(root, "file", fileFields)
	if n := m["escalate"]; n != nil {
		if s, ok := p.str(n, "escalate"); ok {
			d, err := time.ParseDuration(s)
			if err != nil || d < 0 {
				p.fail(n, "escalate", "must be a duration such as 5m or 90s")
			}
			p.cfg.Escalate = d
		}
	}
	ts := m["targets"]
	if ts == nil || ts.Kind != yaml.SequenceNode || len(ts.Content) == 0 {
		p.fail(root, "targets", "must be a non-empty list of targets")
		return
	}
	if len(ts.Content) > MaxTargets {
		p.fail(ts, "targets", "at most %d targets", MaxTargets)
		return
	}
	for i, n := range ts.Content {
		p.target(n, fmt.Sprintf("targets[%d]", i))
	}
}

func (p *fileParser) target(n *yaml.Node, where string) {
	if n.Kind != yaml.MappingNode {
		p.fail(n, where, "must be a mapping with url (or url_env, url_file)")
		return
	}
	m := p.members(n, where, targetFields)
	var t Target
	if v := m["name"]; v != nil {
		t.Name, _ = p.str(v, where+".name")
	}
	t.URL, _ = p.oneOf(n, m, where, "url", true)
	t.Secret, _ = p.oneOf(n, m, where, "secret", false)
	if v := m["format"]; v != nil {
		if s, ok := p.str(v, where+".format"); ok {
			f, err := ParseFormat(s)
			if err != nil {
				p.fail(v, where+".format", "%v", err)
			}
			t.Format = f
		}
	}
	if v := m["capture"]; v != nil {
		if s, ok := p.str(v, where+".capture"); ok {
			c, err := aep.ParseCapture(s)
			if err != nil {
				p.fail(v, where+".capture", "want none, metadata, redacted or full")
			}
			t.Capture = c
		}
	}
	if v := m["events"]; v != nil {
		if names, ok := p.strs(v, where+".events"); ok {
			t.Events = []Type{}
			for _, s := range names {
				typ, err := ParseType(s)
				if err != nil {
					p.fail(v, where+".events", "an unknown event; the events are %s", typeNames())
					continue
				}
				t.Events = append(t.Events, typ)
			}
		}
	}
	if v := m["escalate_to"]; v != nil {
		t.EscalateTo, _ = p.strs(v, where+".escalate_to")
	}
	if m["secret"] != nil {
		p.cfg.inline = true
	}
	p.cfg.Targets = append(p.cfg.Targets, t)
}

// oneOf reads a value given as KEY, KEY_env or KEY_file: exactly one when
// required, else at most one.
func (p *fileParser) oneOf(at *yaml.Node, m map[string]*yaml.Node, where, key string, required bool) (string, bool) {
	var given []string
	for _, k := range []string{key, key + "_env", key + "_file"} {
		if m[k] != nil {
			given = append(given, k)
		}
	}
	switch {
	case len(given) == 0 && required:
		p.fail(at, where, "needs %s, %s_env or %s_file", key, key, key)
		return "", false
	case len(given) == 0:
		return "", true
	case len(given) > 1:
		p.fail(at, where, "give one of %s", strings.Join(given, ", "))
		return "", false
	}
	k := given[0]
	v, ok := p.str(m[k], where+"."+k)
	if !ok {
		return "", false
	}
	switch k {
	case key:
		return v, true
	case key + "_env":
		if p.src.Env == nil {
			p.fail(m[k], where+"."+k, "no environment to read")
			return "", false
		}
		if !slices.Contains(p.cfg.SecretEnv, v) {
			p.cfg.SecretEnv = append(p.cfg.SecretEnv, v)
		}
		val, ok := p.src.Env(v)
		if !ok || strings.TrimSpace(val) == "" {
			p.fail(m[k], where+"."+k, "the environment variable it names is not set; set it, or give %s otherwise", key)
			return "", false
		}
		return strings.TrimSpace(val), true
	}
	if p.src.ReadFile == nil {
		p.fail(m[k], where+"."+k, "no files to read")
		return "", false
	}
	path := v
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.src.Dir, path)
	}
	b, err := p.src.ReadFile(path)
	if err != nil || len(b) > MaxValueFileBytes {
		p.fail(m[k], where+"."+k, "the file it names cannot be read, is not a regular file, or is over 64 KiB; check the path and its permissions")
		return "", false
	}
	val := strings.TrimSpace(string(b))
	if val == "" {
		p.fail(m[k], where+"."+k, "the file it names is empty")
		return "", false
	}
	return val, true
}
