package collective_test

import (
	"context"
	"fmt"
	"io"
	"time"

	ra "github.com/ringactor/ringactor/runtime"
	"github.com/ringactor/ringactor/runtime/collective"
)

// Four participants, one per simulated device, sum their vectors with a
// ring all-reduce: every participant gets the same sum. Reduce and
// ScatterGather run on the same devices.
func ExampleAllReduce() {
	rt, err := ra.New(ra.Config{Devices: ra.DeviceOptions{Backend: "sim", SimDevices: 4, Log: io.Discard}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	spec := collective.Spec{Name: "grads", Devices: []int{0, 1, 2, 3}}
	vectors := [][]float32{
		{1, 2, 3, 4, 5, 6},
		{10, 20, 30, 40, 50, 60},
		{100, 200, 300, 400, 500, 600},
		{1000, 2000, 3000, 4000, 5000, 6000},
	}
	sums, err := collective.AllReduce(ctx, rt, spec, vectors, collective.ReduceSum)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, v := range sums {
		fmt.Printf("participant %d on device %d: %v\n", i, spec.Devices[i], v)
	}
	maxima, err := collective.AllReduce(ctx, rt, spec, vectors, collective.ReduceMax)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("max:", maxima[0])

	total, err := collective.Reduce(ctx, rt, spec, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, collective.ReduceSum)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("reduce sum 1..10:", total)

	spec.Op, spec.Params, spec.Chunk = "saxpy", []float32{2, 1}, 3
	ys, err := collective.ScatterGather(ctx, rt, spec, []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("2x+1:", ys)
	// Output:
	// participant 0 on device 0: [1111 2222 3333 4444 5555 6666]
	// participant 1 on device 1: [1111 2222 3333 4444 5555 6666]
	// participant 2 on device 2: [1111 2222 3333 4444 5555 6666]
	// participant 3 on device 3: [1111 2222 3333 4444 5555 6666]
	// max: [1000 2000 3000 4000 5000 6000]
	// reduce sum 1..10: 55
	// 2x+1: [1 3 5 7 9 11 13 15 17 19]
}
