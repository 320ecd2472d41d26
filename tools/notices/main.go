// Command notices writes THIRD_PARTY_NOTICES: the licence text of every module
// linked into the devkit binary on a release platform, and of Go's standard
// library, which every binary carries.
//
// A release never ships a dependency whose licence nobody checked: each
// module's licence files are read from the module cache and identified with
// github.com/google/licensecheck (the classifier pkg.go.dev uses), and the
// command fails when a module has no licence file, when too little of a file
// is a known licence, or when the licence is not on the allowed list.
//
//	go run ./notices -module ../cmd/devkit -out ../THIRD_PARTY_NOTICES   (make notices)
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/google/licensecheck"
)

// platforms are the release targets (.goreleaser.yaml): a module linked on
// any one of them is in the notices (github.com/inconshreveable/mousetrap is
// linked on windows only).
var platforms = [][2]string{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

// allowed are the licences a devkit release may link: permissive ones whose
// only condition is to pass on the notice, which this file does.
var allowed = []string{"Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "MIT"}

// declared are modules that state their licence elsewhere than in a licence
// file (a README section), each checked by a person at that exact version: a
// new version must be checked again. The text passed on is the licence's
// standard text with the holder the module names.
var declared = map[string]struct {
	spdx, holder, statement, template string
}{
	// bubbletea's input reader; README.md: "## License / MIT", by mattn.
	"github.com/mattn/go-localereader@v0.0.1": {"MIT", "Yasuhiro Matsumoto", "README.md: License: MIT", mitTemplate},
}

// mitTemplate is the MIT licence with %s for the copyright holder.
const mitTemplate = `MIT License

Copyright (c) %s

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
`

// minCoverage is the share of a licence file, in per cent, that must be known
// licence text (pkg.go.dev's threshold): below it the file says more than a
// licence we recognise, and a person must read it.
const minCoverage = 75

// licenceFile matches the names of licence, notice and patent-grant files at
// a module's root.
var licenceFile = regexp.MustCompile(`(?i)^(licen[cs]e|copying|notice|patents)([.-].*)?(\.(md|txt))?$`)

// passedOn matches the files that are passed on as they are, not licences:
// an Apache NOTICE, Go's PATENTS grant.
var passedOn = regexp.MustCompile(`(?i)^(notice|patents)`)

// Module is one module linked into the binary.
type Module struct {
	Path    string
	Version string
	Dir     string // in the module cache
}

// Notice is one module's licence files and the licences found in them.
type Notice struct {
	Module   Module
	Licences []string // SPDX identifiers, sorted
	Files    []File
}

// File is one licence or notice file of a module.
type File struct {
	Name string
	Text string
}

func main() {
	module := flag.String("module", "../cmd/devkit", "directory of the main module whose binary the notices are for")
	out := flag.String("out", "", "file to write (default stdout)")
	flag.Parse()
	var buf bytes.Buffer
	if err := Generate(&buf, *module); err != nil {
		fmt.Fprintln(os.Stderr, "notices:", err)
		os.Exit(1)
	}
	if *out == "" {
		_, _ = os.Stdout.Write(buf.Bytes())
		return
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "notices:", err)
		os.Exit(1)
	}
}

// Generate writes the notices for the binary of the main module in dir.
func Generate(w io.Writer, dir string) error {
	mods, err := LinkedModules(dir)
	if err != nil {
		return err
	}
	var notices []Notice
	var problems []error
	for _, m := range mods {
		n, err := Check(m, allowed)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		notices = append(notices, n)
	}
	if err := errors.Join(problems...); err != nil {
		return err
	}
	std, err := standardLibrary(dir)
	if err != nil {
		return err
	}
	notices = append(notices, std)
	return Write(w, notices)
}

// LinkedModules returns the modules, other than this repository's own, that
// provide a package to the binary built from dir on any release platform,
// sorted by path, with their directories in the module cache.
func LinkedModules(dir string) ([]Module, error) {
	seen := map[string]bool{}
	var args []string
	for _, p := range platforms {
		// A module replaced by a local directory is this repository's own
		// (covered by LICENSE); so is the main module.
		out, err := goCmd(dir, []string{"GOOS=" + p[0], "GOARCH=" + p[1], "CGO_ENABLED=0"}, "list", "-deps",
			"-f", `{{with .Module}}{{if not .Main}}{{if not .Replace}}{{.Path}}@{{.Version}}{{end}}{{end}}{{end}}`, ".")
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Fields(out) {
			if !seen[line] {
				seen[line] = true
				args = append(args, line)
			}
		}
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("%s links no module: is it a main module?", dir)
	}
	slices.Sort(args)
	// go mod download reports each module's directory, fetching it if the cache lacks it.
	out, err := goCmd(dir, nil, append([]string{"mod", "download", "-json"}, args...)...)
	if err != nil {
		return nil, err
	}
	var mods []Module
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var m struct{ Path, Version, Dir, Error string }
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("go mod download -json: %w", err)
		}
		if m.Error != "" || m.Dir == "" {
			return nil, fmt.Errorf("%s@%s: not in the module cache: %s", m.Path, m.Version, m.Error)
		}
		mods = append(mods, Module{Path: m.Path, Version: m.Version, Dir: m.Dir})
	}
	slices.SortFunc(mods, func(a, b Module) int { return strings.Compare(a.Path, b.Path) })
	return mods, nil
}

// Check reads the licence files at the root of m's directory and identifies
// the licences in them; it fails when there is none, when a licence file is
// not mostly known licence text, or when a licence is not in allow.
func Check(m Module, allow []string) (Notice, error) {
	n := Notice{Module: m}
	entries, err := os.ReadDir(m.Dir)
	if err != nil {
		return n, fmt.Errorf("%s@%s: %w", m.Path, m.Version, err)
	}
	for _, e := range entries {
		if e.IsDir() || !licenceFile.MatchString(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(m.Dir, e.Name()))
		if err != nil {
			return n, fmt.Errorf("%s@%s: %w", m.Path, m.Version, err)
		}
		n.Files = append(n.Files, File{Name: e.Name(), Text: string(b)})
		if passedOn.MatchString(e.Name()) {
			continue
		}
		ids, err := Identify(b, allow)
		if err != nil {
			return n, fmt.Errorf("%s@%s: %s: %w", m.Path, m.Version, e.Name(), err)
		}
		n.Licences = append(n.Licences, ids...)
	}
	if len(n.Licences) == 0 {
		d, ok := declared[m.Path+"@"+m.Version]
		if !ok {
			return n, fmt.Errorf("%s@%s: no licence file in %s", m.Path, m.Version, m.Dir)
		}
		// The module states its licence without shipping its text: pass on
		// the standard text with the holder, and say where the statement is.
		text := fmt.Sprintf(d.template, d.holder)
		if _, err := Identify([]byte(text), allow); err != nil {
			return n, fmt.Errorf("%s@%s: declared licence: %w", m.Path, m.Version, err)
		}
		n.Files = append(n.Files, File{Name: "(no licence file; " + d.statement + ")", Text: text})
		n.Licences = append(n.Licences, d.spdx)
	}
	slices.Sort(n.Licences)
	n.Licences = slices.Compact(n.Licences)
	return n, nil
}

// Identify returns the SPDX identifiers of the licences in text, or an error
// when the text is not mostly known licence text or names a licence outside allow.
func Identify(text []byte, allow []string) ([]string, error) {
	cov := licensecheck.Scan(text)
	if cov.Percent < minCoverage || len(cov.Match) == 0 {
		return nil, fmt.Errorf("unknown licence: only %.0f%% of the text is a known licence (%d%% needed)", cov.Percent, minCoverage)
	}
	var ids []string
	for _, m := range cov.Match {
		if !slices.Contains(allow, m.ID) {
			return nil, fmt.Errorf("licence %s is not allowed (allowed: %s)", m.ID, strings.Join(allow, ", "))
		}
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// standardLibrary is the notice of Go's standard library, linked into every
// binary. Its version is the release toolchain, the toolchain line of dir's
// go.mod (the go running this only when there is none), so that the file
// does not change with the go that regenerates it; the licence is the
// running go's, the same text for every release.
func standardLibrary(dir string) (Notice, error) {
	out, err := goCmd(dir, nil, "env", "GOROOT", "GOVERSION")
	if err != nil {
		return Notice{}, err
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return Notice{}, fmt.Errorf("go env GOROOT GOVERSION: %q", out)
	}
	goroot, version := f[0], f[1]
	modJSON, err := goCmd(dir, nil, "mod", "edit", "-json")
	if err != nil {
		return Notice{}, err
	}
	var mod struct{ Toolchain string }
	if err := json.Unmarshal([]byte(modJSON), &mod); err != nil {
		return Notice{}, fmt.Errorf("go mod edit -json: %w", err)
	}
	if mod.Toolchain != "" {
		version = mod.Toolchain
	}
	return Check(Module{Path: "Go standard library", Version: version, Dir: goroot}, allowed)
}

// Write prints the notices: a summary table, then each module's files.
func Write(w io.Writer, notices []Notice) error {
	var b strings.Builder
	rule := strings.Repeat("=", 80)
	b.WriteString("THIRD-PARTY NOTICES for devkit\n\n")
	b.WriteString("The devkit binary is built from devkit's own code (Apache-2.0, see LICENSE) and the\n")
	b.WriteString("modules below, linked on linux, darwin and windows (amd64, arm64). This file is\n")
	b.WriteString("generated from the module graph of cmd/devkit by `make notices` (tools/notices): do\n")
	b.WriteString("not edit it by hand.\n\n")
	for _, n := range notices {
		fmt.Fprintf(&b, "  %-52s %-36s %s\n", n.Module.Path, n.Module.Version, strings.Join(n.Licences, " AND "))
	}
	for _, n := range notices {
		for _, f := range n.Files {
			fmt.Fprintf(&b, "\n%s\n%s %s — %s\n%s\n\n", rule, n.Module.Path, n.Module.Version, f.Name, rule)
			b.WriteString(strings.TrimRight(strings.ReplaceAll(f.Text, "\r\n", "\n"), "\n"))
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// goCmd runs the go command in dir, outside the workspace (the binary is
// built with GOWORK=off, from its own go.mod), and returns its stdout.
func goCmd(dir string, env []string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
