package catchup

import (
	"sort"
	"time"
)

// Progress is the replay progress of one input, measured in offsets against
// the start-up snapshot.
type Progress struct {
	Input      string
	Partitions int
	CaughtUp   int     // partitions whose replay is done
	Total      int64   // offsets to replay from the first position seen
	Remaining  int64   // offsets still to read to reach the snapshot
	Fraction   float64 // 1 − Remaining/Total; 1 when nothing was to replay
	Rate       float64 // offsets per second, smoothed
	// ETA is the estimated time to finish the replay; negative when unknown
	// (no rate yet).
	ETA time.Duration
}

// Progress returns per-input replay progress, sorted by input.
func (t *Tracker) Progress() []Progress {
	by := map[string]*Progress{}
	for id, p := range t.parts {
		pr := by[id.Input]
		if pr == nil {
			pr = &Progress{Input: id.Input}
			by[id.Input] = pr
		}
		pr.Partitions++
		pr.Total += max(0, p.SnapshotEnd-p.first)
		if p.replayDone {
			pr.CaughtUp++
			continue
		}
		pr.Remaining += max(0, p.SnapshotEnd-p.Position)
		pr.Rate += p.rate
	}
	out := make([]Progress, 0, len(by))
	for _, pr := range by {
		pr.Fraction = 1
		if pr.Total > 0 {
			pr.Fraction = 1 - float64(pr.Remaining)/float64(pr.Total)
		}
		switch {
		case pr.Remaining == 0:
			pr.ETA = 0
		case pr.Rate > 0:
			pr.ETA = time.Duration(float64(pr.Remaining) / pr.Rate * float64(time.Second))
		default:
			pr.ETA = -1
		}
		out = append(out, *pr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Input < out[j].Input })
	return out
}
