package console

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kgo"
)

// chromium finds Debian's headless browser; without it the browser test
// is skipped, unless SAMSA_REQUIRE_CHROMIUM=1 (as .ci/run sets) makes
// that a failure.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SAMSA_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("no chromium on PATH (Debian package chromium), and SAMSA_REQUIRE_CHROMIUM=1")
	}
	t.Skip("no chromium on PATH: install Debian's chromium to run the browser test")
	return ""
}

// TestConsoleInBrowser drives the console as a user would, in headless
// Chromium: create a topic, produce a message, browse it, see a group's
// lag, reset it. With SAMSA_CONSOLE_SCREENSHOTS=dir it saves a PNG of
// each page there (docs/console/ holds the ones in the docs).
func TestConsoleInBrowser(t *testing.T) {
	bin := chromium(t)
	e := start(t)
	shots := os.Getenv("SAMSA_CONSOLE_SCREENSHOTS")

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.Headless,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1280, 900))
	actx, cancel := chromedp.NewExecAllocator(e.ctx, opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()

	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	shot := func(name string) {
		t.Helper()
		if shots == "" {
			return
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	textOf := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return strings.Join(strings.Fields(s), " ")
	}

	// Create a topic with the form.
	run("create topic",
		chromedp.Navigate(e.url+"/topics"),
		chromedp.SendKeys(chromedp.CSS(`#create-topic input[name=name]`), "payments"),
		chromedp.SendKeys(chromedp.CSS(`#create-topic input[name=partitions]`), "3"),
		chromedp.Submit(chromedp.CSS(`#create-topic`)),
		chromedp.WaitVisible(chromedp.CSS(`#partition-table`)))
	if got := textOf(".flash"); got != "created topic payments" {
		t.Errorf("after create the page says %q", got)
	}
	shot("topic")
	details, err := e.adm.ListTopics(e.ctx, "payments")
	if err != nil || len(details["payments"].Partitions) != 3 {
		t.Fatalf("the broker has %+v (%v)", details["payments"], err)
	}

	// Produce a message with the browser's form, then browse it.
	run("produce",
		chromedp.Navigate(e.url+"/topics/payments/messages"),
		chromedp.SetValue(chromedp.CSS(`#produce select[name=partition]`), "2"),
		chromedp.SendKeys(chromedp.CSS(`#produce input[name=key]`), "order-42"),
		chromedp.SendKeys(chromedp.CSS(`#produce textarea[name=value]`), `{"amount":12.5,"currency":"EUR"}`),
		chromedp.Submit(chromedp.CSS(`#produce`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)))
	if got := textOf(".flash"); got != "produced to partition 2 at offset 0" {
		t.Fatalf("after produce the page says %q", got)
	}
	run("browse",
		chromedp.SetValue(chromedp.CSS(`#browse select[name=from]`), "beginning"),
		chromedp.Submit(chromedp.CSS(`#browse`)),
		chromedp.WaitVisible(chromedp.CSS(`#message-table`)))
	row := textOf(`#message-table tr:nth-child(2)`)
	if !strings.HasPrefix(row, "2 0 ") || !strings.Contains(row, "order-42") || !strings.Contains(row, `"currency": "EUR"`) {
		t.Errorf("the browsed message row is %q", row)
	}
	shot("messages")

	// A group that read nothing and committed offset 0: its lag is the record.
	cons, err := kgo.NewClient(kgo.SeedBrokers(e.broker), kgo.ConsumerGroup("settlement"), kgo.ConsumeTopics("payments"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	cons.CommitOffsetsSync(e.ctx, map[string]map[int32]kgo.EpochOffset{"payments": {2: {Epoch: -1, Offset: 0}}}, nil)
	cons.Close()
	run("groups",
		chromedp.Navigate(e.url+"/groups"),
		chromedp.WaitVisible(chromedp.CSS(`#group-table`)))
	if got := textOf(`#group-table tr:nth-child(2)`); !strings.HasPrefix(got, "settlement Empty") || !strings.HasSuffix(got, " 1") {
		t.Errorf("the group row is %q, want settlement, Empty, lag 1", got)
	}
	shot("groups")
	run("group",
		chromedp.Click(chromedp.CSS(`#group-table a`)),
		chromedp.WaitVisible(chromedp.CSS(`#lag-table`)))
	if got := textOf("#total-lag"); got != "1" {
		t.Errorf("total lag %q, want 1", got)
	}
	shot("group")
	run("reset",
		chromedp.SetValue(chromedp.CSS(`#reset select[name=to]`), "latest"),
		chromedp.Submit(chromedp.CSS(`#reset`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)))
	if got := textOf("#total-lag"); got != "0" {
		t.Errorf("total lag after the reset %q, want 0", got)
	}
	got, err := e.adm.FetchOffsets(e.ctx, "settlement")
	if o, ok := got.Lookup("payments", 2); err != nil || !ok || o.At != 1 {
		t.Errorf("committed after the reset: %+v %v, want offset 1", o, err)
	}
	run("overview", chromedp.Navigate(e.url+"/"), chromedp.WaitVisible(chromedp.CSS(`#broker-table`)))
	md, err := e.adm.Metadata(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf("#controller"); got != fmt.Sprint(md.Controller) {
		t.Errorf("the overview names controller %q, metadata says %d", got, md.Controller)
	}
	shot("overview")
}
