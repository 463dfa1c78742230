package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"

	"go.yaml.in/yaml/v3"
)

// maxDocDepth bounds how deeply a JSON policy document may nest; a policy
// needs four levels.
const maxDocDepth = 32

// jsonDoc reads a JSON policy document into the same node tree a YAML one
// gives, so one walker validates both. YAML readers differ from JSON on a
// few escapes (\/), so JSON is read as JSON. Duplicate keys are kept for
// the walker to refuse.
func jsonDoc(data []byte) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var starts []int // offsets where lines start
	starts = append(starts, 0)
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	lineAt := func(off int64) int {
		// The next token starts after white space and separators.
		for int(off) < len(data) {
			switch data[off] {
			case ' ', '\t', '\r', '\n', ',', ':':
				off++
				continue
			}
			break
		}
		return sort.SearchInts(starts, int(off)+1)
	}
	var node func(depth int) (*yaml.Node, error)
	node = func(depth int) (*yaml.Node, error) {
		if depth > maxDocDepth {
			return nil, fmt.Errorf("the document nests deeper than %d levels", maxDocDepth)
		}
		line := lineAt(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case json.Delim:
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: line}
			end := json.Delim('}')
			if t == '[' {
				n.Kind, n.Tag, end = yaml.SequenceNode, "!!seq", ']'
			}
			for dec.More() {
				if n.Kind == yaml.MappingNode {
					kline := lineAt(dec.InputOffset())
					k, err := dec.Token()
					if err != nil {
						return nil, err
					}
					n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k.(string), Line: kline})
				}
				c, err := node(depth + 1)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, c)
			}
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			if tok != end {
				return nil, fmt.Errorf("expected %v", end)
			}
			return n, nil
		case string:
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t, Line: line}, nil
		case json.Number:
			tag := "!!int"
			if bytes.ContainsAny([]byte(t), ".eE") {
				tag = "!!float"
			}
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(t), Line: line}, nil
		case bool:
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t), Line: line}, nil
		case nil:
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Line: line}, nil
		}
		return nil, fmt.Errorf("unexpected token %v", tok)
	}
	root, err := node(0)
	if err != nil {
		return nil, jsonError(data, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("the JSON document has more after its end; keep one object in the file")
	}
	return root, nil
}

// jsonError says where a JSON document stopped being JSON.
func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Errorf("line %d: the file is not valid JSON: %v", line, se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errors.New("the file is not valid JSON: it ends in the middle of a value")
	}
	return fmt.Errorf("the file is not valid JSON: %v", err)
}
