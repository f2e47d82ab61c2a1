package checker

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// screenshotOut, when set, keeps a screenshot of the page
// TestHTMLInBrowser loads: go test ./checker -run TestHTMLInBrowser
// -screenshot /tmp/report.png
var screenshotOut = flag.String("screenshot", "", "write TestHTMLInBrowser's screenshot to this file")

// browserCeiling bounds one run of the browser: a ceiling against a hang,
// not a timing.
const browserCeiling = 2 * time.Minute

// findChromium returns Debian's chromium, or skips the test (fails it
// where CHRONOS_REQUIRE_BROWSER is set, as .ci/run sets it, so that CI
// cannot pass without the browser).
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium on PATH: install Debian's chromium (apt-get install chromium; .ci/run does) to load the report in a browser"
	if os.Getenv("CHRONOS_REQUIRE_BROWSER") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// chromium runs headless chromium on page with args, as the machine's
// documented flags say (no network of its own, a new profile), and
// returns what it printed on stdout.
func chromium(t *testing.T, bin, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), browserCeiling)
	defer cancel()
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--hide-scrollbars", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(append(flags, args...), "file://"+page)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// pageFacts is what the probe script reads off the laid-out page.
type pageFacts struct {
	ScrollWidth, InnerWidth      int
	ZoomHeight, WholeHeight      float64
	ZoomFocusPops, ZoomDue       int
	ZoomTicks, WholeTicks        []string
	ViolatedRows, ViolatedExcuse int
	Text                         string
}

// probe is added to a copy of the page under test: it measures the page
// as the browser laid it out and writes the facts into the DOM, which
// --dump-dom prints.
const probe = `<script>
(function () {
  const box = id => { const e = document.getElementById(id); return !e ? -1 : e.checkVisibility() ? e.getBoundingClientRect().height : 0; };
  const ticks = id => Array.from(document.querySelectorAll('#' + id + ' text.tick')).map(e => e.textContent);
  const rows = Array.from(document.querySelectorAll('td.violated')).map(td => td.parentElement);
  const facts = {
    ScrollWidth: document.documentElement.scrollWidth, InnerWidth: window.innerWidth,
    ZoomHeight: box('timeline-zoom'), WholeHeight: box('timeline-whole'),
    ZoomFocusPops: document.querySelectorAll('#timeline-zoom circle.pop.focus').length,
    ZoomDue: document.querySelectorAll('#timeline-zoom rect.due').length,
    ZoomTicks: ticks('timeline-zoom'), WholeTicks: ticks('timeline-whole'),
    ViolatedRows: rows.length, ViolatedExcuse: rows.filter(r => r.innerText.includes('excused')).length,
    Text: document.body.innerText,
  };
  const out = document.createElement('pre');
  out.id = 'facts';
  out.textContent = JSON.stringify(facts);
  document.body.appendChild(out);
})();
</script>
</body></html>`

// TestHTMLInBrowser proves, in headless Chromium, the report a developer
// debugs from: on a six-hour run, the timeline shown is zoomed on the
// first violation's timer (its pops drawn large, its due windows shaded,
// ticks spanning seconds, not hours), and the whole run is drawn but
// hidden until its section is opened; the violated pop's row says
// VIOLATED and no "excused"; the early delivery says it came before its
// due window; and a 500-character opaque value wraps, so the page never
// scrolls sideways.
func TestHTMLInBrowser(t *testing.T) {
	bin := findChromium(t)
	h := brokenHistory()
	long := strings.Repeat("a-long-opaque-value-", 25)
	h.Ops[0].Spec.Opaque = long
	for i := range h.Pops {
		h.Pops[i].Opaque = long
	}
	// A second timer hours later makes the run as long as a liveness phase.
	h.Ops = append(h.Ops, write(3, Create, 7, "late", 3*time.Hour, time.Hour, 0, 10*ms, OK))
	h.Pops = append(h.Pops, pops("n2", "late", 7, 1, 0)...)
	for i := range h.Pops {
		if h.Pops[i].Opaque == "late" {
			h.Pops[i].At += 3 * time.Hour
		}
	}
	h.End, h.LivenessFrom = 6*time.Hour, 5*time.Hour
	vs := Check(h)
	if len(vs) == 0 || vs[0].Guarantee != "G1" {
		t.Fatalf("the history's first violation is %v, want G1: the test proves nothing", vs)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, h, vs, header); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	probed := strings.Replace(b.String(), "</body></html>", probe, 1)
	if err := os.WriteFile(page, []byte(probed), 0o600); err != nil {
		t.Fatal(err)
	}
	dom := chromium(t, bin, page, "--window-size=1280,1000", "--dump-dom")
	m := regexp.MustCompile(`(?s)<pre id="facts">(.*?)</pre>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe wrote no facts: the page's script did not run\n%.3000s", dom)
	}
	var f pageFacts
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &f); err != nil {
		t.Fatalf("facts %s: %v", m[1], err)
	}

	if f.ZoomHeight <= 0 || f.ZoomFocusPops == 0 || f.ZoomDue == 0 {
		t.Errorf("zoomed timeline: height %v, %d pops of the timer drawn large, %d due windows; want it shown with both", f.ZoomHeight, f.ZoomFocusPops, f.ZoomDue)
	}
	if len(f.ZoomTicks) == 0 || strings.Contains(f.ZoomTicks[len(f.ZoomTicks)-1], "h") {
		t.Errorf("zoomed timeline's ticks %v, want seconds around the violation, not the run's hours", f.ZoomTicks)
	}
	if f.WholeHeight != 0 || len(f.WholeTicks) == 0 || f.WholeTicks[len(f.WholeTicks)-1] != "6h0m0s" {
		t.Errorf("whole-run timeline: height %v, ticks %v; want it drawn to 6h0m0s but folded away", f.WholeHeight, f.WholeTicks)
	}
	if !strings.Contains(f.Text, "Whole run, 0 to 6h0m0s") {
		t.Errorf("no 'Whole run' section to open in the page's text")
	}
	if f.ViolatedRows == 0 || f.ViolatedExcuse != 0 {
		t.Errorf("%d violated pop rows, %d of them saying excused; want at least one, none excused", f.ViolatedRows, f.ViolatedExcuse)
	}
	for _, want := range []string{"VIOLATED G1", "early (before its due window opens)", "FAILED"} {
		if !strings.Contains(f.Text, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	if f.ScrollWidth > f.InnerWidth {
		t.Errorf("the page is %d pixels wide in a %d-pixel window: a long line does not wrap", f.ScrollWidth, f.InnerWidth)
	}

	if *screenshotOut != "" {
		plain := filepath.Join(t.TempDir(), "plain.html")
		if err := os.WriteFile(plain, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := filepath.Abs(*screenshotOut)
		if err != nil {
			t.Fatal(err)
		}
		chromium(t, bin, plain, "--window-size=1280,3200", "--screenshot="+out)
	}
}
