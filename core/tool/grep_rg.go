package tool

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// errNoRipgrep sends grep to its Go engine: rg is not on PATH, or it
// cannot take a pattern Go accepts.
var errNoRipgrep = errors.New("ripgrep not available")

// ripgrepArgs makes rg walk exactly like walkFiles: hidden files searched,
// .git skipped, only .gitignore files honoured (no .ignore, .rgignore,
// global excludes or .git/info/exclude), also outside a git repository, and
// raw bytes searched (no BOM transcoding). The include glob becomes a file
// type rather than -g, because -g would re-include ignored files.
func ripgrepArgs(q grepQuery) []string {
	args := []string{
		"--no-config", "--no-messages", "--color", "never",
		"--no-heading", "--with-filename", "--line-number", "--null",
		"--hidden", "--glob", "!.git",
		"--no-require-git", "--no-ignore-dot", "--no-ignore-global", "--no-ignore-exclude",
		"--encoding", "none",
	}
	if q.include != nil && !q.inclRel && !strings.ContainsAny(q.inclRaw, ":\x00") {
		args = append(args, "--type-add", "dshinclude:"+q.inclRaw, "--type", "dshinclude")
	}
	return append(args, "--regexp", q.pattern, "--", q.root)
}

// grepRipgrep runs rg over a folder and feeds the collector. Every line rg
// reports is checked again with Go's regexp and the include glob, so rg's
// different regex dialect (Unicode classes) can only narrow, never widen,
// the answer.
func grepRipgrep(ctx context.Context, q grepQuery, col *grepCollector) error {
	rg, err := exec.LookPath("rg")
	if err != nil {
		return errNoRipgrep
	}
	cmd := exec.CommandContext(ctx, rg, ripgrepArgs(q)...)
	cmd.Env = CommandEnv(os.Environ(), nil)
	stderr := newHeadTail(4096)
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("run rg: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return errNoRipgrep
	}
	found := 0
	r := bufio.NewReaderSize(out, 64<<10)
	var line []byte
	for {
		chunk, rerr := r.ReadSlice('\n')
		line = append(line, chunk...)
		if rerr == bufio.ErrBufferFull {
			continue
		}
		if len(line) > 0 {
			if h, ok := parseRipgrepLine(line); ok && q.re.Match(h.rawText) && q.includes(h.path, q.root) {
				found++
				col.add(grepHit{path: h.path, line: h.line, text: hitText(h.rawText)})
			}
			line = line[:0]
		}
		if rerr != nil {
			if rerr != io.EOF {
				_, _ = io.Copy(io.Discard, out)
			}
			break
		}
	}
	werr := cmd.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ee *exec.ExitError
	if errors.As(werr, &ee) && ee.ExitCode() == 2 && found == 0 && strings.Contains(stderr.String(), "regex") {
		// Valid RE2 that rg's dialect refuses (\Q…\E, say): let Go do it.
		return errNoRipgrep
	}
	return nil
}

type rgLine struct {
	path    string
	line    int
	rawText []byte // without the "\n", with any "\r"
}

// parseRipgrepLine parses "path\x00line:text\n".
func parseRipgrepLine(b []byte) (rgLine, bool) {
	b = bytes.TrimSuffix(b, []byte("\n"))
	path, rest, ok := bytes.Cut(b, []byte{0})
	if !ok {
		return rgLine{}, false
	}
	num, text, ok := bytes.Cut(rest, []byte(":"))
	if !ok {
		return rgLine{}, false
	}
	n, err := strconv.Atoi(string(num))
	if err != nil {
		return rgLine{}, false
	}
	return rgLine{path: string(path), line: n, rawText: text}, true
}
