package node

import (
	"slices"
	"strings"
	"testing"

	"github.com/chronos-timer/chronos/wire"
)

// TestPutAfterDeleteCreatesWithItsOwnFactor: a deleted timer is created
// again by a PUT, whatever its tombstone says: without a factor it gets
// the default, through the node that holds the tombstone as through one
// that holds nothing, and a factor other than the deleted timer's is no
// change of factor.
func TestPutAfterDeleteCreatesWithItsOwnFactor(t *testing.T) {
	for _, body := range []string{
		`{"timing":{"interval":60},"callback":{"http":{"uri":"` + cb + `"}}}`,
		`{"timing":{"interval":60},"callback":{"http":{"uri":"` + cb + `"}},"reliability":{"replication-factor":3}}`,
	} {
		c := newCluster(t, three...)
		r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":60},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":1}}`)
		wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
		id := mustID(t, wid)
		primary := NewRing(three).Replicas(id, 1)[0]
		if r := c.client(primary, "DELETE", "/timers/"+wid, ""); r.Status != 200 {
			t.Fatalf("DELETE: %d %s", r.Status, r.Body)
		}
		r = c.client(primary, "PUT", "/timers/"+wid, body)
		if r.Status != 200 {
			t.Fatalf("PUT after the delete, through the tombstone's holder: %d %s", r.Status, r.Body)
		}
		want := 2
		if strings.Contains(body, "replication-factor") {
			want = 3
		}
		if got := c.holders(wid); !slices.Equal(got, sorted(NewRing(three).Replicas(id, want))) {
			t.Errorf("%s: held by %v, want the %d replicas of the factor it gives or the default", body, got, want)
		}
	}
}
