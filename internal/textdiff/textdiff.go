// Package textdiff writes unified diffs of text, line by line, as diff -u
// and patch read them. wrap and unwrap show the change they would make to
// an MCP client's config this way before they make it.
//
// It does no I/O.
package textdiff

import (
	"fmt"
	"strings"
)

// Unified returns the unified diff (3 lines of context) that turns a into
// b, headed by the names nameA and nameB, or "" when they are equal. A
// last line without a line feed is marked "\ No newline at end of file".
// Lines are compared with Myers' algorithm, whose cost grows with the
// number of changed lines, so a large ~/.claude.json with a few wrapped
// servers diffs quickly.
func Unified(nameA, nameB, a, b string) string {
	if a == b {
		return ""
	}
	al, bl := splitLines(a), splitLines(b)
	// Lines the two share at both ends are kept as they are; only the
	// middle is searched.
	p := 0
	for p < len(al) && p < len(bl) && al[p] == bl[p] {
		p++
	}
	q := 0
	for q < len(al)-p && q < len(bl)-p && al[len(al)-1-q] == bl[len(bl)-1-q] {
		q++
	}
	var ops []diffOp
	for i := 0; i < p; i++ {
		ops = append(ops, diffOp{' ', al[i], i, i})
	}
	for _, o := range myers(al[p:len(al)-q], bl[p:len(bl)-q]) {
		o.a, o.b = o.a+p, o.b+p
		ops = append(ops, o)
	}
	for i := q; i > 0; i-- {
		ops = append(ops, diffOp{' ', al[len(al)-i], len(al) - i, len(bl) - i})
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", nameA, nameB)
	const ctx = 3
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: from ctx lines before this change to ctx lines after the
		// last change that is within 2*ctx lines of the previous one.
		start := max(0, i-ctx)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*ctx {
				end = min(len(ops), end+ctx)
				break
			}
			end = run
		}
		writeHunk(&out, ops[start:end])
		i = end
	}
	return out.String()
}

// diffOp is one line of an edit script: ' ' kept, '-' removed, '+' added;
// a and b are its 0-based line numbers in each side.
type diffOp struct {
	kind byte
	line string
	a, b int
}

func writeHunk(out *strings.Builder, ops []diffOp) {
	aStart, bStart, aLen, bLen := -1, -1, 0, 0
	for _, o := range ops {
		if o.kind != '+' {
			if aStart < 0 {
				aStart = o.a
			}
			aLen++
		}
		if o.kind != '-' {
			if bStart < 0 {
				bStart = o.b
			}
			bLen++
		}
	}
	if aStart < 0 {
		aStart = ops[0].a - 1
	}
	if bStart < 0 {
		bStart = ops[0].b - 1
	}
	fmt.Fprintf(out, "@@ -%d,%d +%d,%d @@\n", aStart+1, aLen, bStart+1, bLen)
	for _, o := range ops {
		out.WriteByte(o.kind)
		out.WriteString(o.line)
		if !strings.HasSuffix(o.line, "\n") {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// splitLines splits s after each line feed.
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// myers returns an edit script from a to b with the fewest changes.
func myers(a, b []string) []diffOp {
	n, m := len(a), len(b)
	maxD := n + m
	v := make([]int, 2*maxD+2)
	var trace [][]int
	off := maxD + 1
	for d := 0; d <= maxD; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, a, b, off, d)
			}
		}
	}
	return nil
}

func backtrack(trace [][]int, a, b []string, off, d int) []diffOp {
	var ops []diffOp
	x, y := len(a), len(b)
	for ; d > 0; d-- {
		v := trace[d]
		k := x - y
		var prevK int
		if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := v[off+prevK]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x, y = x-1, y-1
			ops = append(ops, diffOp{' ', a[x], x, y})
		}
		if x == prevX {
			y--
			ops = append(ops, diffOp{'+', b[y], x, y})
		} else {
			x--
			ops = append(ops, diffOp{'-', a[x], x, y})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		ops = append(ops, diffOp{' ', a[x], x, y})
	}
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	return ops
}
