package load

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/spec"
)

// notifyDoc is a one-workload document with notify written as given, from
// line 2 column 9 ("notify: " is 8 characters).
func notifyDoc(notify string) string {
	return "workloads: {web: {image: app}}\nnotify: " + notify + "\n"
}

func TestParseNotifyAccepts(t *testing.T) {
	tests := []struct {
		rule string
		src  string
		want []spec.Webhook
	}{
		{"absent is none", "workloads: {}\n", nil},
		{"null is none", notifyDoc("~"), nil},
		{"an empty list is none", notifyDoc("[]"), nil},
		{"a plain URL", notifyDoc(`["https://hooks.example/rollcall"]`),
			[]spec.Webhook{{URL: "https://hooks.example/rollcall", Line: 2, Col: 10}}},
		{"http, a port and a query are kept", notifyDoc(`["http://127.0.0.1:9000/hook?key=abc"]`),
			[]spec.Webhook{{URL: "http://127.0.0.1:9000/hook?key=abc", Line: 2, Col: 10}}},
		{"a mapping with a token file", notifyDoc("[{url: \"https://a.example/h\", token_file: /etc/rollcall/hook.token}]"),
			[]spec.Webhook{{URL: "https://a.example/h", TokenFile: "/etc/rollcall/hook.token", Line: 2, Col: 16}}},
		{"a mapping without a token", notifyDoc(`[{url: "https://a.example/h"}]`),
			[]spec.Webhook{{URL: "https://a.example/h", Line: 2, Col: 16}}},
		{"file order is kept, forms mixed", "workloads: {}\nnotify:\n  - https://b.example/x\n  - {url: \"https://a.example/y\", token_file: t}\n",
			[]spec.Webhook{{URL: "https://b.example/x", Line: 3, Col: 5}, {URL: "https://a.example/y", TokenFile: "t", Line: 4, Col: 11}}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			d := mustParse(t, tt.src)
			if !reflect.DeepEqual(d.Notify, tt.want) {
				t.Errorf("notify %+v, want %+v", d.Notify, tt.want)
			}
		})
	}
}

func TestParseNotifyErrors(t *testing.T) {
	tests := []struct {
		rule string
		src  string
		pos  string
		msg  string
		hint string
	}{
		{"notify is a list", notifyDoc(`"https://a.example/h"`), "2:9", "notify: expected a list, got string", ""},
		{"notify is not a mapping", notifyDoc(`{url: "https://a.example/h"}`), "2:9", "notify: expected a list, got a mapping", ""},
		{"an entry is a URL or a mapping", notifyDoc(`[[x]]`), "2:10", "notify[0]: expected a URL or a mapping, got a list", "token_file"},
		{"a URL is a string", notifyDoc(`[42]`), "2:10", "notify[0]: expected a string, got integer 42", ""},
		{"a null entry is no URL", notifyDoc(`[~]`), "2:10", "notify[0]: expected a string, got null", ""},
		{"a URL has a scheme", notifyDoc(`["hooks.example/rollcall"]`), "2:10", `notify[0]: "hooks.example/…" is not an http or https URL`, "https://hooks.example"},
		{"only http and https", notifyDoc(`["ftp://hooks.example/x"]`), "2:10", "is not an http or https URL", ""},
		{"file URLs are refused", notifyDoc(`["file:///etc/passwd"]`), "2:10", "is not an http or https URL", ""},
		{"a URL names a host", notifyDoc(`["https:///x"]`), "2:10", "names no host", ""},
		{"a URL parses", notifyDoc(`["https://a.example:99999999999/x y%zz"]`), "2:10", "invalid URL", ""},
		{"a port is in range", notifyDoc(`["http://a.example:99999/h"]`), "2:10", `notify[0]: "http://a.example:99999/…" has no valid port`, "1 to 65535"},
		{"port 0 is no port", notifyDoc(`["http://a.example:0/h"]`), "2:10", "has no valid port", ""},
		{"no user in the URL", notifyDoc(`["https://bot:s3cret@a.example/h"]`), "2:10", "carries a user", "token_file"},
		{"no fragment", notifyDoc(`["https://a.example/h#x"]`), "2:10", "has a fragment", ""},
		{"a URL is listed once", notifyDoc(`["https://a.example/h", {url: "https://a.example/h"}]`), "2:39",
			`notify[1]: "https://a.example/…" is listed twice (first at line 2)`, "once"},
		{"a mapping needs url", notifyDoc(`[{token_file: /t}]`), "2:10", "notify[0]: no url", "https://"},
		{"unknown keys suggest the closest", notifyDoc(`[{url: "https://a.example/h", tokenfile: /t}]`), "2:39", "notify[0].tokenfile: unknown key", `did you mean "token_file"`},
		{"url in a mapping is checked", notifyDoc(`[{url: "ws://a.example/h"}]`), "2:16", `notify[0].url: "ws://a.example/…" is not an http or https URL`, ""},
		{"token_file is a string", notifyDoc(`[{url: "https://a.example/h", token_file: [a]}]`), "2:51", "notify[0].token_file: expected a string, got a list", ""},
		{"token_file is not empty", notifyDoc(`[{url: "https://a.example/h", token_file: " "}]`), "2:51", "notify[0].token_file: empty path", "leave token_file out"},
		{"the key is spelled notify", "workloads: {}\nnotfy: []\n", "2:1", "notfy: unknown key", `did you mean "notify"`},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) { wantParseError(t, tt.src, tt.pos, tt.msg, tt.hint) })
	}
}

// TestNotifyIsNoPartOfAnySpecHash: a webhook added, changed or removed
// recreates nothing.
func TestNotifyIsNoPartOfAnySpecHash(t *testing.T) {
	base := "workloads: {web: {image: app, replicas: 2}}\n"
	without := mustParse(t, base)
	with := mustParse(t, base+"notify: [\"https://a.example/h\"]\n")
	if a, b := spec.Hash(without.Workloads["web"], "sha256:1"), spec.Hash(with.Workloads["web"], "sha256:1"); a != b {
		t.Errorf("spec hash %s with notify, %s without", b, a)
	}
}

// TestForHostKeepsNotify: each host's session posts to the same webhooks.
func TestForHostKeepsNotify(t *testing.T) {
	d := mustParse(t, fleetDoc("  a: {context: aa}\n", "")+"notify: [\"https://a.example/h\"]\n")
	h, ok := d.ForHost("a")
	if !ok || !reflect.DeepEqual(h.Notify, d.Notify) || len(h.Notify) != 1 {
		t.Errorf("ForHost notify %+v, want %+v", h.Notify, d.Notify)
	}
}

// TestNotifyErrorsShowNoSecret (issue 26, row 13): a broken notify: entry
// whose URL carries a password and a secret path (a bad port, a
// duplicate, ftp://, a fragment, a user) is refused at its line:col, and
// the error shows the scheme and host only, as the notify-failed lines
// do: never the password, the user or the path.
func TestNotifyErrorsShowNoSecret(t *testing.T) {
	const u = "b0tUser:PASSW0RD@hooks.example"
	tests := []struct {
		form, notify, pos, msg string
	}{
		{"a bad port", `["https://` + u + `:99999/services/SECRET"]`, "2:10", "has no valid port"},
		{"a port that is no number", `["https://` + u + `:http/services/SECRET"]`, "2:10", "invalid URL"},
		{"a duplicate", `["https://hooks.example/services/SECRET", {url: "https://hooks.example/services/SECRET"}]`, "2:57", "is listed twice"},
		{"ftp://", `["ftp://` + u + `/services/SECRET"]`, "2:10", "is not an http or https URL"},
		{"a fragment", `["https://hooks.example/services/SECRET#fr4gm3nt"]`, "2:10", "has a fragment"},
		{"a fragment after a user", `[{url: "https://` + u + `/services/SECRET#fr4gm3nt"}]`, "2:16", "carries a user"},
		{"no scheme", `["` + u + `/services/SECRET"]`, "2:10", "is not an http or https URL"},
		{"a backslash", `["https://` + u + `\\services\\SECRET"]`, "2:10", ""},
	}
	for _, tt := range tests {
		t.Run(tt.form, func(t *testing.T) {
			src := notifyDoc(tt.notify)
			_, err := Parse("test.yaml", []byte(src))
			if err == nil {
				t.Fatalf("no error for %s", tt.notify)
			}
			if tt.msg != "" {
				wantParseError(t, src, tt.pos, tt.msg, "")
			}
			for _, secret := range []string{"PASSW0RD", "b0tUser", "SECRET", "services", "fr4gm3nt"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows %q:\n%v", secret, err)
				}
			}
			if !strings.Contains(err.Error(), "hooks.example") {
				t.Errorf("the error does not name the host:\n%v", err)
			}
		})
	}
}
