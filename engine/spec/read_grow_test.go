package spec

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFileCountsWhatTheFileGives: ReadFile bounds what a file gives, not
// what its size said at the open, as a file that grows while it is read
// gives more than that. The file here is a process's /proc/PID/environ: a
// regular file whose size reads 0, which gives exactly the environment the
// process was started with. One byte over the limit is refused; exactly
// the limit is read whole.
func TestReadFileCountsWhatTheFileGives(t *testing.T) {
	// The kernel takes an environment of up to a quarter of the stack limit.
	var stack syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_STACK, &stack); err != nil {
		t.Fatal(err)
	}
	want := stack
	want.Cur = max(want.Cur, 64<<20)
	if want.Max != ^uint64(0) && want.Max < want.Cur {
		t.Skipf("the stack limit cannot be raised to 64 MiB (hard limit %d): no process can be given a 4 MiB environment", want.Max)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_STACK, &want); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_STACK, &stack) })

	for _, size := range []int{MaxDocumentBytes + 1, MaxDocumentBytes} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			cmd := exec.Command("sleep", "60")
			cmd.Env = environOf(size)
			if err := cmd.Start(); err != nil {
				t.Fatalf("start a process with a %d-byte environment: %v", size, err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			path := fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid)
			// Until the new program has started (its exec ended, its
			// loader ran), the file may give nothing: wait until it gives
			// the whole environment.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
				b, err := os.ReadFile(path)
				if err == nil && len(b) == size {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s gives %d bytes, %v; want the %d of the environment", path, len(b), err, size)
				}
			}
			if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() || st.Size() > MaxDocumentBytes {
				t.Fatalf("%s: %v, %v: want a regular file whose size says less than the limit", path, st, err)
			}
			data, err := ReadFile(path)
			switch {
			case size > MaxDocumentBytes && (err == nil || !strings.Contains(err.Error(), "larger than the 4 MiB limit")):
				t.Errorf("a file giving %d bytes: read %d, %v; want it refused", size, len(data), err)
			case size <= MaxDocumentBytes && (err != nil || len(data) != size):
				t.Errorf("a file giving %d bytes: read %d, %v; want all of it", size, len(data), err)
			}
		})
	}
}

// environOf is an environment that takes exactly size bytes in
// /proc/PID/environ ("K=V" and a NUL each), in strings the kernel accepts
// (at most 128 KiB each).
func environOf(size int) []string {
	const chunk = 100_000
	var env []string
	for i := 0; size > 0; i++ {
		n := min(size, chunk)
		if size-n > 0 && size-n < 16 {
			n -= 16 // no string too short for its name
		}
		name := fmt.Sprintf("G%05d=", i)
		env = append(env, name+strings.Repeat("x", n-len(name)-1))
		size -= n
	}
	return env
}
