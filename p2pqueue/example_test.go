package p2pqueue_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ringactor/ringactor/p2pqueue"
)

// A link between two goroutines: one producer, one consumer, closed by the
// producer and drained by the consumer.
func Example() {
	link, err := p2pqueue.NewHostQueue(p2pqueue.ConfigFor(8, 16))
	if err != nil {
		panic(err)
	}
	producer, _ := link.Producer()
	consumer, _ := link.Consumer()

	go func() {
		defer producer.Close()
		for i := range 3 {
			m := p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(i)}, Payload: fmt.Appendf(nil, "msg %d", i)}
			if err := producer.Enqueue(context.Background(), &m); err != nil {
				return
			}
		}
	}()

	var m p2pqueue.Message
	for {
		err := consumer.Dequeue(context.Background(), &m)
		if errors.Is(err, p2pqueue.ErrClosed) {
			break
		}
		fmt.Println(m.ID, string(m.Payload))
	}
	// Output:
	// 0 msg 0
	// 1 msg 1
	// 2 msg 2
}

// Batches: reserve up to k slots, write them, publish all with one store.
func ExampleProducer_Reserve() {
	link, _ := p2pqueue.NewHostQueue(p2pqueue.Config{Capacity: 4, SlotSize: 64})
	producer, _ := link.Producer()
	consumer, _ := link.Consumer()

	n, _ := producer.Reserve(10) // only 4 fit
	for i := range n {
		_ = producer.Write(i, &p2pqueue.Message{Header: p2pqueue.Header{ID: uint64(100 + i)}})
	}
	_ = producer.Commit(n)

	k, _ := consumer.Peek(10)
	for i := range k {
		h, _, _ := consumer.Read(i)
		fmt.Print(h.ID, " ")
	}
	_ = consumer.Release(k)
	fmt.Println("| in flight:", link.Len())
	// Output: 100 101 102 103 | in flight: 0
}

// Attach refuses memory that does not hold a queue, naming the problem.
func ExampleAttach() {
	r, _ := p2pqueue.NewHostRegion(1024)
	_, err := p2pqueue.Attach(r)
	fmt.Println(errors.Is(err, p2pqueue.ErrBadMagic))
	// Output: true
}
