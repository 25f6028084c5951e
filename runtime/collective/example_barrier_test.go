package collective_test

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/collective"
)

// Three participants meet at a barrier actor twice; a fourth that never
// comes is named when its phase times out.
func ExampleNewBarrier() {
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 1, Log: io.Discard}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	b, err := collective.NewBarrier(rt, collective.BarrierSpec{Name: "step", Participants: []string{"gpu0", "gpu1", "host"}, Timeout: 50 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	var wg sync.WaitGroup
	for _, name := range []string{"gpu0", "gpu1", "host"} {
		wg.Go(func() {
			for phase := range uint64(2) {
				if err := b.Await(ctx, name, phase); err != nil {
					fmt.Println(err)
				}
			}
		})
	}
	wg.Wait()
	fmt.Println("two phases done")

	wg.Go(func() { b.Await(ctx, "gpu0", 2) })
	fmt.Println(b.Await(ctx, "gpu1", 2))
	wg.Wait()
	// Output:
	// two phases done
	// ringactor: barrier "step" phase 2 timed out after 50ms waiting for host
}
