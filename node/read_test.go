package node

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timerRead is the client's answer to GET /timers/<id> (docs/api.md).
type timerRead struct {
	ID       string          `json:"id"`
	Timer    json.RawMessage `json:"timer"`
	Seq      uint32          `json:"sequence-number"`
	NextPop  string          `json:"next-pop"`
	Replicas []struct {
		Node    string `json:"node"`
		State   string `json:"state"`
		Version string `json:"version"`
		Seq     uint32 `json:"sequence-number"`
		NextPop string `json:"next-pop"`
	} `json:"replicas"`
}

func readTimer(t *testing.T, c *cluster, via, wid string) (Response, timerRead) {
	t.Helper()
	r := c.client(via, "GET", "/timers/"+wid, "")
	var got timerRead
	if r.Status == 200 {
		require.NoError(t, json.Unmarshal(r.Body, &got), "%s", r.Body)
	}
	return r, got
}

// states returns each node's reported state, as "node=state".
func (r timerRead) states() []string {
	var out []string
	for _, rep := range r.Replicas {
		out = append(out, rep.Node+"="+rep.State)
	}
	slices.Sort(out)
	return out
}

// TestReadThroughAnyNode reads a repeating timer through a node that does
// not hold it: its definition as created, its progress after a pop, the
// replicas that hold it; then 404 once deleted.
func TestReadThroughAnyNode(t *testing.T) {
	c := newCluster(t, three...)
	def := `{"timing":{"interval":10,"repeat-for":30},"callback":{"http":{"uri":"` + cb + `","opaque":"o"}},"reliability":{"replication-factor":2},"statistics":{"tag-info":[{"type":"a","count":2}]}}`
	wid := strings.TrimPrefix(c.client(three[0], "POST", "/timers", def).Header.Get(wire.HeaderLocation), "/timers/")
	holders := c.holders(wid)
	require.Len(t, holders, 2)
	via := three[0]
	for _, a := range three {
		if !slices.Contains(holders, a) {
			via = a
		}
	}

	r, got := readTimer(t, c, via, wid)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, wid, got.ID)
	spec, repl, err := wire.Parse(got.Timer)
	require.NoError(t, err)
	assert.Nil(t, repl)
	assert.Equal(t, wire.Timer{Interval: 10 * time.Second, RepeatFor: 30 * time.Second, URI: cb, Opaque: "o", ReplicationFactor: 2, Tags: []wire.Tag{{Type: "a", Count: 2}}}, spec)
	assert.Equal(t, uint32(0), got.Seq)
	assert.Equal(t, epoch.Add(10*time.Second).UTC().Format("2006-01-02T15:04:05.000Z"), got.NextPop)
	assert.Equal(t, []string{holders[0] + "=live", holders[1] + "=live"}, got.states())

	require.Len(t, c.advance(11*time.Second, 200), 1)
	_, got = readTimer(t, c, via, wid)
	assert.Equal(t, uint32(1), got.Seq, "one pop made")
	assert.Equal(t, epoch.Add(20*time.Second).UTC().Format("2006-01-02T15:04:05.000Z"), got.NextPop)

	require.Equal(t, 200, c.client(holders[0], "DELETE", "/timers/"+wid, "").Status)
	r, _ = readTimer(t, c, via, wid)
	assert.Equal(t, 404, r.Status, "a deleted timer")
}

// TestReadReportsEachReplica proves a read answers while a replica is down
// (reporting it unreachable), reports a replica that missed an update by
// its older version, answers the newest definition, and is 503 only when
// no node that may hold the timer answers.
func TestReadReportsEachReplica(t *testing.T) {
	c := newCluster(t, three...)
	def := func(opaque string) string {
		return `{"timing":{"interval":10},"callback":{"http":{"uri":"` + cb + `","opaque":"` + opaque + `"}},"reliability":{"replication-factor":3}}`
	}
	wid := strings.TrimPrefix(c.client(three[0], "POST", "/timers", def("v1")).Header.Get(wire.HeaderLocation), "/timers/")
	c.down[three[2]] = true
	require.Equal(t, 200, c.client(three[0], "PUT", "/timers/"+wid, def("v2")).Status)

	r, got := readTimer(t, c, three[1], wid)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	spec, _, err := wire.Parse(got.Timer)
	require.NoError(t, err)
	assert.Equal(t, "v2", spec.Opaque)
	assert.Equal(t, []string{three[0] + "=live", three[1] + "=live", three[2] + "=unreachable"}, got.states())

	delete(c.down, three[2])
	_, got = readTimer(t, c, three[1], wid)
	versions := map[string]string{}
	for _, rep := range got.Replicas {
		versions[rep.Node] = rep.Version
	}
	assert.NotEqual(t, versions[three[0]], versions[three[2]], "the replica that missed the update reports its older version")
	spec, _, err = wire.Parse(got.Timer)
	require.NoError(t, err)
	assert.Equal(t, "v2", spec.Opaque, "the newest definition, whatever order the replicas answer in")
	assert.Equal(t, versions[three[0]], versions[three[1]])

}

// TestReadUnavailable proves a read is 503 when no node that may hold the
// timer answers, and 404 when those that answer hold nothing.
func TestReadUnavailable(t *testing.T) {
	c := newCluster(t, three...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":10},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":1}}`)
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	holder := c.holders(wid)[0]
	via := three[0]
	if via == holder {
		via = three[1]
	}
	c.down[holder] = true
	r, _ = readTimer(t, c, via, wid)
	assert.Equal(t, 503, r.Status, "%s", r.Body)
	assert.NotEmpty(t, r.Header.Get(wire.HeaderRetryAfter))

	delete(c.down, holder)
	c.nodes[holder].store.Remove(mustID(t, wid))
	r, _ = readTimer(t, c, via, wid)
	assert.Equal(t, 404, r.Status, "%s", r.Body)
}

// TestReadRefusals proves the read's bad inputs are answered with reasons,
// and the internal read needs the cluster key.
func TestReadRefusals(t *testing.T) {
	c := keyed(t, three...)
	assert.Equal(t, 400, c.client(three[0], "GET", "/timers/zz", "").Status)
	assert.Equal(t, 400, c.client(three[0], "GET", "/timers/00000000000000010000000000000001?x=1", "").Status)
	r := c.client(three[0], "GET", "/timers/00000000000000010000000000000001?"+readQuery, "")
	assert.Equal(t, 403, r.Status, "an unsigned internal read")
	r = c.client(three[0], "GET", "/timers/00000000000000010000000000000001", "")
	assert.Equal(t, 404, r.Status, "signed reads between the nodes answer; none holds it: %s", r.Body)
	r = c.client(three[0], "POST", "/timers/00000000000000010000000000000001", "")
	assert.Equal(t, 405, r.Status)
	assert.Equal(t, "GET, PUT, DELETE", r.Header.Get("Allow"))
}
