package report

import (
	"strings"
	"testing"
)

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
