package house

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// sharedModule is the one module every other module of the repository may
// import, and which imports none of them: mechanisms more than one module
// needs (durations, YAML errors, file locks, directory sync, the JSON rule,
// test certificates) live there once, instead of as copies.
const sharedModule = "github.com/devkit-go/devkit/internal"

var repoImport = regexp.MustCompile(`"(github\.com/devkit-go/devkit/[^"]+)"`)

// goMod is what `go mod edit -json` says of a go.mod.
type goMod struct {
	Module  struct{ Path string }
	Require []struct{ Path, Version string }
	Replace []struct {
		Old struct{ Path string }
		New struct{ Path string }
	}
}

func readGoMod(t *testing.T, dir string) goMod {
	t.Helper()
	cmd := exec.Command("go", "mod", "edit", "-json")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit -json in %s: %v", dir, err)
	}
	var m goMod
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// moduleDirs returns the directory of every go.mod below root.
func moduleDirs(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" {
			dirs = append(dirs, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// importsOf returns the repository's packages that the Go files of the
// module at dir import (nested modules left out).
func importsOf(t *testing.T, dir string) []string {
	t.Helper()
	var got []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != dir {
			if d.Name() == "testdata" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range repoImport.FindAllSubmatch(b, -1) {
			got = append(got, string(m[1]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return slices.Compact(got)
}

// TestModules_ImportTheSharedModuleThroughItsFolder: a module that imports
// the shared internal module requires it and replaces it with the repository's
// internal/ folder, so that `GOWORK=off go test ./...` builds it from the
// tree (as etcd's modules replace go.etcd.io/etcd/client/pkg/v3 => ../client/pkg).
func TestModules_ImportTheSharedModuleThroughItsFolder(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range moduleDirs(t, root) {
		rel, _ := filepath.Rel(root, dir)
		mod := readGoMod(t, dir)
		if mod.Module.Path == sharedModule {
			continue
		}
		uses := slices.ContainsFunc(importsOf(t, dir), func(p string) bool { return strings.HasPrefix(p, sharedModule+"/") })
		if !uses {
			continue
		}
		if !slices.ContainsFunc(mod.Require, func(r struct{ Path, Version string }) bool { return r.Path == sharedModule }) {
			t.Errorf("%s imports %s but its go.mod does not require it", rel, sharedModule)
		}
		replaced := false
		for _, r := range mod.Replace {
			if r.Old.Path == sharedModule && filepath.Clean(filepath.Join(dir, r.New.Path)) == filepath.Join(root, "internal") {
				replaced = true
			}
		}
		if !replaced {
			t.Errorf("%s imports %s but its go.mod lacks `replace %s => <path to internal/>`: GOWORK=off builds would fetch it", rel, sharedModule, sharedModule)
		}
	}
}

// TestModules_TheSharedModuleImportsNoOtherModule: it is the bottom of the
// graph, so that every module may import it without a cycle.
func TestModules_TheSharedModuleImportsNoOtherModule(t *testing.T) {
	for _, p := range importsOf(t, filepath.Join("..", "..", "internal")) {
		if !strings.HasPrefix(p, sharedModule+"/") {
			t.Errorf("the shared module imports %s; it may import only itself and third-party modules", p)
		}
	}
}

// TestModules_TheLibrariesNeverImportEachOther: kvstore, ratelimit and
// supervisor stay independent; what two of them need goes to the shared
// module, never into one of them.
func TestModules_TheLibrariesNeverImportEachOther(t *testing.T) {
	libs := []string{"kvstore", "ratelimit", "supervisor"}
	for _, lib := range libs {
		for _, p := range importsOf(t, filepath.Join("..", "..", lib)) {
			for _, other := range libs {
				if other != lib && strings.HasPrefix(p, "github.com/devkit-go/devkit/"+other) {
					t.Errorf("%s imports %s", lib, p)
				}
			}
		}
	}
}
