package main

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestReleaseScript: scripts/release.sh VERSION builds the two release
// archives, linux/amd64 and linux/arm64, SHA256SUMS verifies them both,
// each holds a statically linked rollcall of its architecture beside the
// README, and the binary says the version it was stamped with.
func TestReleaseScript(t *testing.T) {
	for _, tool := range []string{"bash", "tar", "gzip", "sha256sum", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the release script needs %s: %v", tool, err)
		}
	}
	out := t.TempDir()
	const version = "v0.0.0-releasetest"
	cmd := exec.CommandContext(t.Context(), "bash", filepath.Join("..", "..", "scripts", "release.sh"), version, out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, b)
	}
	sums := readSums(t, filepath.Join(out, "SHA256SUMS"))
	want := map[string]elf.Machine{
		"rollcall_" + version + "_linux_amd64.tar.gz": elf.EM_X86_64,
		"rollcall_" + version + "_linux_arm64.tar.gz": elf.EM_AARCH64,
	}
	if len(sums) != len(want) {
		t.Errorf("SHA256SUMS lists %v, want the 2 archives", sums)
	}
	for name := range want {
		path := filepath.Join(out, name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); sums[name] != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: sha256 %x, SHA256SUMS says %q", name, sum, sums[name])
		}
		dir := strings.TrimSuffix(name, ".tar.gz")
		files := untar(t, path, t.TempDir())
		if !files[dir+"/README.md"] || !files[dir+"/rollcall"] {
			t.Errorf("%s holds %v, want %s/rollcall and %s/README.md", name, files, dir, dir)
		}
	}
	// The binaries themselves: static, of their architecture; the one of
	// this machine runs and says its version.
	for name, machine := range want {
		dest := t.TempDir()
		untar(t, filepath.Join(out, name), dest)
		bin := filepath.Join(dest, strings.TrimSuffix(name, ".tar.gz"), "rollcall")
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.Machine != machine {
			t.Errorf("%s: an ELF for %s, want %s", name, f.Machine, machine)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: dynamically linked (it has an interpreter), want static", name)
			}
		}
		f.Close()
		if (machine == elf.EM_X86_64) != (runtime.GOARCH == "amd64") || runtime.GOOS != "linux" {
			continue
		}
		v, err := exec.Command(bin, "version").Output()
		if err != nil {
			t.Fatalf("%s version: %v", name, err)
		}
		if !strings.HasPrefix(string(v), "rollcall "+version+"\ncommit:  ") || strings.Contains(string(v), "unknown (no VCS") {
			t.Errorf("%s version says %q, want the stamped version and commit", name, v)
		}
	}
}

// readSums reads a SHA256SUMS file: file name -> hex digest.
func readSums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q", sc.Text())
		}
		sums[name] = sum
	}
	return sums
}

// untar unpacks the tar.gz at path into dest and returns the names of its
// regular files.
func untar(t *testing.T, path, dest string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(zr)
	files := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg || strings.Contains(h.Name, "..") {
			continue
		}
		files[h.Name] = true
		target := filepath.Join(dest, h.Name)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		w, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, tr); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
}
