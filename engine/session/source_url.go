package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/rollcall/rollcall/engine/spec"
)

// URLSource defaults.
const (
	DefaultURLInterval = 5 * time.Second       // between two polls
	DefaultURLTimeout  = 10 * time.Second      // for one whole answer, body included
	MaxURLBody         = spec.MaxDocumentBytes // bytes; a longer body is refused
)

// URLOptions tune a URLSource; a zero field takes its default.
type URLOptions struct {
	Interval time.Duration    // DefaultURLInterval
	Timeout  time.Duration    // DefaultURLTimeout
	Client   *http.Client     // nil: one on http.DefaultTransport
	Now      func() time.Time // time.Now; stamps StaleError.LastGood
}

// StaleError is a failed load of a source that polls (URLSource): the
// session keeps the last good desired state, and LastGood says when the
// source last confirmed it, so the header can show its age. LastGood is
// zero when no load has succeeded yet.
type StaleError struct {
	Err      error
	LastGood time.Time
}

func (e *StaleError) Error() string { return e.Err.Error() }
func (e *StaleError) Unwrap() error { return e.Err }

// URLSource is a desired-state document served over HTTP(S), as YAML or
// JSON (JSON is YAML): the rollcall.yaml schema, read by spec.Parse. It is
// polled every Interval with If-None-Match, so an unchanged document costs
// a 304 and is not parsed again; a server without ETags that sends the same
// bytes is not parsed again either.
//
// A load that fails keeps nothing from the failed answer: a timeout, a
// refused connection, a non-2xx status, a body cut short, a body over
// MaxURLBody or one that does not parse each return a *StaleError, and the
// session keeps the last good state and shows the error (a parse error is a
// spec.ErrorList inside it, located in the document).
//
// Name, errors and Desired.Source show the URL without its userinfo and
// with every query value replaced by "xxxxx", since either may hold a
// secret; requests use the URL as given (userinfo as basic auth).
func URLSource(rawURL string, o URLOptions) (Source, error) {
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
	return &urlSource{url: u.String(), name: redactURL(u), opts: o}, nil
}

type urlSource struct {
	url  string
	name string
	opts URLOptions

	mu       sync.Mutex // Load is called one at a time, but keep it safe
	good     *spec.Desired
	body     []byte // of good
	etag     string // of good
	lastGood time.Time
}

func (s *urlSource) Name() string { return s.name }

// Changes ticks every Interval: each tick is one poll.
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
				signal(out)
			}
		}
	}()
	return out
}

// Load fetches the document once.
func (s *urlSource) Load(ctx context.Context) (*spec.Desired, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.fetch(ctx)
	if err != nil {
		return nil, &StaleError{Err: err, LastGood: s.lastGood}
	}
	s.lastGood = s.opts.Now()
	return d, nil
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
	d, err := spec.Parse(s.name, body)
	if err != nil {
		return nil, err // an ErrorList, each entry located in the document
	}
	s.good, s.body, s.etag = d, body, resp.Header.Get("ETag")
	return d, nil
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
