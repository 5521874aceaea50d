package moby_test

import (
	"slices"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
)

// The failure messages of the real-engine tests name what they got, image
// events (no container ID) and short IDs included, without a panic.
func TestShortIDAndEventActionsTakeAnyEvent(t *testing.T) {
	for id, want := range map[string]string{
		"":    "",
		"abc": "abc",
		"sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": "0123456789ab",
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef":             "0123456789ab",
	} {
		if got := shortID(id); got != want {
			t.Errorf("shortID(%q) = %q, want %q", id, got, want)
		}
	}
	got := eventActions([]docker.Event{
		{Type: docker.EventImage, Action: "tag", Name: "web:v1"},
		{ContainerID: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Action: "start"},
	})
	if want := []string{"image web:v1 tag", "0123456789ab start"}; !slices.Equal(got, want) {
		t.Errorf("eventActions = %q, want %q", got, want)
	}
}
