package relay

import (
	"context"
	"encoding/json"
	"net/http"
)

// IsEndpoint reports whether addr (host:port) answers AEP discovery
// (AEP-0003 §3.4) for token: another bridge's endpoint this one can join as
// an emitter.
func IsEndpoint(ctx context.Context, addr, token string) bool {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/.well-known/aep", nil)
	if err != nil {
		return false
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var doc struct {
		AEP []string `json:"aep"`
	}
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&doc) == nil && len(doc.AEP) > 0
}
