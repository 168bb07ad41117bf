package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/bench/report"
	"github.com/signalbox/signalbox/internal/workload"
)

func TestParseShape(t *testing.T) {
	for in, want := range map[string]shape{
		"16KiB":                {Batch: 16 << 10, Brokers: 1},
		"1MiB":                 {Batch: 1 << 20, Brokers: 1},
		"1MiB+sasl":            {Batch: 1 << 20, SASL: true, Brokers: 1},
		"1MiB+3brokers":        {Batch: 1 << 20, Brokers: 3},
		" 64KiB+3brokers+sasl": {Batch: 64 << 10, SASL: true, Brokers: 3},
		"1MiB+tls":             {Batch: 1 << 20, TLS: true, Brokers: 1},
		"1MiB+tls+sasl":        {Batch: 1 << 20, SASL: true, TLS: true, Brokers: 1},
		"4096":                 {Batch: 4096, Brokers: 1},
	} {
		got, err := parseShape(in)
		if err != nil || got != want {
			t.Errorf("parseShape(%q) = %+v, %v; want %+v", in, got, err, want)
			continue
		}
		if back, err := parseShape(got.String()); err != nil || back != got {
			t.Errorf("%q: String %q reads back as %+v, %v", in, got.String(), back, err)
		}
	}
	for in, wantErr := range map[string]string{
		"":                       "want a positive size",
		"16kb":                   "want a positive size",
		"2MiB":                   "message.max.bytes",
		"512":                    "between 1KiB",
		"1MiB+ssl":               `"ssl": want sasl, tls or Nbrokers`,
		"1MiB+tls+tls":           "tls given twice",
		"1MiB+0brokers":          "broker count of at least 1",
		"1MiB+sasl+sasl":         "sasl given twice",
		"1MiB+2brokers+3brokers": "brokers given twice",
	} {
		if _, err := parseShape(in); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("parseShape(%q): error %v, want one saying %q", in, err, wantErr)
		}
	}
}

func TestParseFlagsShapes(t *testing.T) {
	c, err := parseFlags([]string{"-batch", "1MiB", "-sasl", "-broker-count", "3"})
	if err != nil || len(c.shapes) != 1 || c.shapes[0] != (shape{Batch: 1 << 20, SASL: true, Brokers: 3}) {
		t.Fatalf("-batch 1MiB -sasl -broker-count 3: %+v, %v", c.shapes, err)
	}
	c, err = parseFlags(nil)
	if err != nil || len(c.shapes) != 1 || c.shapes[0] != defaultShape || defaultShape.Batch != workload.BatchBytes {
		t.Fatalf("no shape flags: %+v, %v; want the 16 KiB, no-SASL, one-broker reference data", c.shapes, err)
	}
	c, err = parseFlags([]string{"-shapes", "16KiB,1MiB,1MiB+sasl,1MiB+3brokers"})
	want := []shape{{Batch: 16 << 10, Brokers: 1}, {Batch: 1 << 20, Brokers: 1}, {Batch: 1 << 20, SASL: true, Brokers: 1}, {Batch: 1 << 20, Brokers: 3}}
	if err != nil || len(c.shapes) != len(want) {
		t.Fatalf("-shapes: %+v, %v", c.shapes, err)
	}
	for i := range want {
		if c.shapes[i] != want[i] {
			t.Errorf("-shapes: shape %d is %+v, want %+v", i, c.shapes[i], want[i])
		}
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-shapes", "1MiB", "-sasl"}, "-shapes: not with -batch, -sasl or -broker-count"},
		{[]string{"-shapes", "1MiB", "-broker-count", "1"}, "-shapes: not with"},
		{[]string{"-shapes", "1MiB,3MiB"}, `-shapes: shape "3MiB"`},
		{[]string{"-batch", "lots"}, "-batch:"},
		{[]string{"-batch", "100"}, "-batch: 100 bytes"},
		{[]string{"-broker-count", "0"}, "-broker-count: must be at least 1"},
	} {
		if _, err := parseFlags(bad.args); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: error %v, want one saying %q", bad.args, err, bad.want)
		}
	}
}

// TestWriteJobSASL: with a SASL shape the job authenticates with
// SCRAM-SHA-256 as the broker's user, the password named by its variable,
// never written into the file; without, the job has no sasl block. With a
// TLS shape it speaks TLS, trusting the broker's certificate file.
func TestWriteJobSASL(t *testing.T) {
	w, err := workload.New(workloadOptions(240, false, 0))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, sh := range []shape{{Batch: 1 << 20, SASL: true, Brokers: 1}, {Batch: 1 << 20, Brokers: 1}, {Batch: 1 << 20, SASL: true, TLS: true, Brokers: 1}} {
		b := remote{addrs: []string{"127.0.0.1:9"}, shape: sh, ca: "/tmp/the-ca.pem"}
		path, err := writeJob(dir, sbField, b, w, config{delay: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		job, _ := os.ReadFile(path)
		wantBlock := "sasl:\n  mechanism: SCRAM-SHA-256\n  user: " + saslUser + "\n  password_env: " + passwordEnv + "\n"
		if strings.Contains(string(job), wantBlock) != sh.SASL || strings.Contains(string(job), saslPassword) {
			t.Errorf("%s: job file:\n%s", sh, job)
		}
		if strings.Contains(string(job), "tls:\n  enabled: true\n  ca_file: /tmp/the-ca.pem\n") != sh.TLS {
			t.Errorf("%s: job file:\n%s", sh, job)
		}
	}
}

// TestSectionRowsSayTheirShape: runs of different shapes land in one
// table, each row with its batch, auth and brokers, in the runs' order,
// and each signalbox row with its ratios to the JSONL copy of the same
// round (records/s, then peak RSS) and to franz-go.
func TestSectionRowsSayTheirShape(t *testing.T) {
	c, err := parseFlags([]string{"-shapes", "16KiB,1MiB+sasl+3brokers", "-rounds", "2"})
	if err != nil {
		t.Fatal(err)
	}
	runs := []sizeRun{
		{Size: 1000, Shape: c.shapes[0], Records: 2000, Samples: fakeRound(1, 1.0, 0.5), Profiles: nil},
		{Size: 1000, Shape: c.shapes[1], Records: 2000, Samples: fakeRound(1, 2.0, 0.5)},
	}
	runs[1].Samples = append(runs[1].Samples, fakeRound(2, 4.0, 0.25)...)
	res := resultsOf(c, []string{"-shapes", "16KiB,1MiB+sasl+3brokers"}, runs, time.Now())
	sec := section(c, res, runs)
	if n := strings.Count(sec, "| history | batch | auth | brokers | consumer |"); n != 1 {
		t.Fatalf("%d tables, want 1:\n%s", n, sec)
	}
	for _, want := range []string{
		"| 2K | 16KiB | none | 1 | " + labels[franz] + " | 0.00M (0.00–0.00) | – | 1.00 | 0.00 | 0.00 | 100 MiB | – |",
		"| 2K | 16KiB | none | 1 | " + labels[franzJSONL] + " | 0.00M (0.00–0.00) | 1.00 | 0.40 | 0.00 | 0.00 | 200 MiB | 1.00 |",
		"| 2K | 16KiB | none | 1 | " + labels[sbField] + " | 0.00M (0.00–0.00) | 1.25 | 0.50 | 0.00 | 0.00 | 60 MiB | 0.30 |",
		// rounds at 0.5 and 0.25 of franz-go, the copy at 0.4: medians of 1.25 and 0.625, of 0.5 and 0.25
		"| 2K | 1MiB | SCRAM-SHA-256 | 3 | " + labels[sbTimestamp] + " | 0.00M (0.00–0.00) | 0.94 | 0.38 | 0.00 | 0.00 | 50 MiB | 0.25 |",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("no row %q in:\n%s", want, sec)
		}
	}
	if strings.Index(sec, "| 16KiB | none | 1 | "+labels[sbField]) > strings.Index(sec, "| 1MiB | SCRAM-SHA-256 | 3 | "+labels[franz]) {
		t.Errorf("rows not in the runs' order:\n%s", sec)
	}
}

// fakeRound is one round's samples of 2000 records: franz-go in
// franzSeconds, the JSONL copy at 0.4 of its rate, each signalbox mode at
// ratio of it.
func fakeRound(round int, franzSeconds, ratio float64) []sample {
	return []sample{
		{Consumer: franz, Round: round, Records: 2000, Seconds: franzSeconds, MaxRSS: 100 << 20},
		{Consumer: franzJSONL, Round: round, Records: 2000, Seconds: franzSeconds / 0.4, MaxRSS: 200 << 20},
		{Consumer: sbTimestamp, Round: round, Records: 2000, Seconds: franzSeconds / ratio, MaxRSS: 50 << 20},
		{Consumer: sbField, Round: round, Records: 2000, Seconds: franzSeconds / ratio, MaxRSS: 60 << 20},
	}
}

// TestChartCallsFranzGoTheCeilingOnlyWhenNotOutrun: a chart whose data has
// a consumer faster than franz-go says franz-go is a reference, not a
// ceiling.
func TestChartCallsFranzGoTheCeilingOnlyWhenNotOutrun(t *testing.T) {
	res := results{Provenance: report.Provenance{Command: "go run ./bench/cmd/scaling", Cores: 2}, Rows: []row{
		{Records: 2000, Shape: defaultShape, Consumer: franz, Rate: 2e6, Ratio: 1},
		{Records: 2000, Shape: defaultShape, Consumer: sbField, Rate: 1e6, Ratio: 0.5},
	}}
	if s := string(chartOf(res)); !strings.Contains(s, "the ceiling") || strings.Contains(s, "not a ceiling") {
		t.Errorf("franz-go not outrun, the chart does not call it the ceiling:\n%s", s)
	}
	res.Rows[1].Ratio = 1.2
	if s := string(chartOf(res)); strings.Contains(s, "the ceiling") || !strings.Contains(s, "not a ceiling") {
		t.Errorf("franz-go outrun, the chart still calls it the ceiling:\n%s", s)
	}
}

// TestDocsChartIsDrawnFromItsResults: docs/scaling.svg is exactly the
// chart of docs/scaling.json, so it can neither drift from its data nor be
// edited by hand. Redraw it with go run ./bench/cmd/scaling -replot docs/scaling.json
func TestDocsChartIsDrawnFromItsResults(t *testing.T) {
	if err := report.CheckChart("../../../docs/scaling.json", chartOf); err != nil {
		t.Fatal(err)
	}
}
