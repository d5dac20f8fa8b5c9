package tool

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestWebFetchRefusedWithTheNetworkOff: with sandboxNetwork false the
// tool says so in its description and refuses every fetch without a
// request leaving dsh.
func TestWebFetchRefusedWithTheNetworkOff(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("page"))
	}))
	defer srv.Close()
	wf := WebFetch(WebFetchOptions{AllowPrivate: true, NetworkOff: true})
	if !strings.Contains(wf.Description(), "network is off") {
		t.Fatalf("description: %s", wf.Description())
	}
	args, _ := json.Marshal(map[string]string{"url": srv.URL})
	r := wf.Run(context.Background(), args, &Env{Cwd: t.TempDir()})
	if !r.IsError || !strings.Contains(text(r), "sandboxNetwork: false") || hits.Load() != 0 {
		t.Fatalf("result %+v, %d requests", r, hits.Load())
	}
}
