package fleet

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/engine/state"
)

// dialAll dials every host, DialParallel at a time, each within
// DialTimeout: its client, then its engine's identity. A host that does
// not answer has dialErr set and no client. The snapshot shows each as it
// answers.
func (r *run) dialAll() {
	type dialed struct {
		h      *host
		client docker.Client
		info   docker.EngineInfo
		err    error
	}
	sem := make(chan struct{}, r.opts.DialParallel)
	out := make(chan dialed)
	for _, h := range r.hosts {
		go func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(r.ctx, r.opts.DialTimeout)
			defer cancel()
			d := dialed{h: h}
			d.client, d.err = r.opts.Dial(ctx, h.spec)
			if d.err == nil {
				if d.info, d.err = d.client.Info(ctx); d.err != nil {
					d.err = fmt.Errorf("engine info: %w", d.err)
				}
			}
			out <- d
		}()
	}
	for range r.hosts {
		d := <-out
		h := d.h
		h.client, h.info = d.client, d.info
		if d.err != nil {
			h.closeClient()
			h.client, h.info, h.dialErr = nil, docker.EngineInfo{}, d.err.Error()
			r.note("%s does not answer: %s", h.name, h.dialErr)
			r.line(linePreflight, h.name, "does not answer: "+h.dialErr)
		}
		r.publish()
	}
}

// sameEngines finds the hosts that answered with the engine of a host
// named before them in the file: one engine is one host. Each is an error
// at its line in the file, and gets no session.
func (r *run) sameEngines() {
	first := map[string]*host{}
	for _, h := range r.hosts {
		if h.client == nil || h.info.ID == "" {
			continue
		}
		f, dup := first[h.info.ID]
		if !dup {
			first[h.info.ID] = h
			continue
		}
		h.dup = f.name
		h.hostErr = r.desired.HostError(h.name, "each host is one engine: name it once, by one endpoint or context",
			fmt.Sprintf("reaches the engine of %s (line %d): engine ID %s", f.name, f.spec.Line, h.info.ID))
		r.note("%v", h.hostErr)
		r.line(linePreflight, h.name, h.hostErr.Msg)
	}
}

// lockRequest is one host's lock to take.
type lockRequest struct {
	h    *host
	path string
}

// lockResult is what came of taking every lock: all of them, in order, or
// none (the one at failed could not be taken: held by holder, or err).
type lockResult struct {
	reqs   []lockRequest
	locks  []*session.Lock
	failed int
	holder *session.LockHolder
	err    error
}

// release lets go of the locks a result holds.
func (res lockResult) release() {
	for _, lk := range res.locks {
		lk.Release()
	}
}

// lockRequests are the locks of the hosts that answered, each once, in
// LockOrder: by engine ID, the one order every rollcall takes them in.
func (r *run) lockRequests() []lockRequest {
	var hs []Host
	byName := map[string]*host{}
	for _, h := range r.hosts {
		if h.client != nil && h.dup == "" {
			hs = append(hs, Host{Name: h.name, EngineID: h.info.ID})
			byName[h.name] = h
		}
	}
	var reqs []lockRequest
	for _, name := range LockOrder(hs) {
		h := byName[name]
		reqs = append(reqs, lockRequest{h: h, path: lockPath(r.opts.LockDir, h.info, r.desired.Prefix)})
	}
	return reqs
}

// lockPath is a host's lock: one file per engine identity and prefix,
// never per endpoint, so two ways to one engine share it.
func lockPath(dir string, info docker.EngineInfo, prefix string) string {
	if dir == "" {
		return session.DefaultLockPath(info, prefix)
	}
	return filepath.Join(dir, "rollcall-"+prefix+"-"+state.EngineKey(info)+".lock")
}

// takeLocks takes every lock in order, without waiting: all of them, or,
// as soon as one is held elsewhere, none (those taken are let go of).
func takeLocks(reqs []lockRequest, user string, now time.Time) lockResult {
	res := lockResult{reqs: reqs, failed: -1}
	for i, q := range reqs {
		lk, holder, err := state.TakeLock(q.path, user, now)
		if err != nil {
			res.release()
			res.locks, res.failed, res.holder, res.err = nil, i, holder, err
			return res
		}
		res.locks = append(res.locks, lk)
	}
	return res
}

// onLocks takes in a take of every lock, for mode: held, the fleet acts in
// it; refused, it watches and says who holds the lock.
func (r *run) onLocks(res lockResult, mode session.Mode) {
	for _, h := range r.hosts {
		h.lockErr, h.holder = "", nil
	}
	if res.err != nil {
		q := res.reqs[res.failed]
		h := q.h
		h.lockErr, h.holder = res.err.Error(), res.holder
		who := "another session"
		if res.holder != nil {
			who = res.holder.String()
		}
		r.lockErr = fmt.Sprintf("the host lock of %s (engine %s) is held by %s: no lock taken, watching instead", h.name, h.info.ID, who)
		r.mode = session.ModeWatch
		r.eachSession(session.SetMode{Mode: session.ModeWatch})
		r.note("%s needs every host's lock: %s", mode, r.lockErr)
		r.line(linePreflight, h.name, r.lockErr)
		return
	}
	for i, q := range res.reqs {
		q.h.lock.Store(res.locks[i])
	}
	if r.lockErr != "" {
		r.note("took every host's lock")
	}
	r.lockErr = ""
	r.mode = mode
	r.eachSession(session.SetMode{Mode: mode})
}

// hostErrors are the hosts found to be one engine, as errors at their
// lines in the file.
func (r *run) hostErrors() spec.ErrorList {
	var list spec.ErrorList
	for _, h := range r.hosts {
		if h.hostErr != nil {
			list = append(list, h.hostErr)
		}
	}
	return list
}
