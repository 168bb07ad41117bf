package kafka

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// balance runs balancer b as a group leader does: members (id → topics)
// join with b's metadata, and the plan is parsed back from the sync
// assignments, member → topic → partitions.
func balance(t *testing.T, b kgo.GroupBalancer, members map[string][]string, topics map[string]int32) map[string]map[string][]int32 {
	t.Helper()
	var joined []kmsg.JoinGroupResponseMember
	for _, id := range slices.Sorted(maps.Keys(members)) {
		m := kmsg.NewJoinGroupResponseMember()
		m.MemberID = id
		m.ProtocolMetadata = b.JoinGroupMetadata(slices.Sorted(slices.Values(members[id])), nil, 1)
		joined = append(joined, m)
	}
	mb, _, err := b.MemberBalancer(joined)
	if err != nil {
		t.Fatal(err)
	}
	var into kgo.IntoSyncAssignment
	if eb, ok := mb.(kgo.GroupMemberBalancerOrError); ok {
		if into, err = eb.BalanceOrError(topics); err != nil {
			t.Fatal(err)
		}
	} else {
		into = mb.Balance(topics)
	}
	plan := map[string]map[string][]int32{}
	for _, a := range into.IntoSyncAssignment() {
		got, err := b.ParseSyncAssignment(a.MemberAssignment)
		if err != nil {
			t.Fatal(err)
		}
		plan[a.MemberID] = got
	}
	return plan
}

// The task balancer: every partition is assigned exactly once, partition p
// of every topic to one member (tasks stay whole, whatever the counts),
// only to members that subscribe to the topic, and with equal counts the
// plan is range's.
func TestTaskBalancer(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for i := range 500 {
		nMembers := 1 + rng.IntN(5)
		members := map[string][]string{}
		topicNames := []string{"a", "b", "c"}[:1+rng.IntN(3)]
		equal := rng.IntN(2) == 0
		n0 := int32(1 + rng.IntN(8))
		topics := map[string][]int32{}
		nums := map[string]int32{}
		for _, tn := range topicNames {
			n := n0
			if !equal {
				n = int32(1 + rng.IntN(8))
			}
			nums[tn] = n
			for p := range n {
				topics[tn] = append(topics[tn], p)
			}
			rng.Shuffle(len(topics[tn]), func(i, j int) { topics[tn][i], topics[tn][j] = topics[tn][j], topics[tn][i] })
		}
		partial := rng.IntN(4) == 0 // some member misses a topic (subscriptions differ while a pattern is discovered)
		for m := range nMembers {
			ts := slices.Clone(topicNames)
			if partial && m == 0 && len(ts) > 1 {
				ts = ts[1:]
			}
			members[fmt.Sprintf("m%d", m)] = ts
		}
		plan := balance(t, NewTaskBalancer(), members, nums)
		owner := map[string]map[int32]string{}
		for m, a := range plan {
			for tn, ps := range a {
				if !slices.Contains(members[m], tn) {
					t.Fatalf("case %d: %s got %s without subscribing", i, m, tn)
				}
				for _, p := range ps {
					if owner[tn] == nil {
						owner[tn] = map[int32]string{}
					}
					if o, dup := owner[tn][p]; dup {
						t.Fatalf("case %d: %s/%d assigned to %s and %s", i, tn, p, o, m)
					}
					owner[tn][p] = m
				}
			}
		}
		for tn, ps := range topics {
			subscribed := false
			for _, md := range members {
				subscribed = subscribed || slices.Contains(md, tn)
			}
			if subscribed && len(owner[tn]) != len(ps) {
				t.Fatalf("case %d: %s: %d of %d partitions assigned", i, tn, len(owner[tn]), len(ps))
			}
		}
		if !partial {
			for p := range int32(8) {
				var who []string
				for _, tn := range topicNames {
					if o, ok := owner[tn][p]; ok {
						who = append(who, o)
					}
				}
				if len(slices.Compact(slices.Sorted(slices.Values(who)))) > 1 {
					t.Fatalf("case %d: task %d split across %v (counts %v)", i, p, who, counts(topics))
				}
			}
		}
		if equal && !partial {
			want := balance(t, kgo.RangeBalancer(), members, nums)
			if !reflect.DeepEqual(normalize(plan), normalize(want)) {
				t.Fatalf("case %d: equal counts, plan %v differs from range's %v", i, plan, want)
			}
		}
	}
}

func counts(topics map[string][]int32) map[string]int {
	out := map[string]int{}
	for tn, ps := range topics {
		out[tn] = len(ps)
	}
	return out
}

func normalize(p map[string]map[string][]int32) map[string]map[string][]int32 {
	out := map[string]map[string][]int32{}
	for m, a := range p {
		for tn, ps := range a {
			if len(ps) == 0 {
				continue
			}
			if out[m] == nil {
				out[m] = map[string][]int32{}
			}
			out[m][tn] = slices.Sorted(slices.Values(ps))
		}
	}
	return out
}

// TestTaskBalancerGlobalTables: a table's topic (Config.Tables) goes whole
// to every subscribed member, and counts for no task: the inputs' tasks
// are planned as without it.
func TestTaskBalancerGlobalTables(t *testing.T) {
	members := map[string][]string{"m0": {"orders", "products"}, "m1": {"orders", "products"}, "m2": {"orders", "products"}}
	plan := balance(t, taskBalancer{global: []string{"products"}}, members, map[string]int32{"orders": 2, "products": 5})
	without := balance(t, NewTaskBalancer(), map[string][]string{"m0": {"orders"}, "m1": {"orders"}, "m2": {"orders"}}, map[string]int32{"orders": 2})
	for m := range members {
		if got := plan[m]["products"]; !reflect.DeepEqual(got, []int32{0, 1, 2, 3, 4}) {
			t.Errorf("%s: products %v, want every partition", m, got)
		}
		if got, want := plan[m]["orders"], without[m]["orders"]; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: orders %v, want %v (as without the table)", m, got, want)
		}
	}
}
