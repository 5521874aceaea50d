package moby

import (
	"context"
	"errors"
	"fmt"

	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"
)

// PushImage pushes the engine's image local (a tag or ID it has) to the
// registry as ref ("127.0.0.1:5000/team/app:v1"), through the engine, with
// the docker CLI's credentials for ref's registry: it tags local as ref,
// pushes ref, and takes the tag ref off again, so that running ref needs a
// pull. local stays as it was.
func (m *Moby) PushImage(ctx context.Context, local, ref string) error {
	auth, perr := registryAuth(ref)
	if perr != nil {
		return perr
	}
	if auth == "" {
		// An engine before API 1.42 wants the header even with no
		// credentials ("missing X-Registry-Auth").
		enc, err := authconfig.Encode(registry.AuthConfig{})
		if err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		auth = enc
	}
	if _, err := m.cli.ImageTag(ctx, client.ImageTagOptions{Source: local, Target: ref}); err != nil {
		return fmt.Errorf("tag %s as %s: %w", local, ref, engineErr(err))
	}
	perr2 := m.push(ctx, ref, auth)
	// The tag goes whatever the push did; the image stays (local names it).
	_, rerr := m.cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{})
	if rerr != nil {
		rerr = fmt.Errorf("untag %s: %w", ref, engineErr(rerr))
	}
	return errors.Join(perr2, rerr)
}

func (m *Moby) push(ctx context.Context, ref, auth string) error {
	resp, err := m.cli.ImagePush(ctx, ref, client.ImagePushOptions{RegistryAuth: auth})
	if err != nil {
		return fmt.Errorf("push %s: %w", ref, engineErr(err))
	}
	defer resp.Close()
	for msg, err := range resp.JSONMessages(ctx) {
		if err != nil {
			return fmt.Errorf("push %s: %w", ref, err)
		}
		if msg.Error != nil {
			return fmt.Errorf("push %s: the engine says: %s", ref, msg.Error.Message)
		}
	}
	return nil
}
