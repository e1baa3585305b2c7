// Package builtin owns the builtin tools source ("builtin"): the sandbox
// tools (bash, read_file, write_file, edit_file, ls, glob, grep; group
// "sandbox") and present_files (group "builtin"), with their argument
// schemas, which are part of the API (DESIGN §6).
//
// Every tool works on the calling thread's sandbox: its first call in a
// run acquires it lazily through the sandbox manager (leased to this
// worker), and all side effects go through the sandbox provider — never
// through the server's own filesystem or environment. Outputs are bounded
// per call with a visible truncation marker. present_files accepts only
// paths under /mnt/user-data/outputs that exist, all or nothing, and
// records them through the agent service (artifact list + event).
//
// It never decides who may call a tool (policy and the loop's gates do)
// and never imports the composition root; agent must never import it.
package builtin
