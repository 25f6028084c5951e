package barrier_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ringactor/ringactor/barrier"
	"github.com/ringactor/ringactor/p2pqueue"
)

// Three goroutines run three phases in lock step over a flag array in host
// memory; a GPU would share the same array in mapped pinned memory.
func Example() {
	size, _ := barrier.Size(3)
	r, _ := p2pqueue.NewAlignedRegion(size)
	f, _ := barrier.Init(r, 3, barrier.WithNames("gpu0", "gpu1", "host"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var partial [3][3]int // partial[phase][participant]
	var wg sync.WaitGroup
	for i := range 3 {
		p, _ := f.Participant(i)
		wg.Go(func() {
			for phase := range 3 {
				partial[phase][i] = (i + 1) * (phase + 1)
				if err := p.ArriveAndWait(ctx); err != nil {
					fmt.Println(err)
					return
				}
				if i == 0 { // everyone's writes of this phase are visible here
					fmt.Println("phase", phase, "sum", partial[phase][0]+partial[phase][1]+partial[phase][2])
				}
			}
		})
	}
	wg.Wait()

	// A participant that never comes is named when the wait times out.
	g, _ := barrier.Init(r, 3, barrier.WithNames("gpu0", "gpu1", "host"))
	p0, _ := g.Participant(0)
	short, cancelShort := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancelShort()
	fmt.Println(p0.ArriveAndWait(short))
	// Output:
	// phase 0 sum 6
	// phase 1 sum 12
	// phase 2 sum 18
	// barrier: timed out at generation 1 waiting for participants 1 (gpu1), 2 (host): context deadline exceeded
}
