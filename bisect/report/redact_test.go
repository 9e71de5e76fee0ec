package report

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

// The HTML page never shows a secret option's value, whoever assembled the
// page.
func TestWriteHTMLRedactsOptions(t *testing.T) {
	p := Page{Title: "t", Options: []OptionsText{{Commit: "abc", Text: "--port=3306\n--wsrep-sst-auth=sstuser:hunter2"}}}
	var b strings.Builder
	if err := WriteHTML(&b, p); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "hunter2") || !strings.Contains(b.String(), "--wsrep-sst-auth=&lt;redacted&gt;") {
		t.Errorf("the page shows the secret, or not the redacted option")
	}
	if p.Options[0].Text != "--port=3306\n--wsrep-sst-auth=sstuser:hunter2" {
		t.Errorf("the caller's page was changed")
	}
}
