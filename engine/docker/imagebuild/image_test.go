package imagebuild

import (
	"bytes"
	"debug/elf"
	"go/build"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// staticELF is a statically linked executable every test host has: gofmt
// imports nothing that needs cgo.
func staticELF(t *testing.T) string {
	t.Helper()
	p := filepath.Join(build.Default.GOROOT, "bin", "gofmt")
	if interp := mustInterpreter(t, p); interp != "" {
		t.Skipf("%s is dynamically linked (%s) here", p, interp)
	}
	return p
}

// dynamicELF is a dynamically linked executable of the host.
func dynamicELF(t *testing.T) (string, string) {
	t.Helper()
	for _, p := range []string{"/bin/sh", "/usr/bin/env", "/bin/ls"} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if interp := mustInterpreter(t, p); interp != "" {
			return p, interp
		}
	}
	t.Skip("no dynamically linked executable on this host")
	return "", ""
}

func mustInterpreter(t *testing.T, p string) string {
	t.Helper()
	f, err := elf.Open(p)
	if err != nil {
		t.Skipf("%s: %v", p, err)
	}
	defer f.Close()
	interp, err := interpreter(f)
	if err != nil {
		t.Fatal(err)
	}
	return interp
}

func names(files map[string][]byte) []string {
	var out []string
	for n := range files {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// A statically linked executable is the image's only file.
func TestImageFilesStatic(t *testing.T) {
	exe := staticELF(t)
	files, err := ImageFiles(exe, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(files); !slices.Equal(got, []string{"Dockerfile", "demoapp"}) {
		t.Errorf("build context of a static executable: %v, want the Dockerfile and demoapp alone", got)
	}
	want := "FROM scratch\nCOPY demoapp /demoapp\nENTRYPOINT [\"/demoapp\"]\nCMD [\"-version\", \"v1\"]\nLABEL rollcall.demoapp.version=\"v1\"\n"
	if got := string(files["Dockerfile"]); got != want {
		t.Errorf("Dockerfile:\n%s\nwant:\n%s", got, want)
	}
	bin, _ := os.ReadFile(exe)
	if !bytes.Equal(files["demoapp"], bin) {
		t.Error("demoapp in the build context is not the executable")
	}
}

// A dynamically linked executable comes with its interpreter and every
// library it needs, transitively, at their paths, read through symlinks.
func TestImageFilesDynamic(t *testing.T) {
	exe, interp := dynamicELF(t)
	files, err := ImageFiles(exe, "v2")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(files["Dockerfile"]), "\nCOPY rootfs/ /\n") {
		t.Errorf("Dockerfile copies no rootfs:\n%s", files["Dockerfile"])
	}
	hostInterp, err := os.ReadFile(interp) // often a symlink
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := files[path.Join("rootfs", interp)]; !ok || !bytes.Equal(got, hostInterp) {
		t.Errorf("interpreter %s: in the context %v, same bytes %v; want its content there: %v", interp, ok, bytes.Equal(got, hostInterp), names(files))
	}
	// every library any file in the image needs is in the image, in a folder
	// the loader searches
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dirs := libDirs(f)
	for name, content := range files {
		if !strings.HasPrefix(name, "rootfs/") && name != "demoapp" {
			continue
		}
		lib, err := elf.NewFile(bytes.NewReader(content))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		needs, _ := lib.ImportedLibraries()
		for _, need := range needs {
			found := slices.ContainsFunc(dirs, func(d string) bool {
				_, ok := files[path.Join("rootfs", d, need)]
				return ok
			})
			if !found {
				t.Errorf("%s needs %s, which is in none of %v in the image: %v", name, need, dirs, names(files))
			}
		}
	}
}

// The loader takes the first file by the name that is an ELF file of the
// executable's class and machine; so does findLibrary.
func TestFindLibrarySkipsWhatTheLoaderSkips(t *testing.T) {
	exe, _ := dynamicELF(t)
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	needs, err := f.ImportedLibraries()
	if err != nil || len(needs) == 0 {
		t.Skipf("%s needs no library (%v)", exe, err)
	}
	real, _, err := findLibrary(needs[0], libDirs(f), f.Class, f.Machine)
	if err != nil {
		t.Fatal(err)
	}
	junk := t.TempDir()
	if err := os.WriteFile(filepath.Join(junk, needs[0]), []byte("not ELF"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _, err := findLibrary(needs[0], append([]string{junk}, libDirs(f)...), f.Class, f.Machine); err != nil || got != real {
		t.Errorf("findLibrary(%s) past a file that is not ELF = %q, %v; want %s", needs[0], got, err, real)
	}
	if _, _, err := findLibrary(needs[0], []string{junk}, f.Class, f.Machine); err == nil {
		t.Errorf("findLibrary(%s) where only a file that is not ELF has the name: nil error", needs[0])
	}
}

func TestImageFilesRefuses(t *testing.T) {
	text := filepath.Join(t.TempDir(), "demoapp")
	if err := os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	exe := staticELF(t)
	tests := []struct {
		name, exe, version string
	}{
		{"a version that breaks the Dockerfile", exe, "v1\nRUN x"},
		{"a version with a quote", exe, `v1"`},
		{"an empty version", exe, ""},
		{"a script, not an ELF executable", text, "v1"},
		{"no such file", filepath.Join(t.TempDir(), "nope"), "v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ImageFiles(tt.exe, tt.version); err == nil {
				t.Errorf("ImageFiles(%s, %q): nil error", tt.exe, tt.version)
			}
		})
	}
}

// Two versions are two Dockerfiles, so two image IDs.
func TestImageFilesVersionIsBakedIn(t *testing.T) {
	exe := staticELF(t)
	v1, err1 := ImageFiles(exe, "v1")
	v2, err2 := ImageFiles(exe, "2.0.1+build_7")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if bytes.Equal(v1["Dockerfile"], v2["Dockerfile"]) || !strings.Contains(string(v2["Dockerfile"]), `CMD ["-version", "2.0.1+build_7"]`) {
		t.Errorf("Dockerfiles of v1 and 2.0.1+build_7:\n%s\n%s", v1["Dockerfile"], v2["Dockerfile"])
	}
}
