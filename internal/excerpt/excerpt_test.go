package excerpt

import (
	"reflect"
	"testing"
)

func TestLines(t *testing.T) {
	log := "a\n\n [ERROR] one\nb\n[ERROR] two\n[ERROR] three\nc\n"
	if got := Lines(log, Contains("[ERROR]"), 2, 3); !reflect.DeepEqual(got, []string{"[ERROR] one", "[ERROR] two"}) {
		t.Errorf("matches: %q", got)
	}
	if got := Lines(log, Contains("fatal"), 2, 2); !reflect.DeepEqual(got, []string{"[ERROR] three", "c"}) {
		t.Errorf("tail: %q", got)
	}
	if got := Lines("", nil, 2, 2); len(got) != 0 {
		t.Errorf("empty log: %q", got)
	}
}
