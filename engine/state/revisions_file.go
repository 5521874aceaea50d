package state

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The revisions and pins files are kept as the holds file is: read
// bounded, from a regular file only (a FIFO in their place is an error,
// not a hang); written whole (write, fsync, then rename); changed under a
// flock on a lock file beside them (update), so no change of one process
// is lost to another's.

// readSmallFile reads the regular file at path, at most limit bytes: no
// file is (nil, nil). what names the file in errors ("revisions").
func readSmallFile(path string, limit int64, what string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|unix.O_NOCTTY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("read %s %s: not a regular file (%s)", what, path, st.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("read %s %s: larger than %d bytes", what, path, limit)
	}
	return data, nil
}

// writeSmallFile replaces the file at path whole with data (write, fsync,
// then rename), so a crash leaves the old file or the new one, never half
// of one. nil data removes the file.
func writeSmallFile(path string, data []byte, what string) error {
	if data == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("write %s %s: %w", what, path, err)
		}
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+what+"-*")
	if err != nil {
		return fmt.Errorf("write %s %s: %w", what, path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s %s: %w", what, path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s %s: %w", what, path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s %s: %w", what, path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s %s: %w", what, path, err)
	}
	return nil
}

// underFileLock runs f under the flock of path's lock file (path+".lock",
// its directory made if need be), waiting up to wait for another process
// to let go of it.
func underFileLock(path string, wait time.Duration, what string, f func() error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s %s: %w", what, path, err)
	}
	lf, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return fmt.Errorf("lock %s %s: %w", what, path, err)
	}
	defer lf.Close()
	deadline := time.Now().Add(wait)
	for {
		err := unix.Flock(int(lf.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			if errors.Is(err, unix.EWOULDBLOCK) {
				err = fmt.Errorf("another rollcall has held it for %s", wait)
			}
			return fmt.Errorf("lock %s %s: %w", what, path, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	defer func() { _ = unix.Flock(int(lf.Fd()), unix.LOCK_UN) }()
	return f()
}
