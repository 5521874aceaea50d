// Package imagebuild builds the demoapp image: a FROM scratch image whose
// entrypoint is an executable (a statically linked Go binary, or a
// dynamically linked one with the files it needs), tagged and labelled. The
// executable's path is data: engine/demo passes rollcall itself or a compiled
// demoapp, dockertest the demoapp it compiles with CGO_ENABLED=0.
//
// It sits below engine/demo so that engine/docker/dockertest can build its
// test image without importing engine/demo. It imports the standard library
// only; the Builder it takes is engine/docker/moby's BuildImage.
package imagebuild

import (
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strings"
)

// Builder builds an image from a build context (file name → content, with a
// "Dockerfile" among them), tags it and returns its ID. engine/docker's Moby
// is one; taking the method alone keeps this package free of the engine.
type Builder interface {
	BuildImage(ctx context.Context, tag string, files map[string][]byte) (string, error)
}

// TagLabel is the label of a demoapp image that names the tag it was built
// for: a build the next build of its tag left untagged still carries it,
// so the demo's clean finds its own older builds, and only those.
const TagLabel = "rollcall.demoapp.tag"

// BuildImage builds the demoapp image of version from the executable at exe
// and tags it tag, labelled TagLabel=tag; it returns the image ID. exe is a demoapp binary, or
// rollcall itself, which runs as demoapp when it is started under that name.
// No registry, Go toolchain or source tree is needed.
func BuildImage(ctx context.Context, b Builder, exe, tag, version string) (string, error) {
	files, err := ImageFiles(exe, version)
	if err != nil {
		return "", fmt.Errorf("build demoapp image %s: %w", tag, err)
	}
	files["Dockerfile"] = fmt.Appendf(files["Dockerfile"], "LABEL %s=%q\n", TagLabel, tag)
	id, err := b.BuildImage(ctx, tag, files)
	if err != nil {
		return "", fmt.Errorf("build demoapp image: %w", err)
	}
	return id, nil
}

// versionRE keeps the version safe to write into a Dockerfile.
var versionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`)

// rootfs is the folder of the build context that holds the files a
// dynamically linked executable needs, at their paths in the image.
const rootfs = "rootfs"

// ImageFiles is the build context of the demoapp image of version: a
// Dockerfile FROM scratch whose entrypoint is the executable at exe, copied
// to /demoapp, with the version as its default command (-version) and as a
// label, so two versions are two image IDs. The image has no healthcheck of
// its own: rollcall sets one per container (["CMD", "/demoapp", "-health"]).
//
// A statically linked executable is copied alone. A dynamically linked one
// (as go build makes with cgo) comes with its ELF interpreter and the shared
// libraries it needs, transitively, each at the path the loader looks for it
// at, so it starts in an otherwise empty root. The executable must be a
// Linux ELF file of the engine's architecture.
func ImageFiles(exe, version string) (map[string][]byte, error) {
	if !versionRE.MatchString(version) {
		return nil, fmt.Errorf("version %q: want letters, digits, '.', '_', '+' or '-'", version)
	}
	bin, err := os.ReadFile(exe)
	if err != nil {
		return nil, fmt.Errorf("read the executable: %w", err)
	}
	deps, err := runtimeFiles(exe)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"demoapp": bin}
	for inImage, onHost := range deps {
		b, err := os.ReadFile(onHost) // through symlinks: the image gets the file itself
		if err != nil {
			return nil, fmt.Errorf("read %s, which %s needs: %w", onHost, exe, err)
		}
		files[path.Join(rootfs, inImage)] = b
	}
	var df strings.Builder
	df.WriteString("FROM scratch\n")
	if len(deps) > 0 {
		fmt.Fprintf(&df, "COPY %s/ /\n", rootfs)
	}
	fmt.Fprintf(&df, "COPY demoapp /demoapp\nENTRYPOINT [\"/demoapp\"]\nCMD [\"-version\", %q]\nLABEL rollcall.demoapp.version=%q\n", version, version)
	files["Dockerfile"] = []byte(df.String())
	return files, nil
}

// runtimeFiles returns what the ELF executable at exe needs to start in an
// empty root, as path in the image → path on this host: nothing for a
// statically linked one; else its interpreter (PT_INTERP) and its DT_NEEDED
// libraries and theirs, each found where the loader looks when the image has
// no ld.so.cache: the executable's absolute RUNPATH, then the standard
// library folders of its architecture.
func runtimeFiles(exe string) (map[string]string, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("%s: not a Linux executable: %w", exe, err)
	}
	defer f.Close()
	interp, err := interpreter(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", exe, err)
	}
	if interp == "" {
		return nil, nil // statically linked
	}
	files := map[string]string{interp: interp}
	dirs := libDirs(f)
	queue, err := f.ImportedLibraries()
	if err != nil {
		return nil, fmt.Errorf("%s: shared libraries: %w", exe, err)
	}
	seen := map[string]bool{}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		lib, needs, err := findLibrary(name, dirs, f.Class, f.Machine)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", exe, err)
		}
		files[lib] = lib
		queue = append(queue, needs...)
	}
	return files, nil
}

// interpreter is the program interpreter an ELF file names, or "" when it
// names none (a statically linked executable).
func interpreter(f *elf.File) (string, error) {
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			return "", fmt.Errorf("read the interpreter: %w", err)
		}
		interp := strings.TrimRight(string(b), "\x00")
		if !path.IsAbs(interp) {
			return "", fmt.Errorf("interpreter %q is not an absolute path", interp)
		}
		return interp, nil
	}
	return "", nil
}

// multiarch is the Debian multiarch folder name of each machine, for the
// library folders of Debian, Ubuntu and their kin.
var multiarch = map[elf.Machine]string{
	elf.EM_X86_64:  "x86_64-linux-gnu",
	elf.EM_AARCH64: "aarch64-linux-gnu",
	elf.EM_386:     "i386-linux-gnu",
	elf.EM_ARM:     "arm-linux-gnueabihf",
	elf.EM_RISCV:   "riscv64-linux-gnu",
	elf.EM_PPC64:   "powerpc64le-linux-gnu",
	elf.EM_S390:    "s390x-linux-gnu",
}

// libDirs is where the loader looks for a library of f with no ld.so.cache:
// f's own absolute RUNPATH (or RPATH), then the standard folders.
func libDirs(f *elf.File) []string {
	var dirs []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, _ := f.DynString(tag)
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				if path.IsAbs(d) { // $ORIGIN and friends mean nothing in the image
					dirs = append(dirs, d)
				}
			}
		}
	}
	if t, ok := multiarch[f.Machine]; ok {
		dirs = append(dirs, "/lib/"+t, "/usr/lib/"+t)
	}
	return append(dirs, "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// findLibrary finds the shared library name in dirs, as the loader does:
// the first file by that name that is an ELF file of the executable's class
// and machine (not a 32-bit libc in /usr/lib, say). It returns its path and
// the libraries it needs in turn.
func findLibrary(name string, dirs []string, class elf.Class, machine elf.Machine) (string, []string, error) {
	if strings.Contains(name, "/") {
		return "", nil, fmt.Errorf("shared library %q: a path, not a name", name)
	}
	for _, dir := range dirs {
		p := path.Join(dir, name)
		lib, err := elf.Open(p)
		if err != nil {
			continue // missing, or not ELF: the loader passes it over too
		}
		needs, err := lib.ImportedLibraries()
		ok := lib.Class == class && lib.Machine == machine
		lib.Close()
		if !ok {
			continue
		}
		if err != nil {
			return "", nil, fmt.Errorf("shared library %s: %w", p, err)
		}
		return p, needs, nil
	}
	return "", nil, fmt.Errorf("shared library %s: not in %s", name, strings.Join(dirs, ", "))
}
