package docs

import (
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// module is the module path every basin import starts with.
const module = "github.com/basindb/basin/"

// TestPackageDocsNameImports holds every package's comment (its doc.go,
// or main.go for a command) to what the package imports: each basin
// package it imports is named there (by its path or its last element),
// so the package map in node/doc.go and each package's own account of
// its layer cannot drift from the code.
func TestPackageDocsNameImports(t *testing.T) {
	checked := 0
	err := filepath.WalkDir("..", func(dir string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		switch name := d.Name(); {
		case dir != ".." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "bin"):
			return filepath.SkipDir
		}
		doc, imports, ok := packageOf(t, dir)
		if !ok {
			return nil
		}
		checked++
		if doc == "" {
			t.Errorf("%s: the package has no package comment (doc.go)", dir)
			return nil
		}
		for _, imp := range imports {
			rel := strings.TrimPrefix(imp, module)
			word := regexp.MustCompile(`\b` + regexp.QuoteMeta(path.Base(rel)) + `\b`)
			if !strings.Contains(doc, rel) && !word.MatchString(doc) {
				t.Errorf("%s: the package comment does not name %s, which the package imports", dir, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked %d packages; the walk from .. missed the module", checked)
	}
}

// packageOf returns the package comment of the Go package in dir and the
// basin packages its non-test files import; ok is false when dir holds
// none.
func packageOf(t *testing.T, dir string) (doc string, imports []string, ok bool) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments|parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		ok = true
		if f.Doc != nil {
			doc += f.Doc.Text()
		}
		for _, is := range f.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			if strings.HasPrefix(p, module) && !seen[p] {
				seen[p] = true
				imports = append(imports, p)
			}
		}
	}
	return doc, imports, ok
}
