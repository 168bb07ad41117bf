package workload

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/signalbox/signalbox"
	"github.com/signalbox/signalbox/embedded"
)

// ReferenceTopic is the topic of reference data with no event time.
const ReferenceTopic = "items"

// TimeField is the JSON field that carries the event time (unix ms).
const TimeField = "ts"

// Options scale the scenario. The zero value of every field takes the
// default given in its comment (see EnsureDefaults).
type Options struct {
	Seed                int64         // default 1
	Topics              int           // event topics; default 13
	Partitions          int           // per topic, the reference topic too; default 3
	RecordsPerPartition int           // history records per event partition; default 5000
	Items               int           // distinct keys; default 600
	HistorySpan         time.Duration // event-time span of the history; default a week (168h)
	Disorder            time.Duration // bound D on in-partition disorder; default 100ms
	SlowTopics          int           // topics slower to connect than an idle timeout; default 1
	SlowFor             time.Duration // how long their fetches are delayed; default 2s
	LiveFor             time.Duration // live traffic duration; 0: none (default 0)
	LiveRate            int           // live records/s over all event partitions; default 2000
	ProducerDelayed     int           // producer-delayed live records; default 0
	ProducerDelayBy     time.Duration // how old their event time is when produced; default 5s
	// ValueBytes pads every event value with a "pad" field to about this
	// many bytes; 0 (the default): no padding (about 50 bytes).
	ValueBytes int
	// AvroTopics is how many event topics (the first ones) carry Avro
	// values in the Confluent wire format instead of JSON, with the schema
	// evolving from AvroSchemaV1 to AvroSchemaV2 halfway through each
	// partition's history (live traffic: v2). Default 0.
	AvroTopics int
	// AvroTwins also produces every event record of the history, Avro
	// encoded as AvroTopics', into the twin topic AvroTopic(i) of event
	// topic i: the same history in both formats. Default false.
	AvroTwins bool
	// BatchBytes bounds one produced record batch of the history;
	// default BatchBytes (16 KiB).
	BatchBytes int
}

// EnsureDefaults fills every unset field with its default.
func (o *Options) EnsureDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	def(&o.Topics, 13)
	def(&o.Partitions, 3)
	def(&o.RecordsPerPartition, 5000)
	def(&o.Items, 600)
	def(&o.LiveRate, 2000)
	def(&o.BatchBytes, BatchBytes)
	defD(&o.HistorySpan, 7*24*time.Hour)
	defD(&o.Disorder, 100*time.Millisecond)
	defD(&o.SlowFor, 2*time.Second)
	defD(&o.ProducerDelayBy, 5*time.Second)
	if o.SlowTopics < 0 {
		o.SlowTopics = 0
	} else if o.SlowTopics == 0 {
		o.SlowTopics = 1
	}
	o.SlowTopics = min(o.SlowTopics, o.Topics)
	o.AvroTopics = min(o.AvroTopics, o.Topics)
}

// Validate reports every invalid field.
func (o *Options) Validate() error {
	var errs []error
	if o.LiveFor < 0 {
		errs = append(errs, errors.New("workload: live_for: must not be negative"))
	}
	if o.ProducerDelayed < 0 {
		errs = append(errs, errors.New("workload: producer_delayed: must not be negative"))
	}
	if o.ProducerDelayed > 0 && o.LiveFor == 0 {
		errs = append(errs, errors.New("workload: producer_delayed: needs live traffic (live_for > 0)"))
	}
	if o.ValueBytes < 0 {
		errs = append(errs, errors.New("workload: value_bytes: must not be negative"))
	}
	if o.AvroTopics < 0 || o.AvroTopics > o.Topics {
		errs = append(errs, fmt.Errorf("workload: avro_topics: must be between 0 and topics (%d), got %d", o.Topics, o.AvroTopics))
	}
	if o.ProducerDelayBy <= o.Disorder {
		errs = append(errs, errors.New("workload: producer_delay_by: must exceed disorder"))
	}
	return errors.Join(errs...)
}

// Workload is one scenario, ready to produce.
type Workload struct {
	opts  Options
	end   time.Time
	kinds []string
	avro  map[string]avroIDs // schema ids by topic, once registered
}

// New returns the scenario for opts (defaults applied). The history ends one
// minute before now, so that live traffic is newer than all of it.
func New(opts Options) (*Workload, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Workload{opts: opts, end: time.Now().Add(-time.Minute).Truncate(time.Millisecond),
		kinds: []string{"in-stock", "reserved", "sold", "returned", "restocked"}}, nil
}

// Options returns the options with defaults applied.
func (w *Workload) Options() Options { return w.opts }

// Topic names the i-th event topic.
func Topic(i int) string { return fmt.Sprintf("events-%02d", i) }

// EventTopics lists the event topics.
func (w *Workload) EventTopics() []string {
	ts := make([]string, w.opts.Topics)
	for i := range ts {
		ts[i] = Topic(i)
	}
	return ts
}

// AvroEventTopics lists the event topics with Avro values (AvroTopics).
func (w *Workload) AvroEventTopics() []string { return w.EventTopics()[:w.opts.AvroTopics] }

// isAvro reports whether event topic ti carries Avro values.
func (w *Workload) isAvro(ti int) bool { return ti < w.opts.AvroTopics }

// AvroTwinTopics lists the Avro twins of the event topics (AvroTwins), or
// none.
func (w *Workload) AvroTwinTopics() []string {
	if !w.opts.AvroTwins {
		return nil
	}
	ts := make([]string, w.opts.Topics)
	for i := range ts {
		ts[i] = AvroTopic(i)
	}
	return ts
}

// Topics lists every topic a job of the scenario reads: the event topics,
// then the reference topic (not the Avro twins).
func (w *Workload) Topics() []string { return append(w.EventTopics(), ReferenceTopic) }

// SlowTopics lists the topics SlowStart makes slow to connect: the last
// SlowTopics event topics.
func (w *Workload) SlowTopics() []string {
	ts := w.EventTopics()
	return ts[len(ts)-w.opts.SlowTopics:]
}

// Inputs declares how signalbox decodes every topic: event time from the
// JSON field ts (unix ms), key from the Kafka key; the Avro topics through
// avro (which must be set when the scenario has Avro topics), event time
// from their timestamp-millis field ts; the reference topic is `time:
// none`.
func (w *Workload) Inputs(avro signalbox.ValueDecoder) []signalbox.Input {
	return append(w.EventInputs(avro), signalbox.Input{Topic: ReferenceTopic, Time: signalbox.TimeNone})
}

// ReferenceTable is the reference topic read as a table's input: each
// record a version of its item (the Kafka key) from its Kafka timestamp,
// ReferenceTime, on.
func (w *Workload) ReferenceTable() signalbox.Input {
	return signalbox.Input{Topic: ReferenceTopic, Time: signalbox.TimeFromTimestamp}
}

// ReferenceTime is the Kafka timestamp of the reference records: 1 ms
// before the history's earliest event time (invariant 4), so that a table
// of them has every item's version as of every event.
func (w *Workload) ReferenceTime() int64 {
	return w.end.UnixMilli() - w.opts.HistorySpan.Milliseconds() - 1
}

// EventInputs are Inputs without the reference topic's.
func (w *Workload) EventInputs(avro signalbox.ValueDecoder) []signalbox.Input {
	var in []signalbox.Input
	for ti, t := range w.EventTopics() {
		if w.isAvro(ti) {
			in = append(in, signalbox.Input{Topic: t, Time: signalbox.TimeFromField, TimeField: TimeField, Decoder: avro})
			continue
		}
		in = append(in, signalbox.Input{Topic: t, Time: signalbox.TimeFromField, TimeField: TimeField, TimeFormat: signalbox.FormatUnixMs})
	}
	return in
}

// AllTopics lists every topic the scenario produces: Topics, then the
// Avro twins.
func (w *Workload) AllTopics() []string { return append(w.Topics(), w.AvroTwinTopics()...) }

// ClusterOptions creates every topic of the scenario, and a schema
// registry on loopback when some topic carries Avro.
func (w *Workload) ClusterOptions() []embedded.Option {
	var opts []embedded.Option
	for _, t := range w.AllTopics() {
		opts = append(opts, embedded.WithTopic(t, int32(w.opts.Partitions)))
	}
	if w.usesAvro() {
		opts = append(opts, embedded.WithSchemaRegistry("127.0.0.1:0"))
	}
	return opts
}

func (w *Workload) usesAvro() bool { return w.opts.AvroTopics > 0 || w.opts.AvroTwins }

// HistoryEnd is the latest event time of the history (unix ms).
func (w *Workload) HistoryEnd() int64 { return w.end.UnixMilli() }

// History describes what ProduceHistory produced.
type History struct {
	Records   int64 // event records
	Reference int64 // reference records
	Twins     int64 // Avro twin records (AvroTwins), not in Records
	Start     int64 // earliest event time, unix ms
	End       int64 // latest event time, unix ms
	Took      time.Duration
}

// item names item i.
func item(i int) string { return fmt.Sprintf("i-%03d", i) }

// value is an event's JSON value, padded to about size bytes, and its
// padding.
func value(it string, ts int64, kind string, size int) ([]byte, string) {
	b := make([]byte, 0, max(64, size+2))
	b = append(b, `{"item":"`...)
	b = append(b, it...)
	b = append(b, `","ts":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"kind":"`...)
	b = append(b, kind...)
	b = append(b, '"')
	var pad string
	if n := size - len(b) - len(`,"pad":""}`); n > 0 {
		b = append(b, `,"pad":"`...)
		for i := range n {
			b = append(b, 'a'+byte(i%26))
		}
		pad = string(b[len(b)-n:])
		b = append(b, '"')
	}
	return append(b, '}'), pad
}

// ev is one event of the scenario: event topic ti, partition p, the n-th
// record of its partition (of total in the history; live: total 0).
type ev struct {
	ti, p, n, total int
	item            string
	ts              int64
	kind            string
}

// event is one event record, its value in event topic ti's format, and the
// padding of its JSON value (for its twin); its Kafka timestamp is its
// event time, so that `time: timestamp` and `time: field` (TimeField) read
// the same times.
func (w *Workload) event(e ev) (*kgo.Record, string, error) {
	v, pad := value(e.item, e.ts, e.kind, w.opts.ValueBytes)
	r := &kgo.Record{Topic: Topic(e.ti), Partition: int32(e.p), Key: []byte(e.item), Timestamp: time.UnixMilli(e.ts), Value: v}
	if w.isAvro(e.ti) {
		var err error
		r.Value, err = w.avroEvent(r.Topic, e, pad)
		return r, pad, err
	}
	return r, pad, nil
}

// twin is event e's record in its Avro twin topic; pad is the padding of
// its JSON value (event).
func (w *Workload) twin(e ev, pad string) (*kgo.Record, error) {
	t := AvroTopic(e.ti)
	v, err := w.avroEvent(t, e, pad)
	return &kgo.Record{Topic: t, Partition: int32(e.p), Key: []byte(e.item), Timestamp: time.UnixMilli(e.ts), Value: v}, err
}

// avroEvent encodes e for topic: v1 for the first half of its partition's
// history, v2 after (and live).
func (w *Workload) avroEvent(topic string, e ev, pad string) ([]byte, error) {
	evolved := e.total == 0 || e.n >= e.total/2
	return avroValue(w.avro[topic], evolved, e.n, e.item, e.ts, e.kind, pad)
}

// registerSchemas registers the Avro schemas of every Avro topic at b's
// schema registry, once.
func (w *Workload) registerSchemas(ctx context.Context, b Broker) error {
	if !w.usesAvro() || w.avro != nil {
		return nil
	}
	reg, ok := b.(SchemaRegistry)
	if !ok || reg.RegistryURL() == "" {
		return errors.New("workload: the scenario has Avro topics but the broker has no schema registry")
	}
	ids, err := registerAvro(ctx, reg.RegistryURL(), append(w.AvroEventTopics(), w.AvroTwinTopics()...))
	if err != nil {
		return err
	}
	w.avro = ids
	return nil
}

// partitionTimes returns n event times in [end−span, end] for one partition:
// bursts of records closer than D, jittered down by up to D, so that the
// order inside the partition is disordered by at most D (invariant 2).
func partitionTimes(rng *rand.Rand, n int, end, span, d int64) []int64 {
	gaps := make([]float64, n)
	var long float64
	for i := range gaps {
		if i > 0 && rng.IntN(2) == 0 {
			gaps[i] = -rng.Float64() * float64(d) // burst: marked negative, fixed size
		} else {
			gaps[i] = rng.ExpFloat64()
			long += gaps[i]
		}
	}
	var bursts float64
	for _, g := range gaps {
		if g < 0 {
			bursts -= g
		}
	}
	scale := max((float64(span-d)-bursts)/max(long, 1e-9), 0)
	ts := make([]int64, n)
	base := float64(end - span + d)
	for i, g := range gaps {
		if g < 0 {
			base -= g
		} else if i > 0 {
			base += g * scale
		}
		ts[i] = int64(base) - rng.Int64N(d+1)
	}
	return ts
}

// Broker is where a workload produces: an *embedded.Cluster, or Remote.
type Broker interface {
	ClientOptions() []kgo.Opt
}

// Remote is a broker at these addresses, reached with no TLS and no SASL
// (`signalbox broker`).
type Remote []string

// ClientOptions implements Broker.
func (r Remote) ClientOptions() []kgo.Opt { return []kgo.Opt{kgo.SeedBrokers(r...)} }

// RemoteWithRegistry is a Remote broker with a schema registry at URL
// (`signalbox broker` prints both).
type RemoteWithRegistry struct {
	Remote
	URL string
}

// RegistryURL implements SchemaRegistry.
func (r RemoteWithRegistry) RegistryURL() string { return r.URL }

// ProduceHistory produces the week of keyed history into b, partition by
// partition in a deterministic order, and the reference records. It streams:
// at most the producer's buffer of records is held at once.
func (w *Workload) ProduceHistory(ctx context.Context, b Broker) (History, error) {
	start := time.Now()
	o := w.opts
	h := History{Start: w.end.UnixMilli(), End: w.end.UnixMilli()}
	if err := w.registerSchemas(ctx, b); err != nil {
		return h, err
	}
	s, err := newSender(b, kgo.ProducerBatchMaxBytes(int32(o.BatchBytes)))
	if err != nil {
		return h, err
	}
	defer s.cl.Close()
	for ti := range w.EventTopics() {
		for p := 0; p < o.Partitions; p++ {
			rng := rand.New(rand.NewPCG(uint64(o.Seed), uint64(ti*1000+p)))
			ts := partitionTimes(rng, o.RecordsPerPartition, w.end.UnixMilli(), o.HistorySpan.Milliseconds(), o.Disorder.Milliseconds())
			for n, t := range ts {
				e := ev{ti: ti, p: p, n: n, total: len(ts), item: item(w.itemIn(rng, p)), ts: t, kind: w.kinds[rng.IntN(len(w.kinds))]}
				r, pad, err := w.event(e)
				if err != nil {
					return h, fmt.Errorf("workload: encoding %s: %w", r.Topic, err)
				}
				s.send(ctx, r)
				if o.AvroTwins {
					if r, err = w.twin(e, pad); err != nil {
						return h, fmt.Errorf("workload: encoding %s: %w", r.Topic, err)
					}
					s.send(ctx, r)
					h.Twins++
				}
				h.Start = min(h.Start, t)
			}
			h.Records += int64(len(ts))
		}
	}
	for i := 0; i < o.Items; i++ {
		it := item(i)
		s.send(ctx, &kgo.Record{Topic: ReferenceTopic, Partition: int32(i % o.Partitions), Key: []byte(it),
			Timestamp: time.UnixMilli(w.ReferenceTime()),
			Value:     []byte(`{"item":"` + it + `","name":"item ` + strconv.Itoa(i) + `"}`)})
		h.Reference++
	}
	if err := s.wait(); err != nil {
		return h, fmt.Errorf("workload: producing history: %w", err)
	}
	h.Took = time.Since(start)
	return h, nil
}

// BatchBytes bounds one produced record batch: Kafka's default batch.size.
// Record batches are the unit a fetch returns, so small batches let a replay
// stream over many fetches as a real week of history does.
const BatchBytes = 16 << 10

// sender produces records asynchronously with explicit partitions and
// counts the acknowledgements; send blocks while the producer's buffer is
// full.
type sender struct {
	cl          *kgo.Client
	wg          sync.WaitGroup
	acked, lost atomic.Int64
	firstErr    atomic.Value
}

func newSender(b Broker, extra ...kgo.Opt) (*sender, error) {
	cl, err := kgo.NewClient(append(append(b.ClientOptions(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(BatchBytes),
		kgo.MaxBufferedRecords(100_000)), extra...)...)
	if err != nil {
		return nil, err
	}
	return &sender{cl: cl}, nil
}

func (s *sender) send(ctx context.Context, r *kgo.Record) {
	s.wg.Add(1)
	s.cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
		defer s.wg.Done()
		if err != nil {
			s.lost.Add(1)
			s.firstErr.CompareAndSwap(nil, err)
			return
		}
		s.acked.Add(1)
	})
}

// wait waits for every acknowledgement and returns the first error.
func (s *sender) wait() error {
	s.wg.Wait()
	if err, _ := s.firstErr.Load().(error); err != nil {
		return fmt.Errorf("%d records not produced: %w", s.lost.Load(), err)
	}
	return nil
}

// itemIn picks an item that belongs to partition p (co-partitioned keys).
func (w *Workload) itemIn(rng *rand.Rand, p int) int {
	per := max(w.opts.Items/w.opts.Partitions, 1)
	return rng.IntN(per)*w.opts.Partitions + p
}

// SlowStart makes SlowTopics slow to connect: their fetches are answered
// without them for SlowFor from now. The returned function ends it early.
func (w *Workload) SlowStart(c *embedded.Cluster) (stop func()) {
	var stops []func()
	for _, t := range w.SlowTopics() {
		stops = append(stops, c.DelayFetches(t, w.opts.SlowFor))
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}

// Live describes what ProduceLive produced.
type Live struct {
	Records         int64 // live records acknowledged, producer-delayed ones included
	ProducerDelayed int64 // of which producer-delayed
	Took            time.Duration
}

// ProduceLive produces live traffic at LiveRate for LiveFor: event time ≈
// now (jittered down by up to Disorder), plus ProducerDelayed records spread
// over the phase whose event time is ProducerDelayBy old. It returns when
// every record is acknowledged or ctx is done.
func (w *Workload) ProduceLive(ctx context.Context, b Broker) (Live, error) {
	o := w.opts
	var live Live
	if o.LiveFor <= 0 {
		return live, nil
	}
	if err := w.registerSchemas(ctx, b); err != nil {
		return live, err
	}
	s, err := newSender(b, kgo.ProducerLinger(0))
	if err != nil {
		return live, err
	}
	defer s.cl.Close()
	rng := rand.New(rand.NewPCG(uint64(o.Seed), 0xfeed))
	topics := w.EventTopics()
	parts := len(topics) * o.Partitions
	total := int64(float64(o.LiveRate) * o.LiveFor.Seconds())
	delayedEvery := int64(0)
	if o.ProducerDelayed > 0 {
		delayedEvery = max(total/int64(o.ProducerDelayed), 1)
	}
	var delayedSent int64
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var sent int64
	for sent < total {
		select {
		case <-ctx.Done():
			s.wg.Wait()
			return live, ctx.Err()
		case <-tick.C:
		}
		due := min(int64(time.Since(start).Seconds()*float64(o.LiveRate)), total)
		for ; sent < due; sent++ {
			k := int(sent % int64(parts))
			ti, p := k/o.Partitions, k%o.Partitions
			now := time.Now().UnixMilli()
			et := now - rng.Int64N(o.Disorder.Milliseconds()+1)
			if delayedEvery > 0 && delayedSent < int64(o.ProducerDelayed) && sent%delayedEvery == delayedEvery-1 {
				et = now - o.ProducerDelayBy.Milliseconds()
				delayedSent++
			}
			r, _, err := w.event(ev{ti: ti, p: p, n: int(sent), item: item(w.itemIn(rng, p)), ts: et, kind: w.kinds[rng.IntN(len(w.kinds))]})
			if err != nil {
				s.wg.Wait()
				return live, fmt.Errorf("workload: encoding %s: %w", r.Topic, err)
			}
			s.send(ctx, r)
		}
	}
	err = s.wait()
	live.Records, live.ProducerDelayed, live.Took = s.acked.Load(), delayedSent, time.Since(start)
	if err != nil {
		return live, fmt.Errorf("workload: live: %w", err)
	}
	return live, nil
}

// AddFlags registers the scenario's knobs on fs, with o's current values as
// defaults, so that every command scaling the scenario (signalbox demo,
// benchall) names them alike.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.Int64Var(&o.Seed, "seed", o.Seed, "workload seed")
	fs.IntVar(&o.Topics, "topics", o.Topics, "event topics")
	fs.IntVar(&o.Partitions, "partitions", o.Partitions, "partitions per topic")
	fs.IntVar(&o.RecordsPerPartition, "records", o.RecordsPerPartition, "history records per partition")
	fs.IntVar(&o.SlowTopics, "slow-topics", o.SlowTopics, "topics slower to connect than an idle timeout")
	fs.DurationVar(&o.SlowFor, "slow", o.SlowFor, "how long the slow topics' fetches are delayed")
	fs.DurationVar(&o.LiveFor, "live", o.LiveFor, "live traffic duration")
	fs.IntVar(&o.LiveRate, "rate", o.LiveRate, "live records per second")
	fs.IntVar(&o.ProducerDelayed, "producer-delayed", o.ProducerDelayed, "live records produced already older than the delay (late for every strategy, and counted)")
	fs.IntVar(&o.AvroTopics, "avro-topics", o.AvroTopics, "event topics (the first ones, at most --topics) whose values are Avro in the Confluent wire format, schemas in the embedded schema registry, the schema evolving halfway through each partition; 0: none")
}
