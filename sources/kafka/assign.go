package kafka

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TaskBalancerName is the group protocol name of the task balancer.
const TaskBalancerName = "signalbox-task"

// taskBalancer assigns co-partitioned tasks, not partitions: partition p of
// every topic goes to the member that owns task p. Tasks are divided among
// the members sorted by id in contiguous ranges, with the same arithmetic
// as the range balancer (the first members get one more), so with equal
// partition counts both give the same plan. With unequal counts (a topic
// that grew) range splits a task across members; this balancer keeps it
// whole, and a task beyond a topic's count simply lacks that topic. A
// member that does not subscribe to a topic gets none of it: that
// partition goes to the first subscriber. It is eager: every rebalance
// revokes everything first.
//
// The topics in global (kafka.Config.Tables) are no task's: every
// subscribed member gets every partition of them.
type taskBalancer struct{ global []string }

// NewTaskBalancer returns the balancer group mode prefers (range is the
// fallback, so members of older versions can still join).
func NewTaskBalancer() kgo.GroupBalancer { return taskBalancer{} }

func (taskBalancer) ProtocolName() string { return TaskBalancerName }

func (taskBalancer) IsCooperative() bool { return false }

// JoinGroupMetadata is the standard consumer protocol's subscription: the
// topics, nothing else.
func (taskBalancer) JoinGroupMetadata(topics []string, _ map[string][]int32, _ int32) []byte {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = topics
	return meta.AppendTo(nil)
}

func (taskBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	return kgo.ParseConsumerSyncAssignment(assignment)
}

func (b taskBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	cb, err := kgo.NewConsumerBalancer(b, members)
	return cb, cb.MemberTopics(), err
}

// Balance plans the assignment of topics (partition counts) to the members.
func (b taskBalancer) Balance(cb *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	subs := make(map[string][]string) // member → topics
	var ids []string
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		ids = append(ids, m.MemberID)
		subs[m.MemberID] = meta.Topics
	})
	byID := make(map[string]*kmsg.JoinGroupResponseMember)
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, _ *kmsg.ConsumerMemberMetadata) {
		byID[m.MemberID] = m
	})
	plan := cb.NewPlan()
	for id, ps := range planTasks(ids, subs, topics, b.global) {
		for topic, parts := range ps {
			for _, p := range parts {
				plan.AddPartition(byID[id], topic, p)
			}
		}
	}
	return plan
}

// planTasks is the task plan: member id → topic → partitions, for members
// subscribed to subs[id] and topics with the given partition counts; a
// topic in global goes whole to every member subscribed to it.
func planTasks(ids []string, subs map[string][]string, topics map[string]int32, global []string) map[string]map[string][]int32 {
	ids = slices.Sorted(slices.Values(ids))
	tasks := make([]int32, 0)
	var most int32
	for t, n := range topics {
		if isSubscribed(subs, t) && !slices.Contains(global, t) {
			most = max(most, n)
		}
	}
	for p := range most {
		tasks = append(tasks, p)
	}
	owner := make(map[int32]string, len(tasks))
	per, extra := len(tasks)/max(len(ids), 1), len(tasks)%max(len(ids), 1)
	for i, id := range ids {
		lo := i*per + min(extra, i)
		hi := lo + per
		if i < extra {
			hi++
		}
		for _, p := range tasks[lo:hi] {
			owner[p] = id
		}
	}
	plan := make(map[string]map[string][]int32, len(ids))
	for _, topic := range slices.Sorted(maps.Keys(topics)) {
		var subscribed []string
		for _, id := range ids {
			if slices.Contains(subs[id], topic) {
				subscribed = append(subscribed, id)
			}
		}
		if len(subscribed) == 0 {
			continue
		}
		if slices.Contains(global, topic) {
			for _, id := range subscribed {
				if plan[id] == nil {
					plan[id] = make(map[string][]int32)
				}
				for p := range topics[topic] {
					plan[id][topic] = append(plan[id][topic], p)
				}
			}
			continue
		}
		for p := range topics[topic] {
			id := owner[p]
			if !slices.Contains(subscribed, id) {
				id = subscribed[0]
			}
			if plan[id] == nil {
				plan[id] = make(map[string][]int32)
			}
			plan[id][topic] = append(plan[id][topic], p)
		}
	}
	return plan
}

func isSubscribed(subs map[string][]string, topic string) bool {
	for _, ts := range subs {
		if slices.Contains(ts, topic) {
			return true
		}
	}
	return false
}

// rangeBalancer is franz-go's range balancer with a subscription that
// carries no generation, as the task balancer's: a static member that
// restarts offers the same metadata it joined with, so the coordinator
// hands its assignment back without a rebalance (KIP-345).
type rangeBalancer struct{ kgo.GroupBalancer }

func newRangeBalancer() kgo.GroupBalancer { return rangeBalancer{kgo.RangeBalancer()} }

func (rangeBalancer) JoinGroupMetadata(topics []string, current map[string][]int32, generation int32) []byte {
	return taskBalancer{}.JoinGroupMetadata(topics, current, generation)
}
