package engine

import (
	"math"
	"time"

	"github.com/signalbox/signalbox/catchup"
	"github.com/signalbox/signalbox/internal/strategy"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/watermark"
)

// Config is what an Engine is built from: plain values and the ports it
// calls (doc.go). Every field is read by New and the steps only; the
// caller must not change it afterwards.
type Config struct {
	// Delay is the delay bound (design W1, L1); Late what a late record
	// does; MaxFuture the poison guard (0: off).
	Delay     time.Duration
	Late      LatePolicy
	MaxFuture time.Duration
	// BatchSize bounds the records of an out batch and a release chunk;
	// BatchBytes seals a batch holding that many bytes (counted only when
	// InflightBytes > 0).
	BatchSize     int
	BatchBytes    int
	InflightBytes int64
	// MaxSpares bounds the spare batches kept to fill again (Spare).
	MaxSpares int
	// Flow control (align.go): the alignment window and the parked limit
	// (0: off).
	Align       time.Duration
	ParkedLimit int64
	// Tick is the longest sleep between two passes and the stats' publish
	// interval; FlushLinger the at-least-once sinks' flush linger;
	// CheckpointEvery the checkpoint interval; StaleAfter catch-up's.
	Tick            time.Duration
	FlushLinger     time.Duration
	CheckpointEvery time.Duration
	StaleAfter      time.Duration
	// UntilEnd: a bounded run that ends at the start-up end offsets; with
	// StopSet, one that ends once the watermark reaches StopAt.
	UntilEnd bool
	StopSet  bool
	StopAt   int64
	// Strategy makes each task's watermark strategy.
	Strategy func() strategy.Strategy
	// Store holds the parked records; Durable says the driver stores it
	// with each checkpoint (a barrier), ParkRefs that it refers to parked
	// records rather than copying them (their arrays are recycled only
	// once released), Recycles that the source takes arrays back.
	Store    Store
	Durable  bool
	ParkRefs bool
	Recycles bool
	// What the sinks and the source are: a dead-letter sink, a checkpoint
	// sink, an observer, a source that pauses, wants to hear which
	// partitions were handled, takes evidence demands, reads in a group.
	DeadLetter     bool
	CheckpointSink bool
	Observe        bool
	CanPause       bool
	TellsHandled   bool
	Demands        bool
	InGroup        bool
	// Record functions, in the order a record meets them: Filter and
	// Transform as it is parked, Process and the Wheres (by sink index;
	// RawRoute has the bits of the sinks that take every record) as it is
	// output, then the Windows. Tables are the inputs whose records are
	// versions of a table.
	Filter    func(*record.Record) bool
	Transform func(*record.Record) error
	Process   func(*record.Record) (bool, error)
	Wheres    []func(*record.Record) (bool, error)
	RawRoute  uint64
	Windows   []Window
	Tables    []Table
	// Timeless reports whether a topic's records have no event time.
	Timeless func(topic string) bool
	// Render returns what decodes a topic's schema'd records' keys and
	// values for the sinks as they are output (nil: the topic's input is
	// not schema'd; Render nil: no input is), asked once per assigned
	// partition; dead is the dead-letter reason of a record it cannot
	// decode. It is the one port that may block (doc.go S1).
	Render func(topic string) func(rec *record.Record) (dead string, err error)
	// Spawn, when set, runs f on a goroutine of its own: the one way the
	// engine has work done beside its step (doc.go S1), the windows'
	// evaluation of a long release chunk ahead of the step (ahead.go,
	// design K10). f is pure computation and ends by itself; it may go on
	// after the step that started it, on released records the store has
	// not passed on yet, which the engine claims before it does. A step
	// waits at most for one block of it. Nil: the step evaluates
	// everything itself.
	Spawn func(f func())
	// ProcessFork, when set, returns Process again, sharing no memory with
	// it or another fork's: a helper runs one on a release chunk's records
	// ahead of the step (ahead.go), on a copy of each record, which the
	// step then takes as Process would have left it. A fork may read the
	// tables: no helper runs beside any step but ReleaseMore (aheadJoin),
	// and versions are put and tables trimmed only in those.
	ProcessFork func() func(*record.Record) (bool, error)
	// ProcessHint, when set with ProcessFork, is called with each block of
	// a chunk evaluated ahead before the Process runs on it, by the helper
	// or the step, whichever has the block (ahead.go): it asks the CPU for
	// memory the Process will read, changes nothing, and may run on
	// several goroutines at once.
	ProcessHint func(recs []*record.Record)
	// Log receives the engine's log lines (nil: none).
	Log Logger
	// Start is when the run started (the clock's time).
	Start time.Time
}

// Logger is the engine's log: key/value pairs, as zap's SugaredLogger
// takes them (Infow, Warnw, Debugw).
type Logger interface {
	Infow(msg string, kv ...any)
	Warnw(msg string, kv ...any)
	Debugw(msg string, kv ...any)
}

// Table makes the records of the input Topic versions of Into (design O6).
type Table struct {
	Topic string
	Into  TableStore
}

// TableStore is a table the engine puts versions into and trims (the root
// package's TableStore; *tables.Table is one).
type TableStore interface {
	Name() string
	History() time.Duration
	Put(key string, at int64, value []byte, tomb bool)
	Trim(watermark int64)
	Err() error
}

// Engine is the state of one run that the steps change (doc.go).
type Engine struct {
	cfg      *Config
	parts    map[record.TopicPartition]*partState
	pcache   partCache // released records' partitions, without hashing
	catch    *catchup.Tracker
	tasks    map[int32]*task
	store    Store
	restored map[record.TopicPartition]record.PartitionCheckpoint
	// fenced are the partitions whose checkpoint the checkpoint sink
	// refused (EventFenced): their revoke must not remember what was emitted.
	fenced map[record.TopicPartition]bool
	// rereading is set while a re-read record goes to the windows only
	// (windowsReread): nothing it does is counted again.
	rereading bool
	cpWM      int64 // the restored checkpoint's watermark, when hasCP
	hasCP     bool
	wm        int64
	cur       *Out
	route     uint64 // the routes of the record output is handling (process.go)
	// wins are the run's windows (windowrun.go), made with the first
	// scope; winAll is the run's one scope without a group (with one,
	// each task has its own: task.win).
	wins     []*windowRun
	winAll   *winScope
	winItems []winItem
	// ahead is the release chunk whose window items a helper evaluates
	// (ahead.go), nil when none, aheadNext the next chunk's; aheadBlk is
	// the block of ahead the engine is in, aheadFilled whether the helper
	// filled it; aheadSpares are chunks done with, reused once their
	// helper has exited.
	// taskCount is how many tasks the engine holds after the assignment
	// under way (tasksAfter); winErr is the first task window store that
	// did not open (newScope).
	taskCount        int
	winErr           error
	ahead, aheadNext *aheadChunk
	aheadSpares      []*aheadChunk
	stealForks       *aheadForks // the engine's own forks, for the blocks it steals (made at the first)
	aheadBlk         int
	aheadFilled      bool
	// winBuf holds the results of the scopes while windowsTo advances
	// them (buffering), winTo the last time it advanced them to for a
	// record; taskScopes are the tasks' scopes, with a group.
	winBuf     []bufResult
	buffering  bool
	winTo      int64
	taskScopes []*winScope
	fx         Effects   // what the steps asked for since the last Advance
	now        time.Time // the time of the current step
	rel        releasing // the release under way
	last       passTimes // when the last checkpoint was taken and the stats published
	// onRelease is releasedOne, as the store's callback.
	onRelease func(*record.Record) error
	spares    spares // batches the sinks gave back (handoff.go)
	stats     Counters
	replayed  bool
	// evidence is the source's evidence clock (record.Fetch.At); stamped
	// is false for sources that keep none.
	evidence time.Time
	stamped  bool
	fetched  bool // at least one Fetch was handled
	// revokedAll: a Fetch revoked every partition this instance held; until
	// the next assignment the replay is not done (a rebalance is under way).
	revokedAll bool
	// restored from a DurableStore: parked records per partition, until
	// the first assignment (design R10); late counters.
	floors map[record.TopicPartition]record.Parked
	// trimmedAt is the watermark each table was last trimmed at (table.go).
	trimmedAt []int64
	// late holds every partition's late counters, restored ones included;
	// they outlive a revoke, so a partition that comes back keeps counting.
	lateCounts map[record.TopicPartition]*LateCounter
	// handledTPs are the partitions handled since the source was last told;
	// overLimit: the parked limit is exceeded (align.go).
	handledTPs []record.TopicPartition
	overLimit  bool
	// future is the poison guard's bound for the Fetch being handled: event
	// times above it do not move time (Config.MaxFuture).
	future int64
	// demanded is the due time last asked for (demandEvidence).
	demanded time.Time
	// unflushed is when records were first handed to the sinks since their
	// last flush (zero: none); they are flushed Config.FlushLinger after it.
	unflushed time.Time
	// restoringN is at least the number of partitions still re-reading
	// below their restored checkpoint's position (restoreHold recounts).
	restoringN int
	// untilReached: the watermark reached Config.StopAt.
	untilReached bool
}

// New returns the engine of one run.
func New(cfg *Config) *Engine {
	c := &Engine{
		cfg:        cfg,
		parts:      map[record.TopicPartition]*partState{},
		catch:      catchup.New(catchup.Options{StaleAfter: cfg.StaleAfter}),
		tasks:      map[int32]*task{},
		store:      cfg.Store,
		wm:         watermark.MinTime,
		cpWM:       watermark.MinTime,
		winTo:      watermark.MinTime,
		restored:   map[record.TopicPartition]record.PartitionCheckpoint{},
		fenced:     map[record.TopicPartition]bool{},
		lateCounts: map[record.TopicPartition]*LateCounter{},
		last:       passTimes{cp: cfg.Start},
		spares:     spares{low: math.MaxInt},
	}
	c.cur = &Out{}
	if ms, ok := cfg.Store.(*memStore); ok {
		ms.values = len(cfg.Windows) > 0 || cfg.Process != nil || len(cfg.Wheres) > 0
		if c.aheadOK() {
			ms.ahead = c.aheadStart
		}
	}
	return c
}

// passTimes are when the engine last took a checkpoint and published its
// stats.
type passTimes struct{ cp, pub time.Time }

// logf logs at a level, when there is a log.
func (c *Engine) info(msg string, kv ...any) {
	if c.cfg.Log != nil {
		c.cfg.Log.Infow(msg, kv...)
	}
}

func (c *Engine) warn(msg string, kv ...any) {
	if c.cfg.Log != nil {
		c.cfg.Log.Warnw(msg, kv...)
	}
}

func (c *Engine) debug(msg string, kv ...any) {
	if c.cfg.Log != nil {
		c.cfg.Log.Debugw(msg, kv...)
	}
}
