package msgconv

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"
)

// The attributes carry the conventions' keys, the id is a decimal string
// whatever its size, and names read "{operation} {destination}".
func TestAttributes(t *testing.T) {
	got := map[attribute.Key]attribute.Value{}
	for _, kv := range Process(OpProcess, Stage("p", "s"), ID(^uint64(0)), attribute.String("ringactor.stage", "s")) {
		got[kv.Key] = kv.Value
	}
	want := map[attribute.Key]string{"messaging.system": "ringactor", "messaging.operation.type": "process", "messaging.operation.name": "process",
		"messaging.destination.name": "p/s", "messaging.message.id": "18446744073709551615", "ringactor.stage": "s"}
	if len(got) != len(want) {
		t.Fatalf("%v, want %v", got, want)
	}
	for k, v := range want {
		if got[k].Type() != attribute.STRING || got[k].AsString() != v {
			t.Errorf("%s = %v, want the string %q", k, got[k].Emit(), v)
		}
	}
	for _, kv := range Send(OpArrive, Barrier("b"), ID(3)) {
		if kv.Key == "messaging.operation.type" && kv.Value.AsString() != "send" {
			t.Errorf("a send's type: %v", kv.Value.Emit())
		}
	}
	if n := SpanName(OpSend, "guide"); n != "send guide" {
		t.Errorf("span name %q", n)
	}
	if SchemaURL == "" || Version == "" {
		t.Error("no schema URL or version")
	}
}
