package ringkernel

import (
	"testing"

	"github.com/ringactor/ringactor/p2pqueue"
)

// A corrupt trace record is not a dead letter: the message it traces went
// on, and reporting it dead would end it twice. A corrupt dead-letter
// record still is one.
func TestCorruptRecordsEndNothingTwice(t *testing.T) {
	var dead []DeadLetter
	k := &Kernel{spec: Spec{Stage: Stage{Name: "s"}, OnDeadLetter: func(d DeadLetter) { dead = append(dead, d) }}}
	for _, typ := range []uint32{RecordTrace, RecordFault} {
		k.deliver(&p2pqueue.Message{Header: p2pqueue.Header{ID: 9, Type: typ}, Payload: []byte{1, 2}})
	}
	if len(dead) != 0 {
		t.Fatalf("corrupt trace and fault records became dead letters: %v", dead)
	}
	if k.lastText.Load() == nil {
		t.Fatal("the decode error was not kept as the last error text")
	}
	k.deliver(&p2pqueue.Message{Header: p2pqueue.Header{ID: 9, Type: RecordDeadLetter}, Payload: []byte{1, 2}})
	if len(dead) != 1 || dead[0].ID != 9 || dead[0].Code != CodeCorruptSlot || dead[0].Reason != ReasonDecode {
		t.Fatalf("a corrupt dead-letter record: %v", dead)
	}
}
