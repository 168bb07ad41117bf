package kafka

import (
	"maps"
	"slices"

	"github.com/IBM/sarama"
)

// TaskBalanceStrategyName is the group protocol name of the task strategy.
const TaskBalanceStrategyName = "signalbox-task"

// taskStrategy assigns co-partitioned tasks, not partitions: partition p of
// every topic goes to the member that owns task p. Tasks are divided among
// the members sorted by id in contiguous ranges, with the same arithmetic
// as sarama's range strategy (the first members get one more), so with equal partition counts both give the
// same plan. With unequal counts (a topic that grew) range splits a task
// across members; this strategy keeps it whole, and a task beyond a topic's
// count simply lacks that topic. A member that does not subscribe to a
// topic gets none of it: that partition goes to the first subscriber.
type taskStrategy struct{}

// NewTaskBalanceStrategy returns the strategy group mode prefers (range is
// the fallback, so members of older versions can still join).
func NewTaskBalanceStrategy() sarama.BalanceStrategy { return taskStrategy{} }

func (taskStrategy) Name() string { return TaskBalanceStrategyName }

func (taskStrategy) Plan(members map[string]sarama.ConsumerGroupMemberMetadata, topics map[string][]int32) (sarama.BalanceStrategyPlan, error) {
	ids := make([]string, 0, len(members))
	for id := range members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	seen := map[int32]bool{}
	for _, ps := range topics {
		for _, p := range ps {
			seen[p] = true
		}
	}
	tasks := slices.Sorted(maps.Keys(seen))
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
	plan := make(sarama.BalanceStrategyPlan, len(ids))
	for topic, ps := range topics {
		var subscribed []string
		for _, id := range ids {
			if slices.Contains(members[id].Topics, topic) {
				subscribed = append(subscribed, id)
			}
		}
		if len(subscribed) == 0 {
			continue
		}
		for _, p := range slices.Sorted(slices.Values(ps)) {
			id := owner[p]
			if !slices.Contains(subscribed, id) {
				id = subscribed[0]
			}
			plan.Add(id, topic, p)
		}
	}
	return plan, nil
}

func (taskStrategy) AssignmentData(string, map[string][]int32, int32) ([]byte, error) {
	return nil, nil
}
