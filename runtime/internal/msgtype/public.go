package msgtype

import "fmt"

// Description is a registered type as users see it (runtime.MessageType).
type Description struct {
	ID   uint32
	Name string // the Go type, as %T prints it
	// Fixed: the type travels as its raw bytes; else as msgpack.
	Fixed bool
}

func (m Description) String() string {
	codec := "msgpack"
	if m.Fixed {
		codec = "fixed layout"
	}
	return fmt.Sprintf("%s (type %d, %s)", m.Name, m.ID, codec)
}

// Describe is t's public description (a nil t: the zero one).
func (t *Type) Describe() Description {
	if t == nil {
		return Description{}
	}
	return Description{ID: t.ID, Name: t.Name, Fixed: t.Fixed}
}

// RegisterDescribed is Register, answering with the description
// (runtime.RegisterType).
func RegisterDescribed[T any](id uint32) (Description, error) {
	t, err := Register[T](id)
	if err != nil {
		return Description{}, err
	}
	return t.Describe(), nil
}

// Descriptions lists the registered types' descriptions, by id
// (runtime.Types).
func Descriptions() []Description {
	ts := Types()
	out := make([]Description, len(ts))
	for i, t := range ts {
		out[i] = t.Describe()
	}
	return out
}

// DescriptionOf is Of's description (runtime.TypeOf).
func DescriptionOf(v any) (Description, error) {
	t, err := Of(v)
	if err != nil {
		return Description{}, err
	}
	return t.Describe(), nil
}
