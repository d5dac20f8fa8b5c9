package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"

	"github.com/dsh-dev/dsh/core/event"
)

// Limits of web_fetch.
const (
	fetchTimeout      = 30 * time.Second // the whole fetch: connect, redirects, body
	fetchMaxBytes     = 5 << 20          // body bytes read; the rest is not fetched
	fetchMaxRedirects = 10
)

// WebFetchOptions configure web_fetch.
type WebFetchOptions struct {
	// AllowPrivate lets it reach loopback, private, link-local and other
	// non-public addresses (config webFetchAllowPrivate). Off by default: a
	// page must not be able to steer the model into the user's network.
	AllowPrivate bool
	// Timeout replaces fetchTimeout when positive.
	Timeout time.Duration
	// NetworkOff refuses every fetch: the user turned the network off
	// (sandboxNetwork false), for commands and dsh's own requests alike.
	NetworkOff bool
}

// ErrNetworkOff is why a fetch is refused with the network off.
var ErrNetworkOff = errors.New("the network is off (sandboxNetwork: false in dsh's config)")

// WebFetch returns the web_fetch tool.
func WebFetch(o WebFetchOptions) Tool { return webFetchTool{o: o} }

const webFetchSchema = `{"type":"object","properties":{"url":{"type":"string","description":"The http:// or https:// URL to fetch."},"prompt":{"type":"string","description":"What you are looking for in the page; it is repeated at the top of the result to keep the reading focused (no second model reads the page)."}},"required":["url"],"additionalProperties":false}`

const webFetchDescription = `Fetch a web page over HTTP(S) and return it as Markdown (HTML is converted; other text as it is). Follows up to 10 redirects, gives up after 30 seconds, reads at most 5 MB; long pages are cut to the output budget with the whole kept in a file read can page. Only http and https URLs; loopback and private network addresses are refused unless the user's config allows them.`

type webFetchTool struct{ o WebFetchOptions }

type webFetchArgs struct {
	URL    string `json:"url"`
	Prompt string `json:"prompt"`
}

func (webFetchTool) Name() string { return "web_fetch" }
func (t webFetchTool) Description() string {
	if t.o.NetworkOff {
		return webFetchDescription + " The network is off in this session: every fetch is refused."
	}
	return webFetchDescription
}
func (webFetchTool) Schema() json.RawMessage { return json.RawMessage(webFetchSchema) }
func (webFetchTool) Kind() Kind              { return KindExecute }
func (webFetchTool) ParallelSafe() bool      { return false }

func (webFetchTool) parse(args json.RawMessage) (webFetchArgs, *url.URL, error) {
	var a webFetchArgs
	if err := decodeArgs("web_fetch", args, &a); err != nil {
		return a, nil, err
	}
	if err := required("web_fetch", "url", strings.TrimSpace(a.URL)); err != nil {
		return a, nil, err
	}
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil {
		return a, nil, fmt.Errorf("invalid arguments for web_fetch: %q is not a URL: %v", a.URL, err)
	}
	if err := checkScheme(u); err != nil {
		return a, nil, fmt.Errorf("invalid arguments for web_fetch: %w", err)
	}
	return a, u, nil
}

func checkScheme(u *url.URL) error {
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return fmt.Errorf("%q has no scheme; use an http:// or https:// URL", u.String())
	default:
		return fmt.Errorf("%s: URLs are refused; web_fetch fetches http:// and https:// URLs only (read files with read)", u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", u.String())
	}
	return nil
}

func (t webFetchTool) Inspect(args json.RawMessage, _ *Env) (Access, error) {
	_, u, err := t.parse(args)
	if err != nil {
		return Access{}, err
	}
	return Access{Command: "web_fetch " + u.String(), Title: "Fetch " + u.String()}, nil
}

func (t webFetchTool) Run(ctx context.Context, args json.RawMessage, env *Env) Result {
	a, u, err := t.parse(args)
	if err != nil {
		return ErrorResult(err.Error())
	}
	if t.o.NetworkOff {
		return ErrorResult(fmt.Sprintf("web_fetch refused %s: %v", u, ErrNetworkOff))
	}
	meta := &event.ToolMeta{Kind: "fetch"}
	timeout := fetchTimeout
	if t.o.Timeout > 0 {
		timeout = t.o.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	page, err := t.fetch(ctx, u)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return withMeta(ErrorResult(fmt.Sprintf("web_fetch %s: no complete answer within %s", u, timeout)), meta)
		}
		return withMeta(ErrorResult(fmt.Sprintf("web_fetch %s: %v", u, err)), meta)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\n", page.url)
	if page.url != u.String() {
		fmt.Fprintf(&b, "(redirected from %s)\n", u)
	}
	if a.Prompt != "" {
		fmt.Fprintf(&b, "Looking for: %s\n", a.Prompt)
	}
	b.WriteString("\n")
	b.WriteString(page.text)
	if page.cut {
		fmt.Fprintf(&b, "\n[the page is larger than %d MB; only its first %d MB were fetched]\n", fetchMaxBytes>>20, fetchMaxBytes>>20)
	}
	text, cut := FitText(env, b.String())
	meta.Truncated = cut || page.cut
	return withMeta(TextResult(text), meta)
}

type fetched struct {
	url  string
	text string
	cut  bool
}

// fetch gets u and turns its body into text.
func (t webFetchTool) fetch(ctx context.Context, u *url.URL) (fetched, error) {
	client := t.client()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fetched{}, err
	}
	req.Header.Set("User-Agent", "dsh web_fetch (+https://github.com/dsh-dev/dsh)")
	req.Header.Set("Accept", "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.1")
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fetched{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, fetchMaxBytes+1))
	if err != nil {
		return fetched{}, fmt.Errorf("reading the page: %w", err)
	}
	page := fetched{url: resp.Request.URL.String()}
	if len(body) > fetchMaxBytes {
		body, page.cut = body[:fetchMaxBytes], true
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet, _ := cutLine(strings.TrimSpace(strings.ToValidUTF8(string(body[:min(len(body), 500)]), "")), 300)
		return fetched{}, fmt.Errorf("the server answered %s: %s", resp.Status, snippet)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "" {
		mt = http.DetectContentType(body)
		mt, _, _ = mime.ParseMediaType(mt)
	}
	text := strings.ToValidUTF8(string(body), "\uFFFD")
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		base := resp.Request.URL
		md, err := htmltomarkdown.ConvertString(text, converter.WithDomain(base.Scheme+"://"+base.Host))
		if err != nil {
			return fetched{}, fmt.Errorf("converting the page to Markdown: %w", err)
		}
		page.text = md
	case strings.HasPrefix(mt, "text/"), mt == "application/json", strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"), mt == "application/xml", mt == "application/javascript":
		page.text = text
	default:
		return fetched{}, fmt.Errorf("the answer is %s (%d bytes), not text; web_fetch returns text and web pages only", mt, len(body))
	}
	return page, nil
}

// client is an HTTP client that refuses non-HTTP redirects, stops after
// fetchMaxRedirects and, unless allowed, will not connect to a non-public
// address, checked on the address really dialled (after DNS), so a name
// that resolves to 127.0.0.1 is refused too.
func (t webFetchTool) client() *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	if !t.o.AllowPrivate {
		dialer.Control = func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if err != nil {
				return err
			}
			ip, err := netip.ParseAddr(host)
			if err != nil {
				return err
			}
			if !publicAddr(ip) {
				return fmt.Errorf("%w: %s is a loopback, private or otherwise non-public address (a user may allow such addresses with webFetchAllowPrivate in the config file)", errPrivateAddr, ip)
			}
			return nil
		}
	}
	tr := &http.Transport{
		Proxy:                 nil, // the address checked is the address dialled
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 20 * time.Second,
		MaxIdleConns:          1,
		DisableKeepAlives:     true,
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= fetchMaxRedirects {
				return fmt.Errorf("stopped after %d redirects (the last to %s)", fetchMaxRedirects, req.URL)
			}
			return checkScheme(req.URL)
		},
	}
}

var errPrivateAddr = errors.New("refused")

// publicAddr reports whether ip is a public unicast address.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || !ip.IsValid() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// nonPublic are ranges the netip predicates do not cover.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64 can reach private IPv4
}
