package loopkit

// Signal sends on c, a channel of capacity one, without blocking: a
// signal already pending says the same.
func Signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// NewSignal is a channel for Signal: capacity one.
func NewSignal() chan struct{} { return make(chan struct{}, 1) }
