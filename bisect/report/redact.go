package report

import (
	"regexp"
	"strings"
)

// secretOption matches option names (lower case, "-" read as "_", as the
// server reads them) whose values a shared report must not show: passwords,
// SST credentials, key-management tokens, keys and key files' passphrases.
var secretOption = regexp.MustCompile(`password|passwd|secret|_auth|token|passphrase|filekey|key_id|encryption_key|key_management_key|_credentials`)

// RedactOptions returns text (server options, one --name=value per line, as
// mysqld --print-defaults lists them) with the values of secret options
// (passwords, SST credentials, key-management tokens and keys, passphrases)
// replaced by "<redacted>". Every renderer of this package that shows server
// options applies it; a caller showing options elsewhere must too.
func RedactOptions(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		name, _, ok := strings.Cut(l, "=")
		if ok && secretOption.MatchString(strings.ReplaceAll(strings.ToLower(name), "-", "_")) {
			lines[i] = name + "=<redacted>"
		}
	}
	return strings.Join(lines, "\n")
}
