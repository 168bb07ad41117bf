package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/signalbox/signalbox/internal/fielderr"
	"github.com/signalbox/signalbox/record"
	"github.com/signalbox/signalbox/retry"
	"github.com/signalbox/signalbox/sinks/envelope"
)

// Defaults used by Config.EnsureDefaults.
const (
	DefaultMaxDocs  = 1000
	DefaultMaxBytes = 5 << 20
	DefaultLinger   = 200 * time.Millisecond
	DefaultTimeout  = 30 * time.Second
)

// The ranges Validate enforces: a request beyond 100 MiB is beyond what an
// Elasticsearch or OpenSearch node accepts (http.max_content_length).
const (
	MaxMaxDocs  = 100_000
	MaxMaxBytes = 100 << 20
	MaxLinger   = time.Minute
)

// ErrClosed is returned by calls made after Close.
var ErrClosed = errors.New("bulk: sink closed")

// errTooLarge marks a request the server refused as too large (413).
var errTooLarge = errors.New("413 Request Entity Too Large")

// Versioning chooses the external version sent with each document.
type Versioning int

const (
	// EventTimeVersion (default) sends version_type=external with version
	// event_time_ms·1000 + n, where n counts earlier documents with the same
	// _id and the same event time in this run (capped at 999). Timeless
	// records and negative event times are sent without a version.
	EventTimeVersion Versioning = iota
	// OffsetVersion uses the record's offset as the version. Only sound when
	// every document id stays within one partition.
	OffsetVersion
	// NoVersion sends no version: order rests on invariants 3b and 3c.
	NoVersion
)

// Config configures the sink. Zero fields take the documented defaults.
type Config struct {
	// URL is the cluster's base URL, e.g. http://localhost:9200. Required.
	URL string
	// Index is the target index. Required.
	Index string
	// Client sends the requests. Default: an http.Client with a 30s timeout.
	Client *http.Client
	// Header is added to every request (authentication, for example).
	Header http.Header
	// MaxDocs closes a request at this many documents. Default 1000; at
	// most MaxMaxDocs.
	MaxDocs int
	// MaxBytes closes a request at this many NDJSON bytes. Default 5 MiB;
	// at most MaxMaxBytes.
	MaxBytes int
	// Linger sends a non-empty, non-full request this long after its first
	// document was written. Default 200ms. Negative disables the timer
	// (only count, bytes and Flush close a request). At most MaxLinger.
	Linger time.Duration
	// Retry is the backoff for 429, 5xx and transport errors. Zero value:
	// the retry package defaults (100ms doubling to 10s, ±20%, 2m budget).
	Retry retry.Policy
	// DocID returns a record's document id, valid UTF-8 of at most
	// MaxIDBytes bytes (a record given any other id is rejected, invariant
	// 8). Default KeyID.
	DocID func(*record.Record) string
	// Versioning chooses the external version. Default EventTimeVersion.
	Versioning Versioning
}

// EnsureDefaults fills zero fields with their defaults.
func (c *Config) EnsureDefaults() {
	if c.Client == nil {
		c.Client = &http.Client{Timeout: DefaultTimeout}
	}
	if c.MaxDocs == 0 {
		c.MaxDocs = DefaultMaxDocs
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	}
	if c.DocID == nil {
		c.DocID = KeyID
	}
	c.Retry = c.Retry.EnsureDefaults()
}

// Validate reports every configuration error, each naming its field as the
// job file does (url, index, max_docs, max_bytes, linger), joined in one
// error. Call EnsureDefaults first to accept zero values.
func (c *Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("bulk: %w", fielderr.New(field, format, args...)))
	}
	if c.URL == "" {
		bad("url", "required for a bulk sink, e.g. http://localhost:9200")
	} else if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("url", "%q is not an http(s) URL", c.URL)
	}
	if c.Index == "" {
		bad("index", "required for a bulk sink")
	}
	if c.MaxDocs < 1 || c.MaxDocs > MaxMaxDocs {
		bad("max_docs", "%d is out of range: must be from 1 to 100000", c.MaxDocs)
	}
	if c.MaxBytes < 1 || c.MaxBytes > MaxMaxBytes {
		bad("max_bytes", "%d bytes is out of range: must be from 1 B to 100 MiB", c.MaxBytes)
	}
	if c.Linger > MaxLinger {
		bad("linger", "%v is out of range: must be at most 1m", c.Linger)
	}
	return errors.Join(errs...)
}

// KeyID is the default document id: the record's OrderKey, else its Kafka
// key, through envelope.ID (a key that is valid UTF-8 and does not start
// with envelope.IDPrefix is its own id; any other becomes the prefix and
// its bytes in base64url, so no two keys share an id); else OffsetID.
// Documents are entities; the index keeps the newest.
func KeyID(r *record.Record) string {
	switch {
	case r.OrderKey != "":
		return envelope.ID(r.OrderKey)
	case len(r.Key) > 0:
		return envelope.IDBytes(r.Key)
	}
	return OffsetID(r)
}

// MaxIDBytes is the longest document id Elasticsearch and OpenSearch
// accept. A longer id fails the whole _bulk request with 400
// action_request_validation_exception, so the sink rejects its record
// instead of sending it (invariant 8).
const MaxIDBytes = 512

// OffsetID makes one document per record: "topic/partition/offset".
func OffsetID(r *record.Record) string {
	return r.Topic + "/" + strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)
}

// item is one queued index operation: action and document lines.
type item struct {
	rec       record.Record
	id        string
	versioned bool
	line      []byte
}

// Sink is the HTTP bulk sink.
type Sink struct {
	cfg Config
	url string

	mu     sync.Mutex
	queue  []item
	bytes  int
	timer  *time.Timer
	armed  bool
	err    error // sticky fatal error or ErrClosed
	ctx    context.Context
	cancel context.CancelFunc

	tieTime  int64          // event time of the current tie group
	ties     map[string]int // per _id count within tieTime
	scratch  []byte
	rejected []retry.Rejection // per-item rejections not yet reported by Flush
}

// New returns a sink; call Open before use.
func New(cfg Config) *Sink {
	cfg.EnsureDefaults()
	return &Sink{cfg: cfg, url: strings.TrimRight(cfg.URL, "/") + "/_bulk", ties: map[string]int{}}
}

// Open validates the configuration. It does not contact the server.
func (s *Sink) Open(ctx context.Context) error {
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return nil
}

// Info describes the sink a configuration makes (signalbox.SinkDescriber):
// "bulk", at least once, writing rendered values.
func (c Config) Info() record.SinkInfo { return record.SinkInfo{Name: "bulk"} }

// Info is the sink's description: its configuration's (Config.Info).
func (s *Sink) Info() record.SinkInfo { return s.cfg.Info() }

// Write drains a full queue (blocking while the server pushes back), then
// queues batch and sends every full request.
func (s *Sink) Write(ctx context.Context, batch []record.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if s.ctx == nil {
		return errors.New("bulk: sink not open")
	}
	if err := s.send(ctx, false); err != nil {
		return err
	}
	for i := range batch {
		s.enqueue(&batch[i])
	}
	if err := s.send(ctx, false); err != nil && !retry.IsRetryable(err) {
		return err
	}
	s.arm()
	return nil
}

// Flush sends everything queued and waits for every per-item result. When
// the server rejected documents for their data since the last Flush
// (invariant 4), it returns them as a *retry.RejectedError once everything
// else is acknowledged; the next Flush has nothing more to send.
func (s *Sink) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if err := s.send(ctx, true); err != nil {
		return err
	}
	rej := s.rejected
	s.rejected = nil
	return retry.Rejected(rej...)
}

// ReportRetries sets the hook called before each retry of a request (the
// engine logs it). It chains Config.Retry.OnRetry.
func (s *Sink) ReportRetries(hook func(attempt int, err error, wait time.Duration)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev := s.cfg.Retry.OnRetry; prev != nil {
		s.cfg.Retry.OnRetry = func(a int, err error, w time.Duration) { prev(a, err, w); hook(a, err, w) }
		return
	}
	s.cfg.Retry.OnRetry = hook
}

// Close flushes, stops the linger timer and makes later calls fail.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(s.err, ErrClosed) {
		return ErrClosed
	}
	err := s.err
	if err == nil && s.cancel != nil {
		err = s.send(context.Background(), true)
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	if s.cancel != nil {
		s.cancel()
	}
	s.err = ErrClosed
	return err
}

func (s *Sink) enqueue(r *record.Record) {
	it := item{rec: *r, id: s.cfg.DocID(r)}
	if reason := badID(it.id); reason != "" {
		s.rejected = append(s.rejected, retry.Rejection{Record: *r, Reason: reason})
		return
	}
	version, ok := s.version(r, it.id)
	b := append(s.scratch[:0], `{"index":{"_index":`...)
	b = envelope.AppendString(b, s.cfg.Index)
	b = append(b, `,"_id":`...)
	b = envelope.AppendString(b, it.id)
	if ok {
		it.versioned = true
		b = append(b, `,"version":`...)
		b = strconv.AppendInt(b, version, 10)
		b = append(b, `,"version_type":"external"`...)
	}
	b = append(b, "}}\n"...)
	b = envelope.Append(b, r)
	b = append(b, '\n')
	it.line = bytes.Clone(b)
	s.scratch = b
	s.queue = append(s.queue, it)
	s.bytes += len(it.line)
}

// badID says why the server would refuse id, or returns "".
func badID(id string) string {
	switch {
	case len(id) > MaxIDBytes:
		return "bulk: document id of " + strconv.Itoa(len(id)) + " bytes is longer than the server's limit of " + strconv.Itoa(MaxIDBytes)
	case !utf8.ValidString(id):
		return "bulk: document id is not valid UTF-8 (Config.DocID)"
	}
	return ""
}

func (s *Sink) version(r *record.Record, id string) (int64, bool) {
	switch s.cfg.Versioning {
	case OffsetVersion:
		return r.Offset, r.Offset >= 0
	case NoVersion:
		return 0, false
	}
	if r.Timeless || r.EventTime < 0 {
		return 0, false
	}
	if r.EventTime != s.tieTime {
		s.tieTime = r.EventTime
		clear(s.ties)
	}
	n := min(s.ties[id], 999)
	s.ties[id]++
	return r.EventTime*1000 + int64(n), true
}

// arm starts the linger timer when documents are waiting.
func (s *Sink) arm() {
	if s.armed || len(s.queue) == 0 || s.cfg.Linger < 0 {
		return
	}
	s.armed = true
	if s.timer == nil {
		s.timer = time.AfterFunc(s.cfg.Linger, s.linger)
	} else {
		s.timer.Reset(s.cfg.Linger)
	}
}

func (s *Sink) linger() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
	if s.err != nil {
		return
	}
	// A retryable failure keeps the items queued; the next Write or
	// Flush resends them and reports the error.
	_ = s.send(s.ctx, true)
	s.arm()
}

// send delivers requests from the head of the queue: every request when
// all, else only full ones. It must be called with s.mu held.
func (s *Sink) send(ctx context.Context, all bool) error {
	limit := s.cfg.MaxDocs // halved while the server answers 413
	for len(s.queue) > 0 && (all || len(s.queue) >= s.cfg.MaxDocs || s.bytes >= s.cfg.MaxBytes) {
		n, size := 0, 0
		for n < len(s.queue) && n < limit && (n == 0 || size+len(s.queue[n].line) <= s.cfg.MaxBytes) {
			size += len(s.queue[n].line)
			n++
		}
		chunk := s.queue[:n:n]
		err := s.cfg.Retry.Do(ctx, func(ctx context.Context) error {
			var err error
			chunk, err = s.post(ctx, chunk)
			return err
		})
		if errors.Is(err, errTooLarge) { // invariant 7
			if n > 1 {
				limit = n / 2
			} else {
				s.rejected = append(s.rejected, retry.Rejection{Record: chunk[0].rec,
					Reason: "bulk: the document alone is too large for the server: " + err.Error()})
				chunk = nil
			}
			err = nil
		}
		// Whatever is left of chunk goes back to the head of the queue.
		rest := s.queue[n:]
		s.queue = append(chunk[:len(chunk):len(chunk)], rest...)
		s.bytes = 0
		for i := range s.queue {
			s.bytes += len(s.queue[i].line)
		}
		if err != nil {
			if !retry.IsRetryable(err) {
				s.err = err
			}
			return err
		}
	}
	return nil
}

type bulkResponse struct {
	Errors bool                         `json:"errors"`
	Items  []map[string]bulkItemOutcome `json:"items"`
}

type bulkItemOutcome struct {
	Status int `json:"status"`
	Error  *struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	} `json:"error"`
}

// post sends one request and returns the items that must be retried, with
// an error classified for the retry policy.
func (s *Sink) post(ctx context.Context, chunk []item) ([]item, error) {
	var body bytes.Buffer
	for i := range chunk {
		body.Write(chunk[i].line)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, &body)
	if err != nil {
		return chunk, err
	}
	for k, v := range s.cfg.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return chunk, err
		}
		return chunk, retry.Retryable(fmt.Errorf("bulk: %w", err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return chunk, retry.Retryable(fmt.Errorf("bulk: reading response: %w", err))
	}
	switch {
	case resp.StatusCode == http.StatusRequestEntityTooLarge:
		return chunk, fmt.Errorf("%w: %.200s", errTooLarge, raw)
	case resp.StatusCode == http.StatusTooManyRequests:
		return chunk, retry.Throttled(fmt.Errorf("bulk: %s", resp.Status),
			retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()))
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout:
		return chunk, retry.Retryable(fmt.Errorf("bulk: %s: %.200s", resp.Status, raw))
	case resp.StatusCode/100 != 2:
		return chunk, fmt.Errorf("bulk: %s: %.200s", resp.Status, raw)
	}
	var br bulkResponse
	if err := json.Unmarshal(raw, &br); err != nil || len(br.Items) != len(chunk) {
		return chunk, fmt.Errorf("bulk: malformed response (%d items for %d documents): %v", len(br.Items), len(chunk), err)
	}
	return s.results(chunk, br.Items)
}

// perRecord reports whether an item's status rejects the document itself
// (400 mapper_parsing_exception, illegal_argument_exception, 409 ...)
// rather than the request's target: 401, 403 and 404 would reject every
// document alike, so they are fatal.
func perRecord(status int) bool {
	return status/100 == 4 && status != http.StatusUnauthorized && status != http.StatusForbidden && status != http.StatusNotFound
}

// results applies invariants 3b and 4 to one response.
func (s *Sink) results(chunk []item, outcomes []map[string]bulkItemOutcome) ([]item, error) {
	const (
		done = iota
		again
		rejected
	)
	state := make([]int, len(chunk))
	throttled := false
	for i, m := range outcomes {
		var o bulkItemOutcome
		for _, v := range m { // one key: the action name
			o = v
		}
		switch {
		case o.Status/100 == 2, o.Status == http.StatusConflict && chunk[i].versioned:
			state[i] = done
		case o.Status == http.StatusTooManyRequests || o.Status >= 500:
			state[i] = again
			throttled = throttled || o.Status == http.StatusTooManyRequests
		case o.Status == http.StatusRequestTimeout:
			state[i] = again
		default:
			state[i] = rejected
			reason := fmt.Sprintf("bulk: item rejected with %d", o.Status)
			if o.Error != nil {
				reason += " " + o.Error.Type + ": " + o.Error.Reason
			}
			if !perRecord(o.Status) {
				return nil, fmt.Errorf("%s/%d@%d: %s", chunk[i].rec.Topic, chunk[i].rec.Partition, chunk[i].rec.Offset, reason)
			}
			s.rejected = append(s.rejected, retry.Rejection{Record: chunk[i].rec, Reason: reason})
		}
	}
	// 3b: a failed item whose _id later succeeded in this request is
	// superseded: retrying it would put an older version on top.
	succeededAfter := map[string]bool{}
	var retryItems []item
	for i := len(chunk) - 1; i >= 0; i-- {
		switch state[i] {
		case done:
			succeededAfter[chunk[i].id] = true
		case again:
			if !succeededAfter[chunk[i].id] {
				retryItems = append(retryItems, chunk[i])
			}
		}
	}
	if len(retryItems) == 0 {
		return nil, nil
	}
	for i, j := 0, len(retryItems)-1; i < j; i, j = i+1, j-1 {
		retryItems[i], retryItems[j] = retryItems[j], retryItems[i]
	}
	err := fmt.Errorf("bulk: %d of %d items need a retry", len(retryItems), len(chunk))
	if throttled {
		return retryItems, retry.Throttled(err, 0)
	}
	return retryItems, retry.Retryable(err)
}
