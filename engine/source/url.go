package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/source/load"
	"github.com/rollcall/rollcall/engine/spec"
)

// Defaults of URL.
const (
	DefaultURLInterval = 5 * time.Second       // between two polls
	DefaultURLTimeout  = 10 * time.Second      // for one whole answer, body included
	MaxURLBody         = spec.MaxDocumentBytes // bytes; a longer body is refused
)

// URLOptions tune the source URL returns; a zero field takes its default.
type URLOptions struct {
	Interval time.Duration    // DefaultURLInterval
	Timeout  time.Duration    // DefaultURLTimeout
	Client   *http.Client     // nil: one on http.DefaultTransport
	Now      func() time.Time // time.Now; stamps StaleError.LastGood
	// TokenFile, when set, holds a bearer token, sent as "Authorization:
	// Bearer TOKEN". It is read again at each poll, so a rotated token is
	// used from the next poll on.
	TokenFile string
	// AllowHostAccess lets the served file reach into the host (bind
	// mounts, privileged, devices, cap_add, host network, security_opt:
	// spec.Workload.HostAccess); without it such a file is refused, since
	// whoever controls the server would own the host.
	AllowHostAccess bool
}

// MaxTokenBytes bounds a token file.
const MaxTokenBytes = 64 << 10

// TokenFileError is a token file that cannot be used: absent, not a
// regular file, empty, too long, or holding what a header cannot carry.
// It names the file, never the token.
type TokenFileError struct {
	Path string
	Err  error
}

func (e *TokenFileError) Error() string { return fmt.Sprintf("token file %s: %v", e.Path, e.Err) }
func (e *TokenFileError) Unwrap() error { return e.Err }

// StaleError is a failed load of a source that polls (URL): the
// session keeps the last good desired state, and LastGood says when the
// source last confirmed it, so the header can show its age. LastGood is
// zero when no load has succeeded yet.
type StaleError struct {
	Err      error
	LastGood time.Time
}

func (e *StaleError) Error() string { return e.Err.Error() }
func (e *StaleError) Unwrap() error { return e.Err }

// URL is a desired-state document served over HTTP(S), as YAML or
// JSON (JSON is YAML): the rollcall.yaml schema, read by load.Parse. It is
// polled every Interval with If-None-Match, so an unchanged document costs
// a 304 and is not parsed again; a server without ETags that sends the same
// bytes is not parsed again either. Changes signals only an answer that
// differs from the last one loaded.
//
// A load that fails keeps nothing from the failed answer: a timeout, a
// refused connection, a non-2xx status, a body cut short, a body over
// MaxURLBody or one that does not parse each return a *StaleError, and the
// session keeps the last good state and shows the error (a parse error is a
// spec.ErrorList inside it, located in the document).
//
// With URLOptions.TokenFile, each request carries the token read from it
// as a bearer token; a token file that cannot be read at a poll fails that
// poll as any other failure does. The token is never shown.
//
// Name, errors and Desired.Source show the URL without its userinfo and
// with every query value replaced by "xxxxx", since either may hold a
// secret; requests use the URL as given (userinfo as basic auth).
func URL(rawURL string, o URLOptions) (Source, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("desired-state URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("desired-state URL %s: want http:// or https:// and a host", redactURL(u))
	}
	if o.Interval <= 0 {
		o.Interval = DefaultURLInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultURLTimeout
	}
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.TokenFile != "" {
		if _, err := readToken(o.TokenFile); err != nil {
			return nil, err // at start: a token file that cannot be used is an error now, not at the first poll
		}
	}
	return &urlSource{url: u.String(), name: redactURL(u), opts: o}, nil
}

type urlSource struct {
	url  string
	name string
	opts URLOptions

	mu       sync.Mutex // Load and the poll of Changes
	good     *spec.Desired
	body     []byte // of good
	etag     string // of good
	lastGood time.Time

	// What Load last gave, and the poll's answer that differs from it,
	// for the Load its signal calls for.
	loaded    *spec.Desired
	loadedErr string
	pending   *urlAnswer
}

type urlAnswer struct {
	desired *spec.Desired
	err     error
}

func (s *urlSource) Name() string { return s.name }

// Changes polls every Interval and signals when an answer differs from
// what Load last gave: a new document, a failure, another failure, or the
// recovery. An unchanged document (a 304, or the same bytes) signals
// nothing, so a session is not made to load and list again at each poll.
func (s *urlSource) Changes(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	go func() {
		t := time.NewTicker(s.opts.Interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if s.poll(ctx) {
					loopkit.Signal(out)
				}
			}
		}
	}()
	return out
}

// poll fetches the document once and reports whether the answer differs
// from what Load last gave; if so, the next Load gives that answer.
func (s *urlSource) poll(ctx context.Context) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.fetchOnce(ctx)
	if ctx.Err() != nil {
		return false // shutting down: not a failure of the source
	}
	if d == s.loaded && errText(err) == s.loadedErr {
		s.pending = nil
		return false
	}
	if p := s.pending; p != nil && p.desired == d && errText(p.err) == errText(err) {
		return false // signalled already, not loaded yet: one signal for one change
	}
	s.pending = &urlAnswer{desired: d, err: err}
	return true
}

// Load gives the answer of the poll that signalled, or fetches the
// document once.
func (s *urlSource) Load(ctx context.Context) (*spec.Desired, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var d *spec.Desired
	var err error
	if p := s.pending; p != nil {
		s.pending = nil
		d, err = p.desired, p.err
	} else {
		d, err = s.fetchOnce(ctx)
	}
	s.loaded, s.loadedErr = d, errText(err)
	if err != nil {
		return nil, &StaleError{Err: err, LastGood: s.lastGood}
	}
	return d, nil
}

// fetchOnce is fetch, stamping lastGood when the answer is good.
func (s *urlSource) fetchOnce(ctx context.Context) (*spec.Desired, error) {
	d, err := s.fetch(ctx)
	if err == nil {
		s.lastGood = s.opts.Now()
	}
	return d, err
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (s *urlSource) fetch(ctx context.Context) (*spec.Desired, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", s.name, err)
	}
	req.Header.Set("Accept", "application/yaml, application/json;q=0.9, text/plain;q=0.5, */*;q=0.1")
	if s.good != nil && s.etag != "" {
		req.Header.Set("If-None-Match", s.etag)
	}
	if s.opts.TokenFile != "" {
		token, err := readToken(s.opts.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", s.name, err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return nil, s.failed(ctx, "fetch", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && s.good != nil:
		return s.good, nil
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
		return nil, fmt.Errorf("fetch %s: %s", s.name, resp.Status)
	case resp.ContentLength > MaxURLBody:
		return nil, fmt.Errorf("fetch %s: body of %d bytes refused: the limit is %d MiB", s.name, resp.ContentLength, MaxURLBody>>20)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxURLBody+1))
	switch {
	case err != nil:
		return nil, s.failed(ctx, "read", err)
	case len(body) > MaxURLBody:
		return nil, fmt.Errorf("fetch %s: body over %d MiB refused", s.name, MaxURLBody>>20)
	case s.good != nil && bytes.Equal(body, s.body):
		s.etag = resp.Header.Get("ETag")
		return s.good, nil
	}
	d, err := load.Parse(s.name, body)
	if err != nil {
		return nil, err // an ErrorList, each entry located in the document
	}
	if !s.opts.AllowHostAccess {
		if err := spec.CheckHostAccess(d); err != nil {
			return nil, err
		}
	}
	s.good, s.body, s.etag = d, body, resp.Header.Get("ETag")
	return d, nil
}

// readToken reads a bearer token from path: a regular file (or a link to
// one) of at most MaxTokenBytes, opened without blocking, its content
// trimmed of surrounding white space. Errors are *TokenFileError and never
// hold the token.
func readToken(path string) (string, error) {
	fail := func(err error) (string, error) { return "", &TokenFileError{Path: path, Err: err} }
	regular := func(st os.FileInfo) error {
		if !st.Mode().IsRegular() {
			return fmt.Errorf("not a regular file (%s)", st.Mode().Type())
		}
		if st.Size() > MaxTokenBytes {
			return fmt.Errorf("over the %d KiB limit of a token", MaxTokenBytes>>10)
		}
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return fail(unwrapPath(err))
	}
	if err := regular(st); err != nil {
		return fail(err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return fail(unwrapPath(err))
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return fail(unwrapPath(err))
	}
	if err := regular(st); err != nil { // swapped since the first look
		return fail(err)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxTokenBytes+1))
	switch {
	case err != nil:
		return fail(unwrapPath(err))
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

// unwrapPath drops the *fs.PathError around err, whose path the
// TokenFileError already names.
func unwrapPath(err error) error {
	var perr *fs.PathError
	if errors.As(err, &perr) {
		return perr.Err
	}
	return err
}

// failed words a transport error without the URL inside it, which may
// hold secrets.
func (s *urlSource) failed(ctx context.Context, verb string, err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%s %s: no complete answer within %s", verb, s.name, s.opts.Timeout)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%s %s: the body was cut short", verb, s.name)
	}
	return fmt.Errorf("%s %s: %w", verb, s.name, err)
}

// redactURL is u for showing: no userinfo, no query values, no fragment.
func redactURL(u *url.URL) string {
	r := *u
	r.User = nil
	r.Fragment, r.RawFragment = "", ""
	if r.RawQuery != "" {
		q := r.Query()
		for k := range q {
			q[k] = []string{"xxxxx"}
		}
		r.RawQuery = q.Encode()
	}
	return r.String()
}
