package kafka

import (
	"slices"

	"github.com/signalbox/signalbox/record"
)

// Topics returns Config.Topics and Config.TopicPatterns: what the source
// reads. It implements the root package's TopicLister, with which New
// refuses an input naming a topic the source never delivers.
func (s *Source) Topics() (topics, patterns []string) {
	return slices.Clone(s.cfg.Topics), slices.Clone(s.cfg.TopicPatterns)
}

// Group returns Config.Group ("" without one) and the member's current
// session: nil before its first join, between two sessions and after
// Close. A session may assign no partition (more members than tasks): the
// member has joined all the same. It implements the root package's
// GroupReader; it is called from the goroutine that calls Open, before
// Open too.
func (s *Source) Group() (string, *record.GroupMember) {
	if s.group == nil {
		return s.cfg.Group, nil
	}
	s.group.mu.Lock()
	sess := s.group.sess
	s.group.mu.Unlock()
	if sess == nil {
		return s.cfg.Group, nil
	}
	return s.cfg.Group, member(s.cfg, sess)
}
