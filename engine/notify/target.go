package notify

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rollcall/rollcall/engine/spec"
)

// Target is one URL events are posted to.
type Target struct {
	URL string
	// TokenFile holds a bearer token, read at each post (a rotated token
	// is picked up) and sent as "Authorization: Bearer TOKEN"; "" for
	// none.
	TokenFile string
}

// Name is the URL as reports, notes and the journal show it: its scheme
// and host, with "/…" for a path or query left out, since a webhook's
// path is often its secret (Slack's, Discord's).
func (t Target) Name() string { return spec.RedactURL(t.URL) }

// TargetsOf are the webhooks of d's notify:, in file order, a relative
// token_file read from the desired file's directory (the working
// directory for a URL source), as a relative tls folder of hosts: is.
func TargetsOf(d *spec.Desired) []Target {
	if d == nil || len(d.Notify) == 0 {
		return nil
	}
	base := ""
	if d.Source != "" && !strings.Contains(d.Source, "://") {
		base = filepath.Dir(d.Source)
	}
	out := make([]Target, len(d.Notify))
	for i, w := range d.Notify {
		out[i] = Target{URL: w.URL, TokenFile: w.TokenFile}
		if w.TokenFile != "" && !filepath.IsAbs(w.TokenFile) && base != "" {
			out[i].TokenFile = filepath.Join(base, w.TokenFile)
		}
	}
	return out
}

// MaxTokenBytes bounds a token file.
const MaxTokenBytes = 64 << 10

// readToken reads a bearer token from path: a regular file (or a link to
// one) of at most MaxTokenBytes, opened without blocking (a FIFO put in
// its place cannot hang a post), trimmed of surrounding white space. Its
// errors name the file, never the token.
func readToken(path string) (string, error) {
	fail := func(err error) (string, error) {
		var perr *fs.PathError
		if errors.As(err, &perr) {
			err = perr.Err
		}
		return "", fmt.Errorf("token file %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return fail(err)
	case !st.Mode().IsRegular():
		return fail(fmt.Errorf("not a regular file (%s)", st.Mode().Type()))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxTokenBytes+1))
	switch {
	case err != nil:
		return fail(err)
	case len(data) > MaxTokenBytes:
		return fail(fmt.Errorf("over the %d KiB limit of a token", MaxTokenBytes>>10))
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return fail(errors.New("empty: it should hold the bearer token"))
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c < 0x21 || c > 0x7e {
			return fail(fmt.Errorf("holds a character a bearer token cannot (byte %d): want one line of visible ASCII", i+1))
		}
	}
	return token, nil
}
