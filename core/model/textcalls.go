package model

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dsh-dev/dsh/core/lazyre"
)

// DeepSeek models sometimes write a tool call into their reply's text in
// the markup of their own chat templates instead of sending it as a tool
// call: the V3 form
//
//	<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
//	```json
//	{"arg": 1}
//	```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//
// (V3.1 writes NAME<｜tool▁sep｜>{"arg": 1} without the type and fence), and
// the DSML form of the V3.2/V4 templates
//
//	<｜DSML｜function_calls>
//	<｜DSML｜invoke name="NAME">
//	<｜DSML｜parameter name="arg" string="false">1</｜DSML｜parameter>
//	</｜DSML｜invoke>
//	</｜DSML｜function_calls>
//
// ParseTextCalls finds them so the loop can run them as the calls they are.
//
// The example rule: markup that starts inside a fenced code block (a line
// opening with ``` or ~~~, up to the line that closes it) or inside an
// inline `code span` on its line is an example the model is showing, not a
// call: it stays text and is never run. Everything else that starts like a
// call is parsed; what does not parse is reported, never run.

// TextCalls is what ParseTextCalls found in a reply's text.
type TextCalls struct {
	// Text is the reply's text with the parsed markup removed (trimmed);
	// the text around the calls stays.
	Text string
	// Calls are the parsed calls, in the order written, without ids.
	Calls []ToolCall
	// Broken says why markup that starts like a call could not be parsed
	// (half-written, not closed, no call in it); "" when all parsed.
	Broken string
}

// Found reports whether the text held call markup, parsed or not.
func (t TextCalls) Found() bool { return len(t.Calls) > 0 || t.Broken != "" }

// Token patterns. The models write the fullwidth bar ｜ and the block ▁ of
// their tokenizer; ASCII | and _ are accepted too, as a model copying the
// markup from memory may write them.
const (
	bar   = `[|｜]`
	space = `[▁_]`
)

var (
	reStart = lazyre.New(`<` + bar + `tool` + space + `calls?` + space + `begin` + bar + `>|<` + bar +
		`DSML` + bar + `(?:function_calls|invoke)\b`)
	reV3CallsBegin = lazyre.New(`^<` + bar + `tool` + space + `calls` + space + `begin` + bar + `>`)
	reV3CallsEnd   = lazyre.New(`<` + bar + `tool` + space + `calls` + space + `end` + bar + `>`)
	reV3Call       = lazyre.New(`(?s)^\s*<` + bar + `tool` + space + `call` + space + `begin` + bar + `>(.*?)<` + bar +
		`tool` + space + `sep` + bar + `>(.*?)<` + bar + `tool` + space + `call` + space + `end` + bar + `>`)
	reDSML         = lazyre.New(`^<` + bar + `DSML` + bar)
	reDSMLCalls    = lazyre.New(`^<` + bar + `DSML` + bar + `function_calls>`)
	reDSMLCallsEnd = lazyre.New(`</` + bar + `DSML` + bar + `function_calls>`)
	reDSMLInvoke   = lazyre.New(`(?s)^\s*<` + bar + `DSML` + bar + `invoke\s+name="([^"]*)"\s*>(.*?)</` + bar + `DSML` + bar + `invoke>`)
	reDSMLParam    = lazyre.New(`(?s)^\s*<` + bar + `DSML` + bar + `parameter\s+name="([^"]*)"(?:\s+string="(true|false)")?\s*>(.*?)</` +
		bar + `DSML` + bar + `parameter>`)
)

// ParseTextCalls parses the call markup out of a reply's text.
func ParseTextCalls(text string) TextCalls {
	var out TextCalls
	var rest strings.Builder
	pos := 0
	for {
		loc := reStart().FindStringIndex(text[pos:])
		if loc == nil {
			rest.WriteString(text[pos:])
			break
		}
		start := pos + loc[0]
		if isExample(text, start) {
			rest.WriteString(text[pos : pos+loc[1]])
			pos += loc[1]
			continue
		}
		rest.WriteString(text[pos:start])
		calls, n, why := parseMarkup(text[start:])
		if why != "" {
			out.Broken = why
			rest.WriteString(text[start:])
			break
		}
		out.Calls = append(out.Calls, calls...)
		pos = start + n
	}
	if !out.Found() {
		out.Text = text
		return out
	}
	out.Text = strings.TrimSpace(rest.String())
	return out
}

// isExample reports whether the markup at off sits in a fenced code block
// or an inline code span, so it is shown, not called.
func isExample(text string, off int) bool {
	fence := ""
	lineStart := 0
	for lineStart < off {
		end := strings.IndexByte(text[lineStart:], '\n')
		if end < 0 || lineStart+end >= off {
			break
		}
		line := strings.TrimLeft(text[lineStart:lineStart+end], " \t")
		for _, f := range []string{"```", "~~~"} {
			if strings.HasPrefix(line, f) && (fence == "" || fence == f) {
				if fence == "" {
					fence = f
				} else {
					fence = ""
				}
				break
			}
		}
		lineStart += end + 1
	}
	if fence != "" {
		return true
	}
	return strings.Count(text[lineStart:off], "`")%2 == 1
}

// parseMarkup parses the markup at the start of s: its calls and length,
// or why it does not parse.
func parseMarkup(s string) ([]ToolCall, int, string) {
	switch {
	case reV3CallsBegin().MatchString(s):
		begin := reV3CallsBegin().FindStringIndex(s)[1]
		end := reV3CallsEnd().FindStringIndex(s[begin:])
		if end == nil {
			return nil, 0, "the tool-call markup is not closed (no tool▁calls▁end): the call is incomplete"
		}
		calls, rest, why := parseV3Calls(s[begin : begin+end[0]])
		if why == "" && strings.TrimSpace(rest) != "" {
			why = fmt.Sprintf("unexpected text inside the tool-call markup: %q", cut(strings.TrimSpace(rest)))
		}
		if why == "" && len(calls) == 0 {
			why = "the tool-call markup holds no call"
		}
		return calls, begin + end[1], why
	case !reDSML().MatchString(s):
		// A bare tool▁call▁begin block (the outer wrapper left out).
		calls, rest, why := parseV3Calls(s)
		if why == "" && len(calls) == 0 {
			why = "the tool-call markup is not complete (no tool▁sep and tool▁call▁end)"
		}
		n := len(s) - len(rest)
		if loc := reV3CallsEnd().FindStringIndex(rest); loc != nil && strings.TrimSpace(rest[:loc[0]]) == "" {
			n += loc[1]
		}
		return calls, n, why
	case reDSMLCalls().MatchString(s):
		begin := reDSMLCalls().FindStringIndex(s)[1]
		end := reDSMLCallsEnd().FindStringIndex(s[begin:])
		if end == nil {
			return nil, 0, "the DSML function_calls block is not closed: the call is incomplete"
		}
		calls, rest, why := parseInvokes(s[begin : begin+end[0]])
		if why == "" && strings.TrimSpace(rest) != "" {
			why = fmt.Sprintf("unexpected text inside the DSML function_calls block: %q", cut(strings.TrimSpace(rest)))
		}
		if why == "" && len(calls) == 0 {
			why = "the DSML function_calls block holds no invoke"
		}
		return calls, begin + end[1], why
	default:
		// A bare invoke (the function_calls wrapper left out).
		calls, rest, why := parseInvokes(s)
		if why == "" && len(calls) == 0 {
			why = "the DSML invoke is not complete (no closing </｜DSML｜invoke>)"
		}
		n := len(s) - len(rest)
		if loc := reDSMLCallsEnd().FindStringIndex(rest); loc != nil && strings.TrimSpace(rest[:loc[0]]) == "" {
			n += loc[1]
		}
		return calls, n, why
	}
}

// parseV3Calls parses consecutive tool▁call blocks from the start of s,
// returning the calls and what follows them.
func parseV3Calls(s string) ([]ToolCall, string, string) {
	var calls []ToolCall
	for {
		m := reV3Call().FindStringSubmatchIndex(s)
		if m == nil {
			return calls, s, ""
		}
		pre, post := strings.TrimSpace(s[m[2]:m[3]]), s[m[4]:m[5]]
		name, args := pre, post
		if pre == "function" {
			// V3: the type, then the name on the line after the separator.
			line, body, _ := strings.Cut(strings.TrimLeft(post, " \t"), "\n")
			name, args = line, body
		}
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, s, "a call in the tool-call markup has no function name"
		}
		calls = append(calls, ToolCall{Name: name, Arguments: unfence(args)})
		s = s[m[1]:]
	}
}

// unfence is a call's JSON arguments without the ```json fence around them.
func unfence(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") {
		if _, body, ok := strings.Cut(s, "\n"); ok {
			s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(body), "```"))
		}
	}
	if s == "" {
		return "{}"
	}
	return s
}

// parseInvokes parses consecutive DSML invokes from the start of s.
func parseInvokes(s string) ([]ToolCall, string, string) {
	var calls []ToolCall
	for {
		m := reDSMLInvoke().FindStringSubmatchIndex(s)
		if m == nil {
			return calls, s, ""
		}
		name := strings.TrimSpace(s[m[2]:m[3]])
		if name == "" {
			return nil, s, "a DSML invoke has an empty name"
		}
		args, why := dsmlArgs(s[m[4]:m[5]])
		if why != "" {
			return nil, s, fmt.Sprintf("the DSML invoke of %s: %s", name, why)
		}
		calls = append(calls, ToolCall{Name: name, Arguments: args})
		s = s[m[1]:]
	}
}

// dsmlArgs turns an invoke's parameters into a JSON object, in the order
// written: string="true" values are strings as written, the others JSON
// (a value that is not JSON is taken as a string).
func dsmlArgs(body string) (string, string) {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; ; i++ {
		m := reDSMLParam().FindStringSubmatch(body)
		if m == nil {
			break
		}
		body = body[len(m[0]):]
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonString(m[1]))
		b.WriteByte(':')
		val := m[3]
		if raw := strings.TrimSpace(val); m[2] != "true" && raw != "" && json.Valid([]byte(raw)) {
			b.WriteString(raw)
			continue
		}
		b.WriteString(jsonString(val))
	}
	if rest := strings.TrimSpace(body); rest != "" {
		return "", fmt.Sprintf("unexpected text among its parameters: %q", cut(rest))
	}
	b.WriteByte('}')
	return b.String(), ""
}

// jsonString quotes s as JSON, leaving <, > and & as they are.
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func cut(s string) string {
	if len(s) <= 80 {
		return s
	}
	n := 80
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
