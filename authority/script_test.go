package authority

import (
	"bufio"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agenteventprotocol/aep-mcp-bridge/proof"
)

// The scripts in testdata/*.txt play connections, sessions and questions
// against a Table and pin each decision. One step per line; "#" starts a
// comment; a step's expected outcome follows "=>":
//
//	connect A socket|join [key=k1]   a connection: bearer token, or /join (with key k1's proof)
//	hello A emitter|consumer [agent=X] [instance=Y] [resume=R]
//	write A SOURCE SESSION => ok [replaced=B] [took] [claims-dropped=N] [open-dropped=N]
//	write A SOURCE SESSION => refused REASON ["detail substring"]
//	post SOURCE SESSION => ok | refused REASON ["detail substring"]
//	sequenced A SOURCE SESSION       A wrote a sequenced event: it claims SESSION
//	route SESSION => A | local:NAME | refused REASON
//	local NAME SOURCE                a session of this process (AddLocal)
//	end NAME                         it ended (RemoveLocal)
//	open SOURCE SESSION N            N questions of SOURCE open in SESSION
//	disconnect A
//	claims => A local:NAME ...       every claim, in order
//	questions => back(A) left(A,dated) ...   what the table told the open questions since last asked
//	stats => sources=N joined=N writers=N
//	retire-joined N                  N other joined sessions are written and left (fills RetiredJoined)
//
// "@k1/NAME" anywhere stands for NAME certified to key k1 (proof.Key.SessionID).
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) { runScript(t, file) })
	}
}

// fakeQuestions is the open questions a script sets, and what the table
// told them.
type fakeQuestions struct {
	open  map[string]map[string]int // source → session → count
	calls []string
}

func (f *fakeQuestions) OpenFrom(source string) int {
	n := 0
	for _, c := range f.open[source] {
		n += c
	}
	return n
}

func (f *fakeQuestions) DropOpen(session string, drop func(source string) bool) int {
	n := 0
	for src, by := range f.open {
		if by[session] > 0 && drop(src) {
			n += by[session]
			delete(by, session)
		}
	}
	return n
}

func (f *fakeQuestions) Left(writer string, keepDated bool) {
	if keepDated {
		f.calls = append(f.calls, "left("+writer+",dated)")
		return
	}
	f.calls = append(f.calls, "left("+writer+")")
}

func (f *fakeQuestions) Back(writer string) { f.calls = append(f.calls, "back("+writer+")") }

var certified = regexp.MustCompile(`@(k\d+)/([A-Za-z0-9._-]+)`)

// script is the state of one script's run.
type script struct {
	t     *testing.T
	q     *fakeQuestions
	tab   *Table[string, string]
	conns map[string]*Conn[string]
	keys  map[string]*proof.Key
	// writers names each writer by the connection that first had it.
	writers map[string]string
	line    int
}

func runScript(t *testing.T, file string) {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	q := &fakeQuestions{open: map[string]map[string]int{}}
	s := &script{t: t, q: q, tab: NewTable[string, string](q), conns: map[string]*Conn[string]{}, keys: map[string]*proof.Key{}, writers: map[string]string{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		s.line++
		line, _, _ := strings.Cut(sc.Text(), "#")
		if strings.TrimSpace(line) == "" {
			continue
		}
		line = certified.ReplaceAllStringFunc(line, func(m string) string {
			p := certified.FindStringSubmatch(m)
			return s.key(p[1]).SessionID(p[2])
		})
		step, want, _ := strings.Cut(line, "=>")
		s.step(strings.Fields(step), strings.TrimSpace(want))
	}
}

func (s *script) key(name string) *proof.Key {
	if k := s.keys[name]; k != nil {
		return k
	}
	k, err := proof.NewKey(rand.Reader)
	if err != nil {
		s.t.Fatal(err)
	}
	s.keys[name] = k
	return k
}

func (s *script) fail(format string, a ...any) {
	s.t.Helper()
	s.t.Fatalf("line %d: "+format, append([]any{s.line}, a...)...)
}

func (s *script) conn(name string) *Conn[string] {
	c := s.conns[name]
	if c == nil {
		s.fail("no connection %s", name)
	}
	return c
}

// name is how a script names a connection.
func (s *script) name(c *Conn[string]) string {
	if c == nil {
		return "none"
	}
	return c.Peer
}

// opts reads key=value arguments.
func opts(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		out[k] = v
	}
	return out
}

func (s *script) step(f []string, want string) {
	s.t.Helper()
	switch f[0] {
	case "connect":
		p := TokenHolder()
		if f[2] == "join" {
			key := ""
			if k := opts(f[3:])["key"]; k != "" {
				key = s.key(k).Fingerprint()
			}
			p = Bridge(key)
		}
		s.conns[f[1]] = s.tab.Connect(p, f[1])
	case "hello":
		o := opts(f[3:])
		c := s.conn(f[1])
		s.tab.SayHello(c, Hello{Emitter: f[2] == "emitter", Agent: o["agent"], Instance: o["instance"], Resume: o["resume"]})
		if w := s.tab.Writer(c); w != "" {
			if _, ok := s.writers[w]; !ok {
				s.writers[w] = f[1]
			}
		}
	case "write":
		eff, why := s.tab.Write(s.conn(f[1]), f[2], f[3])
		s.decision(eff, why, want)
	case "post":
		s.decision(Effects[string]{}, s.tab.Post(TokenHolder(), f[1], f[2]), want)
	case "sequenced":
		s.tab.Sequenced(s.conn(f[1]), f[2], f[3])
	case "route":
		r, why := s.tab.Route(f[1])
		got := ""
		switch {
		case why != nil:
			got = "refused " + why.Reason.String()
		case r.Conn == nil:
			got = "local:" + r.Local
		default:
			got = s.name(r.Conn)
		}
		if got != want {
			s.fail("route %s: got %q; want %q", f[1], got, want)
		}
	case "local":
		s.tab.AddLocal(f[1], f[2], f[1])
	case "end":
		s.tab.RemoveLocal(f[1])
	case "open":
		n, _ := strconv.Atoi(f[3])
		if s.q.open[f[1]] == nil {
			s.q.open[f[1]] = map[string]int{}
		}
		s.q.open[f[1]][f[2]] = n
	case "disconnect":
		s.tab.Disconnect(s.conn(f[1]))
	case "claims":
		var got []string
		for _, r := range s.tab.Claims() {
			if r.Conn == nil {
				got = append(got, "local:"+r.Local)
			} else {
				got = append(got, s.name(r.Conn))
			}
		}
		if g := strings.Join(got, " "); g != want {
			s.fail("claims: got %q; want %q", g, want)
		}
	case "questions":
		got := make([]string, len(s.q.calls))
		for i, call := range s.q.calls {
			for w, name := range s.writers {
				call = strings.Replace(call, "("+w, "("+name, 1)
			}
			got[i] = call
		}
		s.q.calls = nil
		if g := strings.Join(got, " "); g != want {
			s.fail("questions: got %q; want %q", g, want)
		}
	case "stats":
		st := s.tab.Stats()
		if got := fmt.Sprintf("sources=%d joined=%d writers=%d", st.Sources, st.JoinedSessions, st.Writers); got != want {
			s.fail("stats: got %q; want %q", got, want)
		}
	case "retire-joined":
		n, _ := strconv.Atoi(f[1])
		c := s.tab.Connect(Bridge(""), "filler")
		s.tab.SayHello(c, Hello{Emitter: true, Resume: "filler"})
		for i := range n {
			if _, why := s.tab.Write(c, fmt.Sprintf("aep://filler/%d", i), fmt.Sprintf("filler-%d", i)); why != nil {
				s.fail("filler %d: %v", i, why)
			}
		}
		s.tab.Disconnect(c)
		s.q.calls = nil
	default:
		s.fail("unknown step %q", f[0])
	}
}

// decision checks a Write or Post against want.
func (s *script) decision(eff Effects[string], why *Refusal, want string) {
	s.t.Helper()
	if why != nil {
		reason, detail, _ := strings.Cut(strings.TrimPrefix(want, "refused "), " ")
		if !strings.HasPrefix(want, "refused ") || why.Reason.String() != reason || !strings.Contains(why.Detail, strings.Trim(detail, `"`)) {
			s.fail("got refused %s %q; want %s", why.Reason, why.Detail, want)
		}
		if why.Code() != "unauthorized" {
			s.fail("a write refused with code %q; want unauthorized", why.Code())
		}
		return
	}
	got := []string{"ok"}
	if eff.Replaced != nil {
		got = append(got, "replaced="+s.name(eff.Replaced))
	}
	if eff.TookSource {
		got = append(got, "took")
	}
	if eff.DroppedClaims > 0 {
		got = append(got, fmt.Sprintf("claims-dropped=%d", eff.DroppedClaims))
	}
	if eff.DroppedOpen > 0 {
		got = append(got, fmt.Sprintf("open-dropped=%d", eff.DroppedOpen))
	}
	if g := strings.Join(got, " "); g != want {
		s.fail("got %q; want %q", g, want)
	}
}
