package moby

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/rollcall/rollcall/engine/docker"
)

// execOutputMax bounds the output Exec keeps: the end of it, where a
// failing command says why.
const execOutputMax = 4 << 10

// Exec runs cmd in a running container and waits for it: create the exec,
// attach to it (which starts it), read its output to the end, then inspect
// it for the exit code. When ctx ends first the attach is closed and ctx's
// error returned; the command may still be running in the container.
func (m *Moby) Exec(ctx context.Context, id string, cmd []string) (int, string, error) {
	if len(cmd) == 0 {
		return 0, "", fmt.Errorf("exec %s: empty command", docker.ShortID(id))
	}
	created, err := m.cli.ExecCreate(ctx, id, client.ExecCreateOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return 0, "", fmt.Errorf("exec %s in %s: %w", cmd[0], docker.ShortID(id), engineErr(err))
	}
	att, err := m.cli.ExecAttach(ctx, created.ID, client.ExecAttachOptions{})
	if err != nil {
		return 0, "", fmt.Errorf("exec %s in %s: %w", cmd[0], docker.ShortID(id), engineErr(err))
	}
	// A hijacked connection does not watch ctx: close it when ctx ends.
	stop := context.AfterFunc(ctx, att.Close)
	out := &tailBuffer{max: execOutputMax}
	_, cerr := stdcopy.StdCopy(out, out, att.Reader)
	stop()
	att.Close()
	if err := ctx.Err(); err != nil {
		return 0, out.String(), fmt.Errorf("exec %s in %s: %w", cmd[0], docker.ShortID(id), err)
	}
	if cerr != nil && !errors.Is(cerr, io.EOF) {
		return 0, out.String(), fmt.Errorf("exec %s in %s: read output: %w", cmd[0], docker.ShortID(id), cerr)
	}
	res, err := m.cli.ExecInspect(ctx, created.ID, client.ExecInspectOptions{})
	if err != nil {
		return 0, out.String(), fmt.Errorf("exec %s in %s: %w", cmd[0], docker.ShortID(id), engineErr(err))
	}
	return res.ExitCode, out.String(), nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > t.max {
		p = p[len(p)-t.max:]
	}
	if over := t.buf.Len() + len(p) - t.max; over > 0 {
		t.buf.Next(over)
	}
	t.buf.Write(p)
	return n, nil
}

func (t *tailBuffer) String() string { return t.buf.String() }
