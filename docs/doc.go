// Package docs is the bridge's manual: the pages linked from the README,
// their pictures, and docs/screenshot, which takes the pictures from the
// real inbox.
//
// Its tests hold the README and the manual to the binary they describe:
// TestFlagTables compares every flag table with the --help of the
// subcommands it documents, and TestReadmeCommands runs every command in
// the README's shell blocks as written, in a fresh HOME; TestLinks checks
// that every link and anchor resolves and that the README links every page.
package docs
