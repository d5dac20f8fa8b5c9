package tool

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func fetchServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>T</title><script>var x=1;</script></head><body><h1>Hello</h1><p>Some <b>bold</b> text and <a href="/other">a link</a>.</p><ul><li>one</li><li>two</li></ul></body></html>`)
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "just text\n")
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/page", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/tofile", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no such page", http.StatusNotFound) })
	mux.HandleFunc("/binary", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte{0, 1, 2, 3})
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		line := strings.Repeat("x", 1023) + "\n"
		for i := 0; i < (fetchMaxBytes>>10)+100; i++ {
			if _, err := w.Write([]byte(line)); err != nil {
				return
			}
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestWebFetch(t *testing.T) {
	srv := fetchServer(t)
	te := newTestEnv(t)
	withSpill(t, te)
	open := WebFetch(WebFetchOptions{AllowPrivate: true, Timeout: 2 * time.Second})

	out := mustOK(t, call(t, open, te.Env, obj{"url": srv.URL + "/page", "prompt": "the heading"}))
	contains(t, out, "URL: "+srv.URL+"/page\n", "Looking for: the heading\n", "# Hello", "**bold**", "[a link]("+srv.URL+"/other)", "- one\n- two")
	if strings.Contains(out, "var x") {
		t.Fatalf("script kept:\n%s", out)
	}
	contains(t, mustOK(t, call(t, open, te.Env, obj{"url": srv.URL + "/redirect"})), "URL: "+srv.URL+"/page\n(redirected from "+srv.URL+"/redirect)", "# Hello")
	contains(t, mustOK(t, call(t, open, te.Env, obj{"url": srv.URL + "/plain"})), "just text")

	huge := call(t, open, te.Env, obj{"url": srv.URL + "/huge"})
	contains(t, mustOK(t, huge), "saved in", "only its first 5 MB were fetched")
	if len(text(huge)) > OutputBudget {
		t.Fatalf("result of %d bytes", len(text(huge)))
	}

	// Bad input and faults.
	mustErr(t, call(t, open, te.Env, obj{"url": "file:///etc/passwd"}), "file: URLs are refused")
	mustErr(t, call(t, open, te.Env, obj{"url": "ftp://example.com/x"}), "ftp: URLs are refused")
	mustErr(t, call(t, open, te.Env, obj{"url": "example.com"}), "has no scheme")
	mustErr(t, call(t, open, te.Env, obj{}), "url is required")
	mustErr(t, call(t, open, te.Env, obj{"url": srv.URL + "/loop"}), "stopped after 10 redirects")
	mustErr(t, call(t, open, te.Env, obj{"url": srv.URL + "/tofile"}), "file: URLs are refused")
	start := time.Now()
	mustErr(t, call(t, open, te.Env, obj{"url": srv.URL + "/hang"}), "no complete answer within 2s")
	if time.Since(start) > 10*time.Second {
		t.Fatal("the timeout did not hold")
	}
	mustErr(t, call(t, open, te.Env, obj{"url": srv.URL + "/missing"}), "the server answered 404 Not Found: no such page")
	mustErr(t, call(t, open, te.Env, obj{"url": srv.URL + "/binary"}), "application/octet-stream (4 bytes), not text")

	// By default loopback is refused, also behind a name.
	closed := WebFetch(WebFetchOptions{Timeout: 2 * time.Second})
	mustErr(t, call(t, closed, te.Env, obj{"url": srv.URL + "/page"}), "127.0.0.1 is a loopback, private or otherwise non-public address", "webFetchAllowPrivate")
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	mustErr(t, call(t, closed, te.Env, obj{"url": "http://localhost" + port + "/page"}), "non-public address")
}

func TestPublicAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true,
		"127.0.0.1": false, "::1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "100.64.0.1": false, "0.0.0.0": false, "::ffff:127.0.0.1": false,
		"fd00::1": false, "fe80::1": false, "224.0.0.1": false,
	} {
		if got := publicAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("publicAddr(%s) = %v", addr, got)
		}
	}
}
