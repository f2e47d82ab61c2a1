package sim

import (
	"strings"
	"testing"
)

const stepsHead = "seed 1\nnodes 3\nend 1m\nat 1s create t1 via n1 interval=10s repeat-for=30s rf=3\n"

// TestStepCheckGrammar proves the parser rejects malformed step
// expectations and role names with a line-numbered error.
func TestStepCheckGrammar(t *testing.T) {
	bad := map[string]string{
		"at 5s expect popped":                       "want: expect popped",
		"at 5s expect seen t1":                      "want: expect popped",
		"at 5s expect popped t1 seq=0":              "seq must be >= 1",
		"at 5s expect popped t1 count=-1":           "count must be >= 0",
		"at 5s expect popped t1 on=n1":              "unexpected",
		"at 5s expect popped t1 seq=1 seq=2":        "given twice",
		"at 5s expect held t1":                      "needs on=",
		"at 5s expect held t1 nowhere on=n1":        "nowhere takes nothing else",
		"at 5s expect held t1 on=n1 none seq=2":     "none takes no seq",
		"at 5s expect held t1 on=c1":                "not a node",
		"at 5s expect popped t1 by=t1.D":            "only 3 nodes",
		"at 5s crash t1.a":                          "bad role",
		"at 5s crash t1.AB":                         "bad role",
		"at 5s partition t1.B | t1.D":               "only 3 nodes",
		"at 5s partition t1.B | t1.Z":               "bad role",
		"at 5s expect held t1 on=n1 by=n2":          "unexpected",
		"at 5s expect popped t1 seq=2 count=1 none": "unexpected",
	}
	for line, want := range bad {
		_, err := ParseScenario(strings.NewReader(stepsHead + line + "\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got error %v, want one containing %q", line, err, want)
		}
	}
	p, err := ParseScenario(strings.NewReader(stepsHead +
		"at 5s partition t1.B | t1.C n1\nat 9s expect popped t1 seq=1 by=t1.A count=1\nat 9s expect held t1 on=t1.C seq=1\nat 9s expect held t1 nowhere\n"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteScenario(&b, p); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"partition t1.B | t1.C n1", "expect popped t1 seq=1 by=t1.A count=1", "expect held t1 on=t1.C seq=1", "expect held t1 nowhere"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("written scenario lacks %q:\n%s", want, b.String())
		}
	}
}

// TestStepChecksFail proves unmet step expectations and roles of a timer
// whose ID is not known yet fail the run.
func TestStepChecksFail(t *testing.T) {
	run := func(lines string) *Result {
		t.Helper()
		p, err := ParseScenario(strings.NewReader(stepsHead + lines))
		if err != nil {
			t.Fatal(err)
		}
		return Run(p, Options{})
	}
	res := run("at 500ms crash t1.A\n")
	if !res.Failed() || len(res.ScenarioErrors) != 1 || !strings.Contains(res.ScenarioErrors[0], "not known yet") {
		t.Errorf("role before the create returned: failed=%v errors=%v", res.Failed(), res.ScenarioErrors)
	}
	res = run("at 13s expect popped t1 seq=1 by=t1.B\nat 14s expect held t1 nowhere\nat 14s expect held t1 on=t1.A none\n")
	if !res.Failed() || len(res.Unmet) != 3 {
		t.Errorf("wrong expectations: failed=%v unmet=%v", res.Failed(), res.Unmet)
	}
	res = run("at 13s expect popped t1 seq=1 by=t1.A count=1\nat 14s expect held t1 on=t1.B seq=1\nat 14s expect popped t1 count=0\n")
	if res.Failed() {
		t.Errorf("right expectations failed: unmet=%v", res.Unmet)
	}
}
