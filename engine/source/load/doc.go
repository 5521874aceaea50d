// Package load reads desired states: a rollcall.yaml document (Parse, Load)
// and a compose file with its .env and the files it pulls in (ParseCompose,
// LoadCompose), into engine/spec's types. Every problem is reported at once,
// as a spec.ErrorList sorted by position, each with its file:line:col and
// usually a hint. The rules of the document are listed on Parse; the compose
// keys rollcall honours, maps, ignores or refuses are ComposeKeys, from which
// the README's table is rendered.
//
// It is the only package that imports a YAML package or compose-go; spec,
// and so reconcile, link neither. It imports engine/spec and the plain data
// types of engine/docker only.
package load
