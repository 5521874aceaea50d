package fake

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// Behaviour is how the containers of one fake image act over time. The zero
// Behaviour is a process that starts at once, is healthy at once (if it has a
// healthcheck) and runs until stopped.
type Behaviour struct {
	// ReadyAfter is how long a container with a healthcheck reports
	// "starting" before it turns healthy (or unhealthy, see Unhealthy).
	// Without a healthcheck, nothing happens: the container just runs.
	ReadyAfter time.Duration
	// Unhealthy makes the health turn "unhealthy" instead of "healthy" at
	// ReadyAfter.
	Unhealthy bool
	// UnhealthyAt, when above 0 and below ReadyAfter, makes a slow starter:
	// the health reads "unhealthy" from UnhealthyAt after every start until
	// it turns healthy at ReadyAfter, as docker reports an app whose probes
	// fail past their retries before it is ready (no start_period).
	UnhealthyAt time.Duration
	// CrashAfter makes the process exit with ExitCode this long after every
	// start. 0 means it never crashes.
	CrashAfter time.Duration
	// ExitCode is the crash's exit code. With OOM and ExitCode 0, it is 137.
	ExitCode int
	// OOM marks the crash as an out-of-memory kill.
	OOM bool
	// FailStart makes every start fail: Create removes the container again
	// and returns an error.
	FailStart bool
	// ExecExitCode is the exit code of every command Exec runs.
	ExecExitCode int
	// ExecDrains makes a command that exits 0 turn a running container
	// with a healthcheck unhealthy one probe interval later, as a pre_stop
	// that drains does.
	ExecDrains bool
	// Volumes are the targets the image declares VOLUME at, as
	// ImageInspect reports them.
	Volumes []string
}

// AddImage makes the image id available under ref, with the behaviour its
// containers will have. Adding a known ref with a new id re-points the tag,
// as a rebuild does; the old image stays available by its id. An empty id
// gets a generated "sha256:" one. A tag that now points somewhere new is an
// image "tag" event, as the engine's.
func (f *Engine) AddImage(ref, id string, b Behaviour) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if id == "" {
		id = "sha256:" + f.newID()
	}
	f.behaviours[id] = b
	if f.tags[ref] != id {
		f.tags[ref] = id
		f.emitImage("tag", ref, id, f.clock.Now())
	}
}

// fakeContainer is a Container plus what the simulation needs to move it
// along in time.
type fakeContainer struct {
	docker.Container
	seq        int
	behaviour  Behaviour
	knownImage bool // behaviour came from an image the fake knows; else nothing happens by itself
	interval   time.Duration
	stopSignal string
	spec       *docker.CreateSpec // what Create was given; nil for AddContainer's

	readyDue   bool // the health turns at readyAt
	readyAt    time.Time
	unreadyDue bool // a slow starter reads unhealthy from unreadyAt (until readyAt)
	unreadyAt  time.Time
	crashDue   bool // the process exits at crashAt
	crashAt    time.Time
	drainDue   bool // the health turns unhealthy at drainAt (an exec drained it)
	drainAt    time.Time
	restartAt  time.Time // when a restarting container runs again

	healthMarks []healthMark // health changes since the last start, oldest first
	logs        []docker.LogLine
	logFeeds    []*feed[docker.LogLine]
}

type healthMark struct {
	at     time.Time
	health docker.Health
}

const (
	defaultProbeInterval = 30 * time.Second // docker's default healthcheck interval
	healthLogSize        = 5                // probes docker keeps
	maxLogLines          = 200
	maxHealthMarks       = 16
	maxRestartBackoff    = time.Minute
	firstRestartBackoff  = 100 * time.Millisecond
)

// restartBackoff is the restart policy's delay before restart number n+1:
// 100ms doubling, capped at one minute, as in docker.
func restartBackoff(restartCount int) time.Duration {
	d := firstRestartBackoff
	for range restartCount {
		d *= 2
		if d >= maxRestartBackoff {
			return maxRestartBackoff
		}
	}
	return d
}

func (f *Engine) newContainer(spec docker.CreateSpec, imageID string, now time.Time) *fakeContainer {
	f.seq++
	c := &fakeContainer{
		Container: docker.Container{
			ID:      f.newID(),
			Name:    spec.Name,
			Image:   spec.Image,
			ImageID: imageID,
			Labels:  copyMap(spec.Labels),
			State:   docker.StateCreated,
			Created: now,
			Limits:  spec.Limits,
		},
		seq:        f.seq,
		behaviour:  f.behaviours[imageID],
		knownImage: true,
		interval:   defaultProbeInterval,
		stopSignal: spec.StopSignal,
		spec:       &spec,
	}
	if c.Limits.Restart == "" {
		c.Limits.Restart = "no"
	}
	if c.stopSignal == "" {
		c.stopSignal = "SIGTERM"
	}
	if hc := spec.Healthcheck; hc != nil && !(len(hc.Test) > 0 && hc.Test[0] == "NONE") {
		c.HasHealthcheck = true
		if hc.Interval > 0 {
			c.interval = hc.Interval
		}
	}
	networks := spec.Networks
	if m := spec.Options.NetworkMode; m != "" {
		networks = []string{m}
	}
	if len(networks) == 0 {
		networks = []string{fakeBridge}
	}
	c.Networks = make(map[string]string, len(networks))
	for _, n := range networks {
		c.Networks[n] = f.address(n, c.seq)
	}
	for _, p := range spec.Ports {
		pp := docker.PublishedPort{ContainerPort: p.ContainerPort, Proto: p.Proto, HostIP: p.HostIP, HostPort: p.HostPort}
		if pp.Proto == "" {
			pp.Proto = "tcp"
		}
		if pp.HostIP == "" {
			pp.HostIP = "127.0.0.1"
		}
		if pp.HostPort == 0 {
			pp.HostPort = f.nextPort
			f.nextPort++
		}
		c.Ports = append(c.Ports, pp)
	}
	f.containers[c.ID] = c
	f.emit(c, "create", now, nil)
	return c
}

// start runs a container from now on. It fails for a FailStart image or a
// fixed host port that a running container already holds.
func (f *Engine) start(c *fakeContainer, at time.Time) error {
	if c.behaviour.FailStart {
		c.State = docker.StateExited
		c.Error = "simulated start failure (image " + c.Image + ")"
		return errors.New(c.Error)
	}
	if p, ok := f.portTaken(c); ok {
		c.State = docker.StateExited
		c.Error = fmt.Sprintf("bind for %s:%d failed: port is already allocated", p.HostIP, p.HostPort)
		return errors.New(c.Error)
	}
	before := c.Health
	c.State = docker.StateRunning
	c.StartedAt = at
	c.ExitCode = 0
	c.OOMKilled = false
	c.Error = ""
	c.crashDue = c.behaviour.CrashAfter > 0
	c.crashAt = at.Add(c.behaviour.CrashAfter)
	c.drainDue = false
	c.unreadyDue = false
	c.healthMarks = nil
	c.HealthySinceStart = false
	f.emit(c, "start", at, nil)
	f.log(c, at, "stdout", "starting "+c.Image+" as "+c.Name)
	f.log(c, at, "stderr", "no config file found, using defaults")
	if c.HasHealthcheck {
		c.readyDue = true
		c.readyAt = at.Add(c.behaviour.ReadyAfter)
		if u := c.behaviour.UnhealthyAt; u > 0 && u < c.behaviour.ReadyAfter {
			c.unreadyDue, c.unreadyAt = true, at.Add(u)
		}
		f.setHealth(c, docker.HealthStarting, at, before != docker.HealthNone)
	}
	return nil
}

func (f *Engine) portTaken(c *fakeContainer) (docker.PublishedPort, bool) {
	for _, p := range c.Ports {
		for _, o := range f.containers {
			if o == c || o.State != docker.StateRunning {
				continue
			}
			for _, q := range o.Ports {
				sameIP := p.HostIP == q.HostIP || p.HostIP == "0.0.0.0" || q.HostIP == "0.0.0.0"
				if sameIP && p.HostPort == q.HostPort && p.Proto == q.Proto {
					return p, true
				}
			}
		}
	}
	return docker.PublishedPort{}, false
}

// stop is a graceful stop by the user: exit code 0, no policy restart.
func (f *Engine) stop(c *fakeContainer, at time.Time) {
	switch c.State {
	case docker.StateRunning:
		f.log(c, at, "stdout", "received "+c.stopSignal+", shutting down")
		f.exit(c, at, 0, false, true)
		f.emit(c, "stop", at, nil)
	case docker.StateRestarting:
		// The process is already gone; the pending restart is cancelled.
		c.State = docker.StateExited
		f.emit(c, "stop", at, nil)
	}
}

// exit ends a running process. Unless the user stopped it, the restart
// policy may bring it back after a backoff.
func (f *Engine) exit(c *fakeContainer, at time.Time, code int, oom, byUser bool) {
	c.State = docker.StateExited
	c.ExitCode = code
	c.OOMKilled = oom
	c.FinishedAt = at
	c.readyDue = false
	c.unreadyDue = false
	c.crashDue = false
	c.drainDue = false
	if oom {
		f.emit(c, "oom", at, nil)
	}
	f.emit(c, "die", at, map[string]string{"exitCode": strconv.Itoa(code)})
	if !byUser && restartsAfter(c.Limits.Restart, code) {
		c.State = docker.StateRestarting
		c.restartAt = at.Add(restartBackoff(c.RestartCount))
	}
}

// restartsAfter reports whether a restart policy brings a process that
// exited with code back.
func restartsAfter(policy string, code int) bool {
	switch policy {
	case "always", "unless-stopped":
		return true
	case "on-failure":
		return code != 0
	}
	return false
}

func (f *Engine) crash(c *fakeContainer, at time.Time) {
	code, oom := c.behaviour.ExitCode, c.behaviour.OOM
	if oom && code == 0 {
		code = 137
	}
	if oom {
		f.log(c, at, "stderr", "fatal error: out of memory")
	} else {
		f.log(c, at, "stderr", fmt.Sprintf("fatal: exiting with status %d", code))
	}
	f.exit(c, at, code, oom, false)
}

func (f *Engine) destroy(c *fakeContainer, at time.Time) {
	f.emit(c, "destroy", at, nil)
	for _, fd := range c.logFeeds {
		fd.end()
	}
	c.logFeeds = nil
	delete(f.containers, c.ID)
}

func (f *Engine) setLimits(c *fakeContainer, l docker.Limits, at time.Time) {
	if l.Restart == "" {
		l.Restart = c.Limits.Restart
	}
	c.Limits = l
	f.emit(c, "update", at, nil)
}

// setHealth records a health change; emit says whether it is announced by
// a health_status event.
func (f *Engine) setHealth(c *fakeContainer, h docker.Health, at time.Time, emit bool) {
	changed := c.Health != h
	c.Health = h
	if h == docker.HealthHealthy {
		c.HealthySinceStart = true
	}
	c.healthMarks = append(c.healthMarks, healthMark{at: at, health: h})
	if len(c.healthMarks) > maxHealthMarks {
		c.healthMarks = c.healthMarks[len(c.healthMarks)-maxHealthMarks:]
	}
	if changed && emit && h != docker.HealthNone {
		f.emit(c, "health_status: "+string(h), at, nil)
	}
	switch h {
	case docker.HealthHealthy:
		f.log(c, at, "stdout", "GET /health 200 ok")
	case docker.HealthUnhealthy:
		f.log(c, at, "stderr", "GET /health failed: connection refused")
	}
}

// transition kinds, in the order they apply when due at the same instant.
const (
	dueReady = iota
	dueUnready
	dueCrash
	dueRestart
	dueDrain
)

// advance applies every state change due by the clock's now, earliest
// first, and returns now.
func (f *Engine) advance() time.Time {
	now := f.clock.Now()
	for {
		var next *fakeContainer
		var nextAt time.Time
		nextKind := 0
		for _, c := range f.containers {
			at, kind, ok := c.due()
			if !ok || at.After(now) {
				continue
			}
			if next == nil || at.Before(nextAt) ||
				(at.Equal(nextAt) && (kind < nextKind || (kind == nextKind && c.seq < next.seq))) {
				next, nextAt, nextKind = c, at, kind
			}
		}
		if next == nil {
			return now
		}
		switch nextKind {
		case dueReady:
			next.readyDue = false
			h := docker.HealthHealthy
			if next.behaviour.Unhealthy {
				h = docker.HealthUnhealthy
			}
			f.setHealth(next, h, nextAt, true)
		case dueUnready:
			next.unreadyDue = false
			f.setHealth(next, docker.HealthUnhealthy, nextAt, true)
		case dueCrash:
			f.crash(next, nextAt)
		case dueDrain:
			next.drainDue = false
			next.readyDue = false
			next.unreadyDue = false
			f.setHealth(next, docker.HealthUnhealthy, nextAt, true)
		case dueRestart:
			next.RestartCount++
			// A start that fails leaves the container exited, its Error set.
			_ = f.start(next, nextAt)
		}
	}
}

// due returns the container's next time-driven change, if any.
func (c *fakeContainer) due() (time.Time, int, bool) {
	switch c.State {
	case docker.StateRunning:
		at, kind, ok := time.Time{}, 0, false
		switch {
		case c.readyDue && (!c.crashDue || !c.crashAt.Before(c.readyAt)):
			at, kind, ok = c.readyAt, dueReady, true
		case c.crashDue:
			at, kind, ok = c.crashAt, dueCrash, true
		}
		if c.unreadyDue && (!ok || c.unreadyAt.Before(at)) {
			at, kind, ok = c.unreadyAt, dueUnready, true
		}
		if c.drainDue && (!ok || c.drainAt.Before(at)) {
			at, kind, ok = c.drainAt, dueDrain, true
		}
		return at, kind, ok
	case docker.StateRestarting:
		return c.restartAt, dueRestart, true
	}
	return time.Time{}, 0, false
}

// healthLog simulates the last probes up to now: one every interval since
// the last start, each reporting the health the container had then.
func (c *fakeContainer) healthLog(now time.Time) []docker.HealthResult {
	if !c.HasHealthcheck || c.StartedAt.IsZero() {
		return nil
	}
	end := now
	if c.State != docker.StateRunning {
		end = c.FinishedAt
	}
	n := int(end.Sub(c.StartedAt) / c.interval)
	var out []docker.HealthResult
	for k := max(1, n-healthLogSize+1); k <= n; k++ {
		at := c.StartedAt.Add(time.Duration(k) * c.interval)
		h := docker.HealthStarting
		for _, m := range c.healthMarks {
			if !m.at.After(at) {
				h = m.health
			}
		}
		r := docker.HealthResult{Start: at, End: at.Add(time.Millisecond), ExitCode: 1, Output: "connection refused"}
		if h == docker.HealthHealthy {
			r.ExitCode, r.Output = 0, "ok"
		}
		out = append(out, r)
	}
	return out
}

// log appends a synthetic log line and hands it to followers.
func (f *Engine) log(c *fakeContainer, at time.Time, stream, text string) {
	l := docker.LogLine{Time: at, Stream: stream, Text: text}
	c.logs = append(c.logs, l)
	if len(c.logs) > 2*maxLogLines {
		c.logs = append(c.logs[:0:0], c.logs[len(c.logs)-maxLogLines:]...)
	}
	live := c.logFeeds[:0]
	for _, fd := range c.logFeeds {
		if !fd.gone.Load() {
			fd.push(l)
			live = append(live, fd)
		}
	}
	c.logFeeds = live
}
