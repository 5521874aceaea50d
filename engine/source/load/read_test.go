package load

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLoadReadsThroughReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zero.yaml")
	if err := os.Symlink("/dev/zero", path); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "character device") {
		t.Errorf("Load: error %v, want a refused character device", err)
	}
	if _, err := LoadCompose(path, nil); err == nil || !strings.Contains(err.Error(), "character device") {
		t.Errorf("LoadCompose: error %v, want a refused character device", err)
	}
}

// TestComposeDotEnvIsReadSafely: a compose project's .env that is a FIFO
// or a link to a device is an error, never a blocked or unbounded read.
func TestComposeDotEnvIsReadSafely(t *testing.T) {
	for target, want := range map[string]string{"fifo": "named pipe (FIFO)", "/dev/zero": "character device"} {
		dir := t.TempDir()
		env := filepath.Join(dir, ".env")
		if target == "fifo" {
			if err := syscall.Mkfifo(env, 0o644); err != nil {
				t.Skipf("no FIFO here: %v", err)
			}
		} else if err := os.Symlink(target, env); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := ParseCompose(filepath.Join(dir, "compose.yaml"), []byte("services:\n  web: {image: x}\n"), nil)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ".env") {
				t.Errorf(".env %s: error %v, want one naming .env with %q", target, err, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf(".env %s: ParseCompose still blocks after 5s", target)
		}
	}
}
