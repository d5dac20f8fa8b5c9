package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoorsImportNoOtherDoor enforces ARCHITECTURE.md §2's rules of direction for
// the doors and the gateway (core's own rule is tested in core): the
// doors do not import each other or subagent, and subagent may use the
// doors' clients and framing (sdkrpc/client, acp/wire) but not their servers. Only cmd wires them together.
func TestDoorsImportNoOtherDoor(t *testing.T) {
	const mod = "github.com/dsh-dev/dsh/"
	for _, tc := range []struct {
		pkgs   string
		banned []string // packages (and their subpackages) that must not be dependencies
		exact  []string // packages that must not be dependencies (subpackages may be)
	}{
		{pkgs: mod + "acp/...", banned: []string{mod + "sdkrpc", mod + "subagent", mod + "cmd", "github.com/sourcegraph/jsonrpc2"}},
		{pkgs: mod + "sdkrpc/...", banned: []string{mod + "acp", mod + "subagent", mod + "cmd", "github.com/coder/acp-go-sdk"}},
		// acp/wire is the ACP framing both sides use (the gateway's ACP
		// client runs on it); acp itself is the door's server.
		{pkgs: mod + "subagent/...", banned: []string{mod + "cmd"}, exact: []string{mod + "sdkrpc", mod + "acp"}},
	} {
		out, err := exec.Command("go", "list", "-deps", tc.pkgs).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", tc.pkgs, err, out)
		}
		own := strings.TrimSuffix(tc.pkgs, "/...")
		for _, dep := range strings.Fields(string(out)) {
			if dep == own || strings.HasPrefix(dep, own+"/") {
				continue
			}
			for _, bad := range tc.banned {
				if dep == bad || strings.HasPrefix(dep, bad+"/") {
					t.Errorf("%s depends on %s", tc.pkgs, dep)
				}
			}
			for _, bad := range tc.exact {
				if dep == bad {
					t.Errorf("%s depends on %s (the door's server; only its client is allowed)", tc.pkgs, dep)
				}
			}
		}
	}
}

// TestDoorsImportOnlyCore enforces ARCHITECTURE.md §4's one API for the doors: the
// door servers (acp, sdkrpc's server, its framing and its wire vocabulary
// sdkrpc/protocol) import core and the event vocabulary (core/event),
// nothing deeper in core; core names what they need of permissions, MCP,
// the store, the sandbox and the tools (core/api.go). sdkrpc/protocol
// speaks the wire only and imports neither. The Go client sdkrpc/client is
// a client, not a door: it starts child processes with core/proc.
func TestDoorsImportOnlyCore(t *testing.T) {
	const mod = "github.com/dsh-dev/dsh/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}",
		mod+"acp/...", mod+"sdkrpc/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	doors := map[string]bool{mod + "acp": true, mod + "acp/wire": true, mod + "sdkrpc": true,
		mod + "sdkrpc/dispatch": true, mod + "sdkrpc/ndjson": true, mod + "sdkrpc/protocol": true}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ":")
		if !doors[pkg] {
			continue
		}
		checked++
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, mod+"core/") && imp != mod+"core/event" {
				t.Errorf("%s imports %s: a door imports core and core/event only", pkg, imp)
			}
		}
	}
	if checked != len(doors) {
		t.Errorf("checked %d door packages, want %d (a package moved?)", checked, len(doors))
	}
}

// maxFuncLines is the longest a function may be: one screen, read at once
// (COMMON style; issue 25 asks it of acp, sdkrpc and core).
const maxFuncLines = 120

// TestFunctionsFitOnAScreen parses the non-test Go files of acp, sdkrpc,
// core and cmd and fails for every function (or method) longer than
// maxFuncLines, counted from its func line to its closing brace, naming it.
func TestFunctionsFitOnAScreen(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	for _, root := range []string{"acp", "sdkrpc", "core", "cmd"} {
		err := filepath.WalkDir(filepath.Join("..", "..", root), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			files++
			for _, decl := range f.Decls {
				fn, ok := decl.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				from, to := fset.Position(fn.Pos()), fset.Position(fn.End())
				if n := to.Line - from.Line + 1; n > maxFuncLines {
					t.Errorf("%s:%d: %s is %d lines (at most %d): split it", filepath.ToSlash(path), from.Line, funcName(fn), n, maxFuncLines)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 50 {
		t.Fatalf("only %d files parsed: the walk did not find the tree", files)
	}
}

// funcName is fn's name, with its receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok { // a generic receiver
		typ = idx.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
