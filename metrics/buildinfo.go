package metrics

import "github.com/prometheus/client_golang/prometheus"

// NewBuildInfo returns a collector of the constant
// signalbox_build_info{version,commit,goversion} 1, the usual way to put a
// build's identity beside its metrics (join on it in queries).
func NewBuildInfo(version, commit, goVersion string) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "signalbox_build_info",
		Help:        "Always 1; the labels name the running build: its version, VCS commit and Go version.",
		ConstLabels: prometheus.Labels{"version": version, "commit": commit, "goversion": goVersion},
	})
	g.Set(1)
	return g
}
