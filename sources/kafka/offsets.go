package kafka

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"

	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Timestamps understood by ListOffsets.
const (
	listLatest   = -1 // the end: LSO under read_committed, else high-water mark
	listEarliest = -2 // the log start offset
)

// listOffsets asks each partition leader for the offset at ts, under the
// source's isolation level (ListOffsets v2+ carries it; some clients'
// helpers leave it out). Partitions are grouped per leader: one request
// per broker, through the client's connection to it.
func (s *Source) listOffsets(tps []record.TopicPartition, ts int64) (map[record.TopicPartition]int64, error) {
	byLeader := make(map[int32][]record.TopicPartition)
	var ids []int32
	for _, tp := range tps {
		id, err := s.leader(tp)
		if err != nil {
			return nil, err
		}
		if _, ok := byLeader[id]; !ok {
			ids = append(ids, id)
		}
		byLeader[id] = append(byLeader[id], tp)
	}
	out := make(map[record.TopicPartition]int64, len(tps))
	for _, id := range ids {
		group := byLeader[id]
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		if s.cfg.readCommitted() {
			req.IsolationLevel = 1
		}
		topicAt := make(map[string]int, 1)
		for _, tp := range group {
			i := topicSlot(&req.Topics, topicAt, tp.Topic, func(name string) kmsg.ListOffsetsRequestTopic {
				t := kmsg.NewListOffsetsRequestTopic()
				t.Topic = name
				return t
			})
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Partition, p.Timestamp, p.CurrentLeaderEpoch = tp.Partition, ts, -1
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
		}
		s.waitFor("ListOffsets from broker %d at %s", id, s.brokerAddr(id))
		kresp, err := s.cl.Broker(int(id)).Request(s.ctx, req)
		if err != nil {
			s.refreshMetadata()
			return nil, fmt.Errorf("kafka: list offsets from broker %d: %w", id, err)
		}
		resp := kresp.(*kmsg.ListOffsetsResponse)
		got := make(map[record.TopicPartition]int64, len(group))
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				tp := record.TopicPartition{Topic: t.Topic, Partition: p.Partition}
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					s.refreshMetadata()
					return nil, fmt.Errorf("kafka: list offsets %s/%d: %w", tp.Topic, tp.Partition, err)
				}
				got[tp] = p.Offset
			}
		}
		for _, tp := range group {
			o, ok := got[tp]
			if !ok {
				return nil, fmt.Errorf("kafka: list offsets %s/%d: no answer", tp.Topic, tp.Partition)
			}
			out[tp] = o
		}
	}
	return out, nil
}

// committed returns the group's committed offsets for tps (-1: none), and
// the checkpoints their metadata holds, for snapshot.
func (s *Source) committed(tps []record.TopicPartition) (map[record.TopicPartition]int64, map[record.TopicPartition]record.PartitionCheckpoint, error) {
	coord, err := s.coordinator()
	if err != nil {
		return nil, nil, err
	}
	s.waitFor("OffsetFetch for group %s from its coordinator, broker %d at %s", s.cfg.Group, coord.NodeID, coordAddr(coord))
	resp, err := kadm.NewClient(s.cl).FetchOffsets(s.ctx, s.cfg.Group)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("kafka: offset fetch for group %s: %w", s.cfg.Group, err)
	}
	out := make(map[record.TopicPartition]int64, len(tps))
	cps := make(map[record.TopicPartition]record.PartitionCheckpoint)
	for _, tp := range tps {
		out[tp] = -1
		if o, ok := resp.Lookup(tp.Topic, tp.Partition); ok && o.Err == nil && o.At >= 0 {
			out[tp] = o.At
			if pc, ok := sources.DecodeCheckpoint(tp, o.At, o.Metadata); ok {
				cps[tp] = pc
			}
		}
	}
	return out, cps, nil
}

// coordinator finds the group's coordinator.
func (s *Source) coordinator() (kadm.FindCoordinatorResponse, error) {
	s.waitFor("FindCoordinator for group %s from brokers %s", s.cfg.Group, s.brokerList())
	c, ok := kadm.NewClient(s.cl).FindGroupCoordinators(s.ctx, s.cfg.Group)[s.cfg.Group]
	err := c.Err
	if !ok {
		err = errors.New("no answer")
	}
	if err != nil {
		return c, fmt.Errorf("kafka: coordinator of group %s: %w", s.cfg.Group, err)
	}
	return c, nil
}

func coordAddr(c kadm.FindCoordinatorResponse) string {
	return net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port)))
}

// snapshot takes the end offsets of tps and resolves their start positions
// (StartAt offsets win until the first assignment is made, then committed
// offsets, then Start). A committed offset's checkpoint in cps goes with it.
// It reads no record.
func (s *Source) snapshot(tps []record.TopicPartition, committed map[record.TopicPartition]int64, cps map[record.TopicPartition]record.PartitionCheckpoint) ([]record.PartitionInfo, error) {
	ends, err := s.listOffsets(tps, listLatest)
	if err != nil {
		return nil, err
	}
	var starts map[record.TopicPartition]int64
	switch {
	case s.cfg.Start == StartEarliest:
		starts, err = s.listOffsets(tps, listEarliest)
	case s.timed:
		starts, err = s.listOffsets(s.unpositioned(tps, committed), s.startTime)
	}
	if err != nil {
		return nil, err
	}
	tableStarts, err := s.tableStarts(tps, starts)
	if err != nil {
		return nil, err
	}
	infos := make([]record.PartitionInfo, 0, len(tps))
	for _, tp := range tps {
		info := record.PartitionInfo{TopicPartition: tp, End: ends[tp], Start: ends[tp]}
		if o, ok := starts[tp]; ok && o >= 0 { // -1: no record at or after the start time
			info.Start = min(o, ends[tp])
		}
		if c, ok := committed[tp]; ok && c >= 0 {
			info.Start = c
			if pc, ok := cps[tp]; ok && pc.Low == c {
				info.Checkpoint = &pc
			}
		}
		if o, ok := s.startAt[tp]; ok && o >= 0 {
			info.Start, info.Checkpoint = o, nil // a sink's checkpoint outranks the group
		}
		if o, ok := tableStarts[tp]; ok && o >= 0 {
			info.Start, info.Checkpoint = min(o, ends[tp]), nil // a table is read whole (Config.Tables)
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// unpositioned are the partitions of tps that start where Start says: those
// without a committed or StartAt offset.
func (s *Source) unpositioned(tps []record.TopicPartition, committed map[record.TopicPartition]int64) []record.TopicPartition {
	var out []record.TopicPartition
	for _, tp := range tps {
		if c, ok := committed[tp]; ok && c >= 0 {
			continue
		}
		if o, ok := s.startAt[tp]; ok && o >= 0 {
			continue
		}
		out = append(out, tp)
	}
	return out
}

// tableStarts are the earliest offsets of the partitions of tps that are
// tables' (Config.Tables); earliest, when Start is, holds them already.
func (s *Source) tableStarts(tps []record.TopicPartition, earliest map[record.TopicPartition]int64) (map[record.TopicPartition]int64, error) {
	var tables []record.TopicPartition
	for _, tp := range tps {
		if slices.Contains(s.cfg.Tables, tp.Topic) {
			tables = append(tables, tp)
		}
	}
	if len(tables) == 0 {
		return nil, nil
	}
	if s.cfg.Start != StartEarliest {
		return s.listOffsets(tables, listEarliest)
	}
	out := make(map[record.TopicPartition]int64, len(tables))
	for _, tp := range tables {
		if o, ok := earliest[tp]; ok {
			out[tp] = o
		}
	}
	return out, nil
}
