package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile("(?m)^#{1,6} (.+)$")
	fenceLine = regexp.MustCompile("(?ms)^```.*?^```")
)

// anchor is the id GitHub gives a heading: lower case, code marks and
// punctuation dropped, spaces as hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 0x7f:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the ids of a Markdown page's headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range headingRE.FindAllStringSubmatch(fenceLine.ReplaceAllString(text, ""), -1) {
		out[anchor(m[1])] = true
	}
	return out
}

// TestLinks checks that every relative link of the README and docs/ reaches
// a file, and a heading when it names one, and that the README links to
// every page of docs/: the README is the front door.
func TestLinks(t *testing.T) {
	t.Parallel()
	pages := map[string]string{} // path from the root -> text
	names, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		pages["docs/"+n] = string(b)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages["README.md"] = string(b)

	linked := map[string]bool{}
	for page, text := range pages {
		for _, m := range linkRE.FindAllStringSubmatch(fenceLine.ReplaceAllString(text, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), file)))
			}
			if page == "README.md" {
				linked[dest] = true
			}
			text, ok := pages[dest]
			if !ok {
				if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
					t.Errorf("%s links to %s, which does not exist", page, target)
				}
				continue
			}
			if frag != "" && !anchors(text)[frag] {
				t.Errorf("%s links to %s: %s has no heading with the id %q", page, target, dest, frag)
			}
		}
	}
	for page := range pages {
		if page != "README.md" && !linked[page] {
			t.Errorf("the README does not link to %s", page)
		}
	}
}
