package spec

import (
	"testing"
)

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.slack.com/services/T0/B0/XXXX": "https://hooks.slack.com/…",
		"http://127.0.0.1:9000":                       "http://127.0.0.1:9000",
		"http://127.0.0.1:9000/":                      "http://127.0.0.1:9000",
		"https://a.example?key=1":                     "https://a.example/…",
		"https://a.example#x":                         "https://a.example/…",
		"https://user:pw@a.example:99999/x":           "https://a.example:99999/…",
		"https://us@er:p@w@a.example/x":               "https://a.example/…",
		"ftp://user:pw@a.example/x":                   "ftp://a.example/…",
		"user:pw@a.example/x":                         "a.example/…",
		"https://user:pw@a.example\\x":                "https://a.example/…",
		"https://a.example:99999999999/x y%zz":        "https://a.example:99999999999/…",
		"https://user:pa/ss@a.example/x":              "https://user/…",
		"https://user:pa#ss@a.example/x":              "https://user/…",
		"http://[::1]:9000/x":                         "http://[::1]:9000/…",
		"http://[::1]/x":                              "http://[::1]/…",
		"https://a.example:/x":                        "https://a.example/…",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
