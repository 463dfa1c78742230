package policy

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a policy document: where, and what to do.
type Problem struct {
	// Line is the line of the document it is on, from 1; 0 when the
	// problem is about the whole document.
	Line int
	// Rule is the rule's position in rules, from 1; 0 when the problem is
	// not in a rule.
	Rule int
	// RuleID is the rule's id when it has a valid one.
	RuleID string
	// Field is the field it is about ("approvals", "groups.oncall"), or
	// "" for the document or the rule as a whole.
	Field string
	// Msg says what is wrong and what to do.
	Msg string
}

// String writes the problem as one line:
//
//	line 14: rule 3 "prod-deploy": approvals: 3 needs …; lower approvals or add approvers
func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", p.Line)
	}
	if p.Rule > 0 {
		fmt.Fprintf(&b, "rule %d", p.Rule)
		if p.RuleID != "" {
			fmt.Fprintf(&b, " %q", p.RuleID)
		}
		b.WriteString(": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// maxProblems bounds how many problems a ParseError lists.
const maxProblems = 20

// ParseError is a policy document that did not load, with every problem
// found (up to 20). Nothing of it is used: a bridge keeps the policy it had.
type ParseError struct {
	Problems []Problem
	// More counts the problems found beyond those listed.
	More int
}

func (e *ParseError) Error() string {
	var b strings.Builder
	if len(e.Problems) == 1 && e.More == 0 {
		b.WriteString("the policy did not load: ")
		b.WriteString(e.Problems[0].String())
		return b.String()
	}
	fmt.Fprintf(&b, "the policy did not load: %d problems", len(e.Problems)+e.More)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "\n  … and %d more", e.More)
	}
	return b.String()
}
