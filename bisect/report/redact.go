package report

import "github.com/perfbisect/perfbisect/serverctl"

// RedactOptions returns text (server options, one --name=value per line, as
// mysqld --print-defaults lists them) with the values of secret options
// (passwords, SST credentials, key-management tokens and keys, passphrases:
// serverctl.SecretOption) replaced by "<redacted>". Every renderer of this
// package that shows server options applies it; a caller showing options
// elsewhere must too.
func RedactOptions(text string) string { return serverctl.RedactOptions(text) }
