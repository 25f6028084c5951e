package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unsafe"
)

// Layout is a fixed-layout message type: a Go struct whose fields are
// fixed-size numbers, or arrays of them, with no pointers, slices,
// strings, maps or interfaces. Such a value travels as its own bytes
// (little-endian, Go's field offsets): no encoding, no copy beyond the
// one into the slot, and device code reads the same bytes through the C
// struct C() writes.
type Layout struct {
	GoName string  // the Go type's name
	CName  string  // the C struct's name
	Size   int     // bytes, Go's unsafe.Sizeof
	Fields []Field // in order
}

// Field is one field of a Layout.
type Field struct {
	Name   string
	CType  string // the element's C type (unsigned int, float, ...)
	Offset int    // bytes from the start, Go's
	Size   int    // bytes of the whole field
	Len    int    // elements for an array field; 0 for a scalar
}

// ErrNotFixed: a Go type that does not have a fixed layout.
var ErrNotFixed = errors.New("kernels: not a fixed-layout type")

// cTypes are the C types of the Go kinds a fixed layout may hold: plain C
// types of those sizes on every 64-bit host and CUDA device, so the
// header needs no <stdint.h> (NVRTC has none).
var cTypes = map[reflect.Kind]string{
	reflect.Bool: "unsigned char", reflect.Int8: "signed char", reflect.Uint8: "unsigned char",
	reflect.Int16: "short", reflect.Uint16: "unsigned short", reflect.Int32: "int", reflect.Uint32: "unsigned int",
	reflect.Int64: "long long", reflect.Uint64: "unsigned long long", reflect.Float32: "float", reflect.Float64: "double",
}

// LayoutOf describes t, a struct of fixed-size fields, for C struct name
// cname (t's name prefixed with ra_ when empty). It refuses anything else
// with an error naming the field and the fix, and refuses on a big-endian
// host, where Go's bytes would not be the wire's little-endian ones.
func LayoutOf(t reflect.Type, cname string) (Layout, error) {
	if t == nil || t.Kind() != reflect.Struct {
		return Layout{}, fmt.Errorf("%w: %v is not a struct", ErrNotFixed, t)
	}
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return Layout{}, fmt.Errorf("%w: this host is big-endian; fixed-layout messages travel as little-endian bytes", ErrNotFixed)
	}
	if cname == "" {
		cname = "ra_" + t.Name()
	}
	l := Layout{GoName: t.String(), CName: cname, Size: int(t.Size())}
	if l.Size == 0 {
		return Layout{}, fmt.Errorf("%w: %v has no fields", ErrNotFixed, t)
	}
	for i := range t.NumField() {
		f := t.Field(i)
		ft, n := f.Type, 0
		if ft.Kind() == reflect.Array {
			ft, n = ft.Elem(), ft.Len()
		}
		c, ok := cTypes[ft.Kind()]
		if !ok || n < 0 || (f.Type.Kind() == reflect.Array && n == 0) {
			return Layout{}, fmt.Errorf("%w: %v field %s is %v; use fixed-size numbers or non-empty arrays of them (send other types as msgpack)",
				ErrNotFixed, t, f.Name, f.Type)
		}
		if f.Name == "_" || !f.IsExported() {
			return Layout{}, fmt.Errorf("%w: %v field %s is not exported; export it (the C struct and msgpack name it)", ErrNotFixed, t, f.Name)
		}
		l.Fields = append(l.Fields, Field{Name: f.Name, CType: c, Offset: int(f.Offset), Size: int(f.Type.Size()), Len: n})
	}
	return l, nil
}

// C is the C declaration of the layout: a struct with explicit padding
// where Go has it, so the C compiler lays it out as Go does, and
// static_asserts of every offset and the size, so a compiler that would
// not fails at compile time instead of reading the wrong bytes.
func (l Layout) C() string {
	var b strings.Builder
	fmt.Fprintf(&b, "// %s: Go type %s, %d bytes.\n", l.CName, l.GoName, l.Size)
	fmt.Fprintf(&b, "struct %s {\n", l.CName)
	at, pad := 0, 0
	padTo := func(off int) {
		if off > at {
			fmt.Fprintf(&b, "    unsigned char _pad%d[%d];\n", pad, off-at)
			pad++
		}
	}
	for _, f := range l.Fields {
		padTo(f.Offset)
		if f.Len > 0 {
			fmt.Fprintf(&b, "    %s %s[%d];\n", f.CType, f.Name, f.Len)
		} else {
			fmt.Fprintf(&b, "    %s %s;\n", f.CType, f.Name)
		}
		at = f.Offset + f.Size
	}
	padTo(l.Size)
	b.WriteString("};\n")
	b.WriteString("#if defined(__cplusplus) && __cplusplus >= 201103L\n")
	fmt.Fprintf(&b, "static_assert(sizeof(%s) == %d, \"%s: size as Go's\");\n", l.CName, l.Size, l.CName)
	// NVRTC has no offsetof in a constant expression: the host compilers
	// (the emulated driver's, and the layout test's) check the offsets.
	b.WriteString("#if !defined(__CUDACC_RTC__)\n")
	for _, f := range l.Fields {
		fmt.Fprintf(&b, "static_assert(__builtin_offsetof(%s, %s) == %d, \"%s.%s: offset as Go's\");\n", l.CName, f.Name, f.Offset, l.CName, f.Name)
	}
	b.WriteString("#endif\n#endif\n")
	return b.String()
}

// FixedBytes is v's bytes as a fixed-layout message carries them: a view
// of v's own memory, no copy. v's type must have passed LayoutOf.
func FixedBytes[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// ErrBadFixed: bytes that are not a value of the fixed-layout type.
var ErrBadFixed = errors.New("kernels: bad fixed-layout payload")

// DecodeFixed copies a fixed-layout payload into v; its length must be
// exactly v's size.
func DecodeFixed[T any](v *T, payload []byte) error {
	dst := FixedBytes(v)
	if len(payload) != len(dst) {
		return fmt.Errorf("%w: %d bytes for a %T of %d", ErrBadFixed, len(payload), *v, len(dst))
	}
	copy(dst, payload)
	return nil
}
