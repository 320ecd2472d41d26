package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// mitText is a real MIT licence, from the template the declared modules use.
var mitText = fmt.Sprintf(mitTemplate, "2024 Someone")

// TestNotices_CommittedFileIsCurrent regenerates the notices from the module
// graph of cmd/devkit: a dependency added, removed or upgraded without `make
// notices` fails here, so every module the binary links is in the file.
func TestNotices_CommittedFileIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the module graph of cmd/devkit")
	}
	committed, err := os.ReadFile(filepath.Join("..", "..", "THIRD_PARTY_NOTICES"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Generate(&buf, filepath.Join("..", "..", "cmd", "devkit")); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(buf.Bytes(), committed) {
		return
	}
	mods, err := LinkedModules(filepath.Join("..", "..", "cmd", "devkit"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		if !bytes.Contains(committed, []byte(m.Path+" "+m.Version+" — ")) {
			t.Errorf("THIRD_PARTY_NOTICES lacks %s %s, which the binary links", m.Path, m.Version)
		}
	}
	t.Error("THIRD_PARTY_NOTICES is not what the module graph gives: run make notices")
}

// TestReleaseArchives_CarryLicenceAndNotices checks that every archive of
// .goreleaser.yaml ships LICENSE and THIRD_PARTY_NOTICES, which Apache-2.0
// and the licences of the linked modules require of a redistribution.
func TestReleaseArchives_CarryLicenceAndNotices(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Archives []struct {
			ID    string `yaml:"id"`
			Files []any  `yaml:"files"`
		} `yaml:"archives"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Archives) == 0 {
		t.Fatal(".goreleaser.yaml has no archives")
	}
	for _, a := range cfg.Archives {
		var files []string
		for _, f := range a.Files {
			switch f := f.(type) {
			case string:
				files = append(files, f)
			case map[string]any: // the long form: {src: ..., dst: ...}
				if src, ok := f["src"].(string); ok {
					files = append(files, src)
				}
			}
		}
		for _, want := range []string{"LICENSE", "THIRD_PARTY_NOTICES"} {
			if !slices.Contains(files, want) {
				t.Errorf("archive %q does not carry %s (files: %v)", a.ID, want, files)
			}
		}
	}
}

func TestIdentify_KnownLicenceIsNamed(t *testing.T) {
	ids, err := Identify([]byte(mitText), allowed)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"MIT"}) {
		t.Errorf("Identify(MIT text) = %v, want [MIT]", ids)
	}
}

func TestIdentify_LicenceOutsideTheAllowedListFails(t *testing.T) {
	_, err := Identify([]byte(mitText), []string{"Apache-2.0"})
	if err == nil || !strings.Contains(err.Error(), "MIT is not allowed") {
		t.Errorf("Identify(MIT, allow Apache-2.0 only) = %v, want a not-allowed error", err)
	}
}

func TestIdentify_UnknownTextFails(t *testing.T) {
	text := "You may use this software only on Tuesdays, and must send the author a postcard.\n"
	if _, err := Identify([]byte(text), allowed); err == nil || !strings.Contains(err.Error(), "unknown licence") {
		t.Errorf("Identify(home-made terms) = %v, want an unknown-licence error", err)
	}
	// A known licence with as much unknown text again is not mostly licence.
	if _, err := Identify([]byte(mitText+strings.Repeat(text, 20)), allowed); err == nil {
		t.Error("Identify(MIT + a page of home-made terms) = nil error, want an unknown-licence error")
	}
}

func TestCheck_ModuleWithoutLicenceFileFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# no licence here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Check(Module{Path: "example.com/nolicence", Version: "v1.0.0", Dir: dir}, allowed)
	if err == nil || !strings.Contains(err.Error(), "no licence file") {
		t.Errorf("Check(module without licence) = %v, want a no-licence-file error", err)
	}
}

func TestCheck_NoticeIsPassedOnWithTheLicence(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"LICENSE.txt": mitText, "NOTICE": "Some product\nCopyright 2024 Someone\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := Check(Module{Path: "example.com/m", Version: "v1.2.3", Dir: dir}, allowed)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, []Notice{n}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"example.com/m v1.2.3 — LICENSE.txt", "example.com/m v1.2.3 — NOTICE", "Copyright 2024 Someone", "  example.com/m "} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("notices lack %q:\n%s", want, buf.String())
		}
	}
}

func TestCheck_ADeclaredLicenceWithoutAFileIsPassedOnOnlyAtTheCheckedVersion(t *testing.T) {
	dir := t.TempDir() // a module directory with no licence file
	n, err := Check(Module{Path: "github.com/mattn/go-localereader", Version: "v0.0.1", Dir: dir}, allowed)
	if err != nil {
		t.Fatalf("the checked version: %v", err)
	}
	if !slices.Equal(n.Licences, []string{"MIT"}) || len(n.Files) != 1 || !strings.Contains(n.Files[0].Text, "Yasuhiro Matsumoto") {
		t.Fatalf("notice = %+v", n)
	}
	if _, err := Check(Module{Path: "github.com/mattn/go-localereader", Version: "v0.0.2", Dir: dir}, allowed); err == nil {
		t.Fatal("another version without a licence file was accepted unchecked")
	}
}

// TestLinkedModules_TheRepositorysOwnModulesAreLeftToLICENSE: the binary
// links the shared internal module and the three libraries through replace
// directives; they are this repository's (LICENSE covers them) and have no
// notices of their own, while the third-party modules they need (the
// internal module's golang.org/x/sys and gopkg.in/yaml.v3) are listed.
func TestLinkedModules_TheRepositorysOwnModulesAreLeftToLICENSE(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the module graph of cmd/devkit")
	}
	mods, err := LinkedModules(filepath.Join("..", "..", "cmd", "devkit"))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, m := range mods {
		if strings.HasPrefix(m.Path, "github.com/devkit-go/devkit") {
			t.Errorf("%s %s is listed as a third-party module", m.Path, m.Version)
		}
		paths = append(paths, m.Path)
	}
	for _, want := range []string{"golang.org/x/sys", "gopkg.in/yaml.v3"} {
		if !slices.Contains(paths, want) {
			t.Errorf("%s, which the shared internal module needs, is not listed: %v", want, paths)
		}
	}
}
