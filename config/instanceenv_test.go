package config

import (
	"strings"
	"testing"
)

// group_instance_id_env reads the static member id from the environment at
// Build (a StatefulSet's pod name); Validate checks only the field.
func TestGroupInstanceIDFromEnvironment(t *testing.T) {
	j, err := Parse([]byte("group: g\ngroup_instance_id_env: SIGNALBOX_TEST_POD\n" + minimal))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Validate(); err != nil {
		t.Fatalf("validate reads no environment, yet: %v", err)
	}
	t.Setenv("SIGNALBOX_TEST_POD", "")
	if _, err := j.Build(nil); err == nil || !strings.Contains(err.Error(),
		"group_instance_id_env: environment variable SIGNALBOX_TEST_POD is unset or empty") {
		t.Fatalf("Build without the variable: %v", err)
	}
	t.Setenv("SIGNALBOX_TEST_POD", "signalbox-2")
	p, err := j.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Kafka.GroupInstanceID != "signalbox-2" {
		t.Errorf("group instance id %q, want the variable's value", p.Kafka.GroupInstanceID)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"group_instance_id_env: POD_NAME\n", "group_instance_id_env: requires a group"},
		{"group: g\ngroup_instance_id: a\ngroup_instance_id_env: POD_NAME\n", "group_instance_id_env: set group_instance_id or group_instance_id_env, not both"},
		{"group: g\ngroup_instance_id_env: pod-name\n", "group_instance_id_env: must be the NAME of an environment variable"},
	} {
		got := strings.Join(problems(t, tc.yaml+minimal), "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%q: problems %q, want %q", tc.yaml, got, tc.want)
		}
	}
}
