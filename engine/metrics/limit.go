package metrics

import (
	"net"
	"sync"
)

// maxConns bounds the connections Listen's server holds open at once
// (issue 26, row 12): a flood of idle keep-alive connections used every
// file descriptor of the agent, and with them the desired file, the holds
// and the pins became unreadable. A scraper keeps one connection alive;
// 32 leaves room for a few scrapers and a curl. Past the bound, Accept
// waits for one to close: the newcomers wait in the kernel's backlog
// (bounded by the kernel, and taking no descriptor of ours) or are refused
// there.
const maxConns = 32

// limitListener accepts at most cap(sem) connections at once, as
// golang.org/x/net/netutil.LimitListener does (x/net is not a dependency
// of rollcall: this is its few lines).
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	// full, if set, is called each time Accept waits because every slot
	// is taken (for the tests).
	full func()
}

func limitListen(ln net.Listener, n int, full func()) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, n), done: make(chan struct{}), full: full}
}

// Accept waits for a free slot, then for a connection; the slot is freed
// when the connection is closed.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	default:
		if l.full != nil {
			l.full()
		}
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

// Close stops listening and wakes an Accept waiting for a slot.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

// limitConn frees its slot once, at its first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
