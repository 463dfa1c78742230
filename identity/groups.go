package identity

import (
	"fmt"
	"slices"
)

// MaxGroup bounds a group's name in bytes; MaxGroups the groups of one
// record.
const (
	MaxGroup  = 64
	MaxGroups = 32
)

// ValidGroup says why group cannot name a group, or nil. A group name is
// 1 to MaxGroup ASCII letters, digits and - _ ., starting with a letter or
// a digit: the names a policy's approvers write as group:NAME.
func ValidGroup(group string) error { return validWord("group name", group, MaxGroup, "._-") }

// ParseGroups checks a record's groups and returns them sorted, each
// once: a record is in a group or not, so order and repetition mean
// nothing.
func ParseGroups(groups []string) ([]string, error) {
	var out []string
	for _, g := range groups {
		if err := ValidGroup(g); err != nil {
			return nil, fmt.Errorf("group %q: %w", g, err)
		}
		out = append(out, g)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxGroups {
		return nil, fmt.Errorf("%d groups; a record is in at most %d", len(out), MaxGroups)
	}
	return out, nil
}

// In reports whether the operator is in group.
func (o Operator) In(group string) bool {
	_, ok := slices.BinarySearch(o.Groups, group)
	return ok
}

// Groups returns the groups the operator named name is in, sorted, whatever
// the state of its record; nil when no operator has that name. The slice
// is the caller's.
func (d *Directory) Groups(name string) []string {
	o, ok := d.doc.Operator(name)
	if !ok {
		return nil
	}
	return slices.Clone(o.Groups)
}

// Members returns the names of the operators in group, in the order they
// were added, whatever the state of their records.
func (d *Directory) Members(group string) []string {
	var out []string
	for _, o := range d.doc.Operators {
		if o.In(group) {
			out = append(out, o.Name)
		}
	}
	return out
}
