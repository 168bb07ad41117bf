package timers

import (
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

func TestTmpSync(t *testing.T) {
	s, err := OpenStore(t.TempDir(), StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := make([]byte, 100)
	for _, n := range []int{0, 10000} {
		var tot time.Duration
		for i := 0; i < 20; i++ {
			b := s.db.NewBatch()
			for j := 0; j < n; j++ {
				k := appendPosKey(nil, Pos{EventTime: int64(i*n + j), Key: "entity-000000", Input: "orders"})
				b.Set(k, big, nil)
			}
			b.Set([]byte("x"), []byte("y"), nil)
			t0 := time.Now()
			if err := b.Commit(pebble.Sync); err != nil {
				t.Fatal(err)
			}
			tot += time.Since(t0)
		}
		t.Logf("n=%d sync commit %v", n, tot/20)
	}
}
