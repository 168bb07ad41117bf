package config

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/signalbox/signalbox/sources/kafka"
)

// docDefault returns the default column of field's row in docs/config.md.
func docDefault(t *testing.T, field string) string {
	t.Helper()
	md, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?m)^\\| `" + regexp.QuoteMeta(field) + "` \\| `?([^`|]*)`? \\|").FindSubmatch(md)
	if m == nil {
		t.Fatalf("docs/config.md has no row for %s", field)
	}
	return strings.TrimSpace(string(m[1]))
}

// discovery_interval: the documented default is the source's; 0 disables.
func TestDiscoveryIntervalDefault(t *testing.T) {
	doc, err := time.ParseDuration(docDefault(t, "discovery_interval"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		yaml string
		want time.Duration
	}{
		{"", doc},
		{"discovery_interval: 250ms\n", 250 * time.Millisecond},
		{"discovery_interval: 0s\n", -1},
	} {
		p := mustBuild(t, tc.yaml+minimal)
		k := p.Kafka
		k.EnsureDefaults()
		if k.DiscoveryInterval != tc.want {
			t.Errorf("%q: interval %v, want %v", tc.yaml, k.DiscoveryInterval, tc.want)
		}
	}
	if doc != kafka.DefaultDiscoveryInterval {
		t.Errorf("docs/config.md says %v, the source defaults to %v", doc, kafka.DefaultDiscoveryInterval)
	}
}

// topic_pattern goes to the source's patterns and the pipeline's inputs;
// group_instance_id to the source; both are checked.
func TestTopicPatternAndInstanceID(t *testing.T) {
	p := mustBuild(t, "group: g\ngroup_instance_id: pod-1\n"+minimal+"  - topic_pattern: 'ev-.*'\n")
	if !slices.Equal(p.Kafka.TopicPatterns, []string{"ev-.*"}) || !slices.Equal(p.Kafka.Topics, []string{"a"}) {
		t.Errorf("topics %q, patterns %q", p.Kafka.Topics, p.Kafka.TopicPatterns)
	}
	if p.Kafka.GroupInstanceID != "pod-1" {
		t.Errorf("group instance id %q", p.Kafka.GroupInstanceID)
	}
	got := strings.Join(problems(t, "group_instance_id: x\ndiscovery_interval: soon\n"+minimal+
		"  - topic_pattern: '('\n  - topic: b\n    topic_pattern: b\n"), "\n")
	for _, want := range []string{"group_instance_id: requires a group", "discovery_interval:", "inputs[1].topic_pattern:", "inputs[2].topic_pattern: set topic or topic_pattern"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems do not include %q:\n%s", want, got)
		}
	}
	// Each problem once, under the job file's own field names.
	if strings.Count(got, "group_instance_id:") != 1 || strings.Contains(got, "topic_patterns") {
		t.Errorf("problems repeated or named after the source's fields:\n%s", got)
	}
}

func mustBuild(t *testing.T, doc string) *Plan {
	t.Helper()
	p, err := build(t, doc)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
