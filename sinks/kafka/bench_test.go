package kafka_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/signalbox/signalbox/sinks/kafka"
	"github.com/signalbox/signalbox/sinks/sinktest"
)

// brokerEnv makes the test binary a broker process for the benchmark
// (its value: the topic's partition count).
const brokerEnv = "SIGNALBOX_KAFKA_SINK_BENCH_BROKER"

// TestMain runs the benchmark's broker process when brokerEnv is set: a
// kfake cluster with topic "out", its address on stdout, until stdin closes.
func TestMain(m *testing.M) {
	if p := os.Getenv(brokerEnv); p != "" {
		var parts int32
		fmt.Sscan(p, &parts)
		c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(parts, "out"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(strings.Join(c.ListenAddrs(), ","))
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // EOF: the benchmark is done
		c.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// brokerProcess starts the broker process and returns its addresses.
func brokerProcess(b *testing.B, partitions int) []string {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", brokerEnv, partitions))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("broker process: %v", err)
	}
	return strings.Split(strings.TrimSpace(line), ",")
}

// cpuTime is this process's user + system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkProduce measures the sink's Write and Flush against a kfake
// broker in its own process (over TCP), so the CPU reported is the
// producer's alone: batches of 4096 records (the engine's release batch)
// of about 150 bytes, 1000 keys, 3 partitions, a Flush (in transactional
// mode a commit) every flush_every records: 20k, or 500k as a replay
// between two checkpoints does. Reports records/s and cpu-ns/record (this
// process's user + system time per record); the machine is shared, so
// compare runs side by side.
func BenchmarkProduce(b *testing.B) {
	const batch = 4096
	for _, txn := range []string{"", "bench"} {
		for _, every := range []int{20_000, 500_000} {
			b.Run(fmt.Sprintf("transactional_id=%s/flush_every=%d", txn, every), func(b *testing.B) {
				addrs := brokerProcess(b, 3)
				recs := sinktest.Records(0, every, 1000)
				pad := bytes.Repeat([]byte("x"), 120)
				for i := range recs {
					recs[i].Value = append(recs[i].Value, pad...)
				}
				s := kafka.New(kafka.Config{Brokers: addrs, Topic: "out", TransactionalID: txn})
				if err := s.Open(ctx); err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				b.ReportAllocs()
				b.ResetTimer()
				cpu := cpuTime()
				for done := 0; done < b.N; {
					n := min(b.N-done, len(recs))
					for i := 0; i < n; i += batch {
						if err := s.Write(ctx, recs[i:min(i+batch, n)]); err != nil {
							b.Fatal(err)
						}
					}
					if err := s.Flush(ctx); err != nil {
						b.Fatal(err)
					}
					done += n
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/record")
			})
		}
	}
}
