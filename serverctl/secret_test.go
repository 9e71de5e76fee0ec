package serverctl

import (
	"strings"
	"testing"
)

func TestRedactOptions(t *testing.T) {
	secret := []string{"--loose-wsrep-sst-auth=sstuser:hunter2", "--wsrep_sst_auth=u:p", "--loose-file-key-management-filekey=FILEKEY",
		"--loose-hashicorp-key-management-token=T", "--loose-ssl-passphrase=P", "--loose-key-management-key=K",
		"--innodb-encryption-key=E", "--Master-Password=x", "--loose-aws-key-management-secret-key=S", "--password=--x"}
	plain := []string{"--key-buffer-size=16M", "--ssl-key=/etc/k.pem", "--innodb-buffer-pool-size=256M", "--skip-grant-tables", "--port=3306"}
	out := RedactOptions(strings.Join(append(append([]string{}, secret...), plain...), "\n"))
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		name, val, _ := strings.Cut(l, "=")
		if i < len(secret) {
			if val != "<redacted>" || !strings.HasPrefix(secret[i], name+"=") {
				t.Errorf("%q became %q, want its value redacted", secret[i], l)
			}
		} else if l != plain[i-len(secret)] {
			t.Errorf("%q became %q, want it unchanged", plain[i-len(secret)], l)
		}
	}
}

// A server that refuses a secret option quotes it, value and all, in its
// error log: the value never reaches an error, a report or the store.
func TestRedactLine(t *testing.T) {
	for in, want := range map[string]string{
		"[ERROR] /usr/sbin/mariadbd: unknown variable 'file_key_management_filekey=SECRET'": "[ERROR] /usr/sbin/mariadbd: unknown variable 'file_key_management_filekey=<redacted>'",
		"[ERROR] mariadbd: unknown option '--wsrep-sst-auth=u:p'":                           "[ERROR] mariadbd: unknown option '--wsrep-sst-auth=<redacted>'",
		"[ERROR] unknown variable 'innodb_buffer_pool_sizes=6M'":                            "[ERROR] unknown variable 'innodb_buffer_pool_sizes=6M'",
	} {
		if got := redactLine(in); got != want {
			t.Errorf("redactLine(%q) = %q, want %q", in, got, want)
		}
	}
}
