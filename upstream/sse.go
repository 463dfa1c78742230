package upstream

import (
	"bufio"
	"bytes"
	"io"
	"strings"
)

// sseEvent is one server-sent event.
type sseEvent struct {
	id, event string
	data      []byte
}

// readSSE calls fn for every event of an event stream until it ends or fn
// returns false. Comments and retry fields are skipped.
func readSSE(r io.Reader, fn func(sseEvent) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var ev sseEvent
	var data bytes.Buffer
	hasData := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if hasData || ev.event != "" {
				ev.data = append([]byte(nil), data.Bytes()...)
				if !fn(ev) {
					return nil
				}
			}
			ev, hasData = sseEvent{id: ev.id}, false
			data.Reset()
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.id = value
		case "event":
			ev.event = value
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			data.WriteString(value)
			hasData = true
		}
	}
	return sc.Err()
}
