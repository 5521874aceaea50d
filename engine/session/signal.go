package session

// signal sends on a buffered-1 channel without blocking: a pending signal
// already says the same.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
