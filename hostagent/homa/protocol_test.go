package homa_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"testing"
)

// pathFiles are the engine's receive, send, timer, pacer and event code,
// which every transport runs through; the transports' own code lives in
// protocol.go, policy.go and the files named for them.
var pathFiles = []string{"recv.go", "send.go", "timer.go", "pacer.go", "state.go", "sched.go", "rpc.go",
	"defend.go", "goroutines.go", "endpoint.go"}

// kindName matches the names of a transport kind: a transport named as
// a flag or field (roce, ndp, pfabric, phost, uet, and what starts with
// them, as roceX) and the kind flags the policy had (credit, rank, kind).
var kindName = regexp.MustCompile(`^(roce|ndp|pfabric|phost|uet|credit|rank|kind)([A-Z]\w*)?$`)

// kindConst matches the configuration's variant (Variant, VariantRoCE,
// ...) and the credit modes the policy had (creditGrants, creditPulls,
// ...).
var kindConst = regexp.MustCompile(`^(Variant\w*|credit(Grants|None|Tokens|Pulls|Mode))$`)

// TestNoProtocolKindOnPaths checks that the engine chooses the protocol
// once per Endpoint (newProtocol, newPolicy) and never again along its
// paths. In pathFiles (comments and strings aside):
//   - no identifier is the configuration's variant or a credit mode
//     (kindConst);
//   - no field read, x.f not called, is a kind flag (kindName): a method
//     of the protocol or policy, st.pol.rank(o), is how the paths ask;
//   - no type assertion or type switch asks what the protocol (proto) or
//     the policy (pol) is.
//
// A decision that differs by transport belongs in a method of the
// protocol or policy interface.
func TestNoProtocolKindOnPaths(t *testing.T) {
	fset := token.NewFileSet()
	for _, name := range pathFiles {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		called := map[*ast.SelectorExpr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok {
					called[sel] = true
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.Ident:
				if kindConst.MatchString(x.Name) {
					t.Errorf("%v: %s names a transport kind on the engine's path", fset.Position(x.Pos()), x.Name)
				}
			case *ast.SelectorExpr:
				if !called[x] && kindName.MatchString(x.Sel.Name) {
					t.Errorf("%v: reads the kind flag %s on the engine's path", fset.Position(x.Sel.Pos()), x.Sel.Name)
				}
			case *ast.TypeAssertExpr:
				if sel, ok := x.X.(*ast.SelectorExpr); ok && (sel.Sel.Name == "proto" || sel.Sel.Name == "pol") {
					t.Errorf("%v: asks what the %s is", fset.Position(x.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
}
