package store

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agenteventprotocol/aep-mcp-bridge/identity"
)

// Seen is when each record was last used, by name: operators as
// "operator NAME", clients as "client NAME".
type Seen map[string]time.Time

// OperatorKey and ClientKey name a record in Seen.
func OperatorKey(name string) string { return "operator " + name }

// ClientKey names a client's record in Seen.
func ClientKey(name string) string { return "client " + name }

// maxSeen bounds the names the file keeps: twice the records a document
// holds, so names of revoked records age out.
const maxSeen = 4 * identity.MaxRecords

// LoadSeen reads when each record of the state folder dir was last used.
// A missing or unreadable file is an empty record: it is informational.
func LoadSeen(dir string) Seen {
	data, err := read(filepath.Join(dir, SeenName))
	out := Seen{}
	if err != nil || data == nil {
		return out
	}
	var in map[string]time.Time
	if json.Unmarshal(data, &in) != nil {
		return out
	}
	for k, v := range in {
		out[k] = v
	}
	return out
}

// addSeen merges updates into the file of the state folder dir, under
// the lock: each name keeps its latest time, and names of records the
// document no longer has are dropped.
func addSeen(dir string, updates Seen, doc *identity.Document) error {
	unlock, err := lock(filepath.Join(dir, lockName))
	if err != nil {
		return err
	}
	defer unlock()
	all := LoadSeen(dir)
	for k, v := range updates {
		if v.After(all[k]) {
			all[k] = v.UTC().Truncate(time.Second)
		}
	}
	known := map[string]bool{}
	for _, o := range doc.Operators {
		known[OperatorKey(o.Name)] = true
	}
	for _, c := range doc.Clients {
		known[ClientKey(c.Name)] = true
	}
	for k := range all {
		if !known[k] || len(all) > maxSeen {
			delete(all, k)
		}
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return fmt.Errorf("recording when identities were last used: %w", err)
	}
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("recording when identities were last used: %w", err)
	}
	return writeAtomic(filepath.Join(dir, SeenName), append(b, '\n'))
}
