package spec

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxDocumentBytes bounds every read of a desired state, from a file or a
// URL: a document is a few kilobytes, and a link to /dev/zero must not
// take the process down.
const MaxDocumentBytes = 4 << 20

// ReadFile reads a desired-state file, refusing anything but a regular
// file (or a link to one) and anything over MaxDocumentBytes, in bounded
// time and memory:
//
//   - A FIFO, a device, a socket or a directory is refused by its mode
//     before it is opened. The open itself is non-blocking and the opened
//     file is checked again, so a path swapped for a FIFO in between can
//     neither block the open nor be read.
//   - At most MaxDocumentBytes+1 bytes are read, whatever the file claims
//     its size to be.
//
// Errors name the path; an absent file gives an error that wraps
// fs.ErrNotExist.
func ReadFile(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, st); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(path, st); err != nil {
		return nil, err
	}
	if st.Size() > MaxDocumentBytes {
		return nil, tooLarge(path)
	}
	return ReadAtMost(f, path)
}

// ReadAtMost reads r to its end, refusing it once it gives more than
// MaxDocumentBytes: a file that grows while being read, past the size it
// had when opened, is refused, never accepted a byte over.
func ReadAtMost(r io.Reader, path string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxDocumentBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxDocumentBytes {
		return nil, tooLarge(path)
	}
	return data, nil
}

func tooLarge(path string) error {
	return fmt.Errorf("%s: larger than the %d MiB limit of a desired-state document", path, MaxDocumentBytes>>20)
}

// regular refuses every kind of file but a regular one, naming the kind.
func regular(path string, st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("%s is %s, not a regular file: give the path of a regular file, or of a link to one", path, FileKind(st.Mode()))
}

// FileKind names the kind of a file that is not a regular one, for an
// error: "a named pipe (FIFO)", "a character device", "a directory" ...
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "a special file"
}
