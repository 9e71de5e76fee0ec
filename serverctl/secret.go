package serverctl

import (
	"regexp"
	"strings"
)

// secretOption matches option names (lower case, "-" read as "_", as the
// server reads them) whose values a report or a log must not show:
// passwords, SST credentials, key-management tokens, keys and key files'
// passphrases.
var secretOption = regexp.MustCompile(`password|passwd|secret|_auth|token|passphrase|filekey|key_id|encryption_key|key_management_key|_credentials`)

// SecretOption reports whether the option name (with or without leading
// dashes, loose- and any case) holds a secret: a password, SST credentials,
// a key-management token or key, a passphrase.
func SecretOption(name string) bool {
	return secretOption.MatchString(strings.ReplaceAll(strings.ToLower(strings.TrimLeft(name, "-")), "-", "_"))
}

// RedactOptions returns text (server options, one --name=value per line, as
// mysqld --print-defaults lists them) with the values of secret options
// (SecretOption) replaced by "<redacted>".
func RedactOptions(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		name, _, ok := strings.Cut(l, "=")
		if ok && SecretOption(name) {
			lines[i] = name + "=<redacted>"
		}
	}
	return strings.Join(lines, "\n")
}

// quotedSetting is a name=value in quotes as a server's error message shows
// it: "unknown variable 'file_key_management_filekey=SECRET'".
var quotedSetting = regexp.MustCompile(`'((?:--)?[A-Za-z0-9_.-]+)=([^']*)'`)

// redactLine replaces the values of secret settings quoted in a server's
// log line by "<redacted>".
func redactLine(l string) string {
	return quotedSetting.ReplaceAllStringFunc(l, func(q string) string {
		m := quotedSetting.FindStringSubmatch(q)
		if SecretOption(m[1]) {
			return "'" + m[1] + "=<redacted>'"
		}
		return q
	})
}
