package checker

import (
	"strings"
	"testing"
)

func TestOptionsValidate(t *testing.T) {
	// Validate names the field and value that cannot be used.
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("got %v, want nil", err)
	}
	o.NetHops = -1
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "NetHops -1") {
		t.Fatalf("got %v, want an error naming NetHops -1", err)
	}
}
