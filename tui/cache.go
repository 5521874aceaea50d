package tui

import (
	"fmt"
	"strings"
	"sync/atomic"

	"charm.land/bubbles/v2/key"
)

// A frame that changes one figure (an uptime, a countdown) should not pay
// for a whole render (DESIGN §8, cost): the parts of the screen that do
// not show it are kept, drawn, keyed on everything they show, and drawn
// again only when their key changes. The cache is shared by the copies of
// a Model (a pointer): a key says all a part is drawn from, so any copy
// may use an entry another made. Update and View run on the program's one
// goroutine.
type renderCache struct {
	header cacheEntry[[]string]
	footer cacheEntry[string]
	plan   cacheEntry[string]
	events cacheEntry[string]
}

type cacheEntry[T any] struct {
	key string
	val T
	ok  bool
}

// get returns the entry's value for key, drawing it with draw when the
// key changed.
func (e *cacheEntry[T]) get(key string, draw func() T) T {
	if e.ok && e.key == key {
		return e.val
	}
	e.key, e.val, e.ok = key, draw(), true
	return e.val
}

// boardGen numbers the boards: each snapshot's board is a new one, so a
// key holding its generation changes with anything the snapshot brought.
var boardGen atomic.Uint64

// headerLines are the header's lines at the model's width, drawn once per
// board and what else they show. The fleet's header (its soak countdown,
// its hosts) is drawn each time.
func (m *Model) headerLines(f frame) []string {
	if m.cache == nil || m.header.fleet != nil {
		return m.header.lines(f, m.width)
	}
	key := fmt.Sprintf("%d|%s|%d|%t|%t|%s", m.board.gen, m.themeName, m.width, f.has, f.asking, f.lastSeen)
	if len(m.board.header.canaries) > 0 {
		key += "|" + f.now.String() // its countdowns move
	}
	return m.cache.header.get(key, func() []string { return m.header.lines(f, m.width) })
}

// keysKey is what the footer's help shows of the keys: each binding's
// keys, help and whether it is on.
func keysKey(k *KeyMap) string {
	var b strings.Builder
	for _, col := range k.FullHelp() {
		for _, kb := range col {
			bindingKey(&b, kb)
		}
	}
	for _, kb := range k.ShortHelp() {
		bindingKey(&b, kb)
	}
	return b.String()
}

func bindingKey(b *strings.Builder, kb key.Binding) {
	h := kb.Help()
	fmt.Fprintf(b, "%s=%s/%t;", h.Key, h.Desc, kb.Enabled())
}
