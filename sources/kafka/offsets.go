package kafka

import (
	"errors"
	"fmt"

	"github.com/IBM/sarama"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/sources"
)

// Timestamps understood by ListOffsets.
const (
	listLatest   = -1 // the end: LSO under read_committed, else high-water mark
	listEarliest = -2 // the log start offset
)

// listOffsets asks each partition leader for the offset at ts, under the
// source's isolation level (sarama's Client.GetOffset ignores isolation, so
// the OffsetRequest is built here). Partitions are grouped per leader: one
// request per broker.
func (s *Source) listOffsets(tps []record.TopicPartition, ts int64) (map[record.TopicPartition]int64, error) {
	byLeader := make(map[*sarama.Broker][]record.TopicPartition)
	for _, tp := range tps {
		b, err := s.leader(tp)
		if err != nil {
			return nil, err
		}
		byLeader[b] = append(byLeader[b], tp)
	}
	out := make(map[record.TopicPartition]int64, len(tps))
	for b, group := range byLeader {
		req := &sarama.OffsetRequest{Version: 5}
		if s.cfg.readCommitted() {
			req.IsolationLevel = sarama.ReadCommitted
		}
		for _, tp := range group {
			req.AddBlock(tp.Topic, tp.Partition, ts, 1)
		}
		s.waitFor("ListOffsets from broker %d at %s", b.ID(), b.Addr())
		resp, err := b.GetAvailableOffsets(req)
		if err != nil {
			s.refreshMetadata()
			return nil, fmt.Errorf("kafka: list offsets from broker %d: %w", b.ID(), err)
		}
		for _, tp := range group {
			blk := resp.GetBlock(tp.Topic, tp.Partition)
			if blk == nil {
				return nil, fmt.Errorf("kafka: list offsets %s/%d: no answer", tp.Topic, tp.Partition)
			}
			if !errors.Is(blk.Err, sarama.ErrNoError) {
				s.refreshMetadata()
				return nil, fmt.Errorf("kafka: list offsets %s/%d: %w", tp.Topic, tp.Partition, blk.Err)
			}
			out[tp] = blk.Offset
		}
	}
	return out, nil
}

// leader returns the partition's current leader, refreshing metadata once
// when sarama does not know it.
func (s *Source) leader(tp record.TopicPartition) (*sarama.Broker, error) {
	b, err := s.client.Leader(tp.Topic, tp.Partition)
	if err != nil {
		if rerr := s.client.RefreshMetadata(tp.Topic); rerr != nil {
			return nil, fmt.Errorf("kafka: leader of %s/%d: %w", tp.Topic, tp.Partition, err)
		}
		b, err = s.client.Leader(tp.Topic, tp.Partition)
		if err != nil {
			return nil, fmt.Errorf("kafka: leader of %s/%d: %w", tp.Topic, tp.Partition, err)
		}
	}
	return b, nil
}

func (s *Source) refreshMetadata() {
	if err := s.client.RefreshMetadata(s.cfg.Topics...); err != nil {
		s.log.Warn("metadata refresh failed")
	}
}

// committed returns the group's committed offsets for tps (-1: none), and
// the checkpoints their metadata holds, for snapshot.
func (s *Source) committed(tps []record.TopicPartition) (map[record.TopicPartition]int64, map[record.TopicPartition]record.PartitionCheckpoint, error) {
	s.waitFor("FindCoordinator for group %s from brokers %s", s.cfg.Group, s.brokerList())
	coord, err := s.client.Coordinator(s.cfg.Group)
	if err != nil {
		return nil, nil, fmt.Errorf("kafka: coordinator of group %s: %w", s.cfg.Group, err)
	}
	s.waitFor("OffsetFetch for group %s from its coordinator, broker %d at %s", s.cfg.Group, coord.ID(), coord.Addr())
	req := &sarama.OffsetFetchRequest{Version: 5, ConsumerGroup: s.cfg.Group}
	for _, tp := range tps {
		req.AddPartition(tp.Topic, tp.Partition)
	}
	resp, err := coord.FetchOffset(req)
	if err != nil {
		return nil, nil, fmt.Errorf("kafka: offset fetch for group %s: %w", s.cfg.Group, err)
	}
	if !errors.Is(resp.Err, sarama.ErrNoError) {
		return nil, nil, fmt.Errorf("kafka: offset fetch for group %s: %w", s.cfg.Group, resp.Err)
	}
	out := make(map[record.TopicPartition]int64, len(tps))
	cps := make(map[record.TopicPartition]record.PartitionCheckpoint)
	for _, tp := range tps {
		out[tp] = -1
		if blk := resp.GetBlock(tp.Topic, tp.Partition); blk != nil && errors.Is(blk.Err, sarama.ErrNoError) {
			out[tp] = blk.Offset
			if pc, ok := sources.DecodeCheckpoint(tp, blk.Offset, blk.Metadata); ok {
				cps[tp] = pc
			}
		}
	}
	return out, cps, nil
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
