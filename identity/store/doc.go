// Package store keeps the identity document (package identity) in the
// bridge's state folder, and a running bridge in step with it.
//
//   - The document is one file, FileName, mode 0600 in a folder only its
//     owner may write (the token's folder). It holds verifiers, never a
//     credential. It is replaced whole, atomically (a temporary file in
//     the same folder, synced, renamed over it, the folder synced), under
//     an advisory lock, so two commands that change it at once never lose
//     a change and a reader never sees half a file.
//   - When each record was last used lives apart, in SeenName, written by
//     the running bridge: the bridge only ever reads the document, and a
//     lost last-use update costs nothing but a less recent time.
//   - A Watcher looks at the file's metadata every Interval (200 ms by
//     default) and hands the bridge a new identity.Directory when it
//     changed, so a revocation reaches the running bridge within a second
//     whatever wrote it. Polling works the same on every platform and
//     file system, as the policy file's watcher does (package
//     policy/policyfile). A missing file is the empty document: deleting
//     it revokes everyone. A file that does not load leaves the last good
//     directory in force and is reported once per change.
//
// The document is as sensitive as the token beside it: a verifier keys
// the credential proof (package proof), so whoever can read the file can
// prove as its operators at /join, though never present their
// credentials. The file is refused when group or others may read it.
package store
