package metrics_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/metrics"
)

// A program that embeds signalbox registers one Collector per pipeline and
// serves the registry, e.g. with promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).
func ExampleNewCollector() {
	stats := func() signalbox.Stats { // in a program: pipeline.Stats
		return signalbox.Stats{In: 3, Out: 2, Watermark: 1_700_000_000_000}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(stats, nil))
	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		switch m := f.GetMetric()[0]; f.GetName() {
		case "signalbox_records_in_total", "signalbox_records_out_total":
			fmt.Println(f.GetName(), m.GetCounter().GetValue())
		case "signalbox_watermark_seconds":
			fmt.Println(f.GetName(), m.GetGauge().GetValue())
		}
	}
	// Output:
	// signalbox_records_in_total 3
	// signalbox_records_out_total 2
	// signalbox_watermark_seconds 1.7e+09
}
