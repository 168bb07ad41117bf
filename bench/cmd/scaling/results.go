package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/signalbox/signalbox/bench/chart"
	"github.com/signalbox/signalbox/bench/report"
)

// results is what -json writes and the chart is drawn from: one row per
// history size, shape and consumer, the samples behind them, and where
// they come from.
type results struct {
	Provenance report.Provenance `json:"provenance"`
	Rounds     int               `json:"rounds"`
	Took       time.Duration     `json:"took"`
	Rows       []row             `json:"rows"`
	Runs       []sizeRun         `json:"runs,omitempty"` // the samples; absent from transcribed results
}

// row is one consumer at one history size and shape, over the rounds.
type row struct {
	Records  int64   `json:"records"` // in the history, the reference topic included
	Shape    shape   `json:"shape"`
	Consumer string  `json:"consumer"`
	Rate     float64 `json:"records_per_s"` // median over the rounds
	RateMin  float64 `json:"records_per_s_min"`
	RateMax  float64 `json:"records_per_s_max"`
	Ratio    float64 `json:"ratio_to_franz_go"` // median of the rounds' ratios to franz-go on the same topics
	// PeerRatio and PeerRSS compare the consumer with the unordered JSONL
	// copy of the same topics in the same round (peerOf), as medians of
	// the rounds' ratios: records/s, and peak RSS. Zero when it has none.
	PeerRatio float64 `json:"ratio_to_jsonl_copy,omitempty"`
	PeerRSS   float64 `json:"peak_rss_to_jsonl_copy,omitempty"`
	CPU       float64 `json:"cpu_s_per_1m"`        // median, user + system
	BrokerCP  float64 `json:"broker_cpu_s_per_1m"` // median
	PeakRSS   int64   `json:"peak_rss_bytes"`      // largest over the rounds
}

// commandLine is the command that reproduces a run with args.
func commandLine(args []string) string {
	cmd := "go run ./bench/cmd/scaling"
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \"'") {
			a = strconv.Quote(a)
		}
		cmd += " " + a
	}
	return cmd
}

// resultsOf summarizes runs into rows, in the order of the runs and of a
// round.
func resultsOf(c config, args []string, runs []sizeRun, started time.Time) results {
	res := results{Provenance: report.Here(commandLine(args), started), Rounds: c.rounds, Took: time.Since(started), Runs: runs}
	for _, r := range runs {
		byConsumer := map[string][]sample{}
		byRound := map[string]map[int]sample{} // the references' samples: franz-go's and the JSONL copy's
		for _, s := range r.Samples {
			byConsumer[s.Consumer] = append(byConsumer[s.Consumer], s)
			if isRaw(s.Consumer) {
				if byRound[s.Consumer] == nil {
					byRound[s.Consumer] = map[int]sample{}
				}
				byRound[s.Consumer][s.Round] = s
			}
		}
		for _, name := range roundOf(c) {
			var rates, ratios, peer, peerRSS, cpu, bcpu []float64
			var rss int64
			for _, s := range byConsumer[name] {
				rates = append(rates, s.perSecond())
				cpu = append(cpu, s.CPU/float64(s.Records)*1e6)
				bcpu = append(bcpu, s.BrokerCPU/float64(s.Records)*1e6)
				ratios = append(ratios, s.perSecond()/byRound[ceilingOf(name)][s.Round].perSecond())
				if p, ok := byRound[peerOf(name)][s.Round]; ok {
					peer = append(peer, s.perSecond()/p.perSecond())
					peerRSS = append(peerRSS, float64(s.MaxRSS)/float64(p.MaxRSS))
				}
				rss = max(rss, s.MaxRSS)
			}
			if len(rates) == 0 {
				continue
			}
			rw := row{Records: r.Records, Shape: r.Shape, Consumer: name, Rate: median(rates),
				RateMin: slices.Min(rates), RateMax: slices.Max(rates), Ratio: median(ratios), CPU: median(cpu), BrokerCP: median(bcpu), PeakRSS: rss}
			if len(peer) > 0 {
				rw.PeerRatio, rw.PeerRSS = median(peer), median(peerRSS)
			}
			res.Rows = append(res.Rows, rw)
		}
	}
	return res
}

var consumerColors = map[string]string{
	franz: "#7f7f7f", franzJSONL: "#8c564b", sarama: "#c7c7c7", sbTimestamp: "#1f77b4", sbField: "#2ca02c", vsTimestamp: "#aec7e8", vsField: "#98df8a",
	franzAvro: "#bcbd22", sbAvroJSONL: "#ff7f0e", sbJSONKafka: "#9467bd", sbAvroKafka: "#d62728",
}

// sarama is the raw sarama consumer of results measured before franz-go
// became the project's only Kafka client; it is only drawn.
const sarama = "sarama"

// chartOf draws, for each shape, records/s and peak RSS against the
// history size, one bar per consumer.
func chartOf(res results) []byte {
	shapes := chart.Distinct(res.Rows, func(r row) shape { return r.Shape })
	sizes := chart.Distinct(res.Rows, func(r row) int64 { return r.Records })
	names := chart.Distinct(res.Rows, func(r row) string { return r.Consumer })
	slices.Sort(sizes)
	var labels []string
	for _, n := range sizes {
		labels = append(labels, count(n)+" records")
	}
	var panels []chart.Panel
	for _, sh := range shapes {
		rate := chart.Panel{Title: "records/s, " + shapeTitle(sh) + " (longer is faster)", Labels: labels}
		rss := chart.Panel{Title: "peak RSS, " + shapeTitle(sh) + " (shorter is leaner)", Labels: labels}
		for _, name := range names {
			rs := chart.Series{Name: name, Color: consumerColors[name], Format: "%.2fM/s"}
			ms := chart.Series{Name: name, Color: consumerColors[name], Format: "%.0f MiB"}
			seen := false
			for _, n := range sizes {
				var v row
				for _, r := range res.Rows {
					if r.Shape == sh && r.Records == n && r.Consumer == name {
						v, seen = r, true
					}
				}
				rs.Values = append(rs.Values, v.Rate/1e6)
				ms.Values = append(ms.Values, float64(v.PeakRSS)/(1<<20))
			}
			if seen {
				rate.Series = append(rate.Series, rs)
				rss.Series = append(rss.Series, ms)
			}
		}
		panels = append(panels, rate, rss)
	}
	title := "Ordered replay against franz-go's raw consumer, by history size and shape\n"
	if hasCopy(res) {
		title = "Ordered replay against an unordered franz-go copy into JSONL and franz-go's raw consumer, by history size and shape\n" +
			"franz-go-jsonl (the same reads into a JSONL file through signalbox's JSONL sink, unordered) is the peer without ordering\n"
	}
	title += "each consumer its own process, median of the rounds; franz-go (PollFetches, its defaults, no decoding, no ordering) is " + ceilingWord(res) + "\n" +
		strings.Join(res.Provenance.Caption(), "\n")
	return chart.SVG(title, panels...)
}

// ceilingWord is what franz-go's raw consumer is in res: the ceiling when
// no consumer outran it, else only a reference.
func ceilingWord(res results) string {
	for _, r := range res.Rows {
		if r.Ratio > 1 {
			return "a reference, not a ceiling: a consumer outran it here"
		}
	}
	return "the ceiling"
}

// hasCopy reports whether res has the unordered JSONL copy's rows.
func hasCopy(res results) bool {
	return slices.ContainsFunc(res.Rows, func(r row) bool { return r.Consumer == franzJSONL })
}

// shapeTitle describes a shape in words.
func shapeTitle(s shape) string {
	b := "broker"
	if s.Brokers != 1 {
		b = "brokers"
	}
	return fmt.Sprintf("%s batches, auth %s, %d %s", bytesLabel(s.Batch), s.authLabel(), s.Brokers, b)
}
