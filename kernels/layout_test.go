package kernels_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ringactor/ringactor/kernels"
)

// padded has padding in the middle and at the end, on any 64-bit host.
type padded struct {
	A uint8
	B float64
	C uint16
	D [3]int8
	E int64
	F bool
}

// Fixed layouts: Go structs of numbers and arrays of numbers, and nothing
// that holds a pointer or has no fixed size.
func TestLayoutOfRefuses(t *testing.T) {
	type (
		ptr      struct{ P *int }
		slice    struct{ S []float32 }
		str      struct{ S string }
		mp       struct{ M map[int]int }
		iface    struct{ I any }
		nested   struct{ N struct{ X int32 } }
		empty    struct{ A [0]float32 }
		hidden   struct{ x int32 }
		intField struct{ I int } // int's size depends on the platform
	)
	for _, v := range []any{ptr{}, slice{}, str{}, mp{}, iface{}, nested{}, empty{}, hidden{}, intField{}, 3, struct{}{}} {
		_, err := kernels.LayoutOf(reflect.TypeOf(v), "")
		if !errors.Is(err, kernels.ErrNotFixed) {
			t.Errorf("%T: %v, want ErrNotFixed", v, err)
		}
	}
	if _, err := kernels.LayoutOf(nil, ""); !errors.Is(err, kernels.ErrNotFixed) {
		t.Errorf("nil type: %v", err)
	}
	l, err := kernels.LayoutOf(reflect.TypeFor[padded](), "")
	if err != nil {
		t.Fatal(err)
	}
	if l.CName != "ra_padded" || l.Size != int(reflect.TypeFor[padded]().Size()) || len(l.Fields) != 6 || l.Fields[1].Offset != 8 || l.Fields[3].Len != 3 {
		t.Fatalf("layout %+v", l)
	}
}

// A value travels as its own bytes and comes back equal; a payload of the
// wrong size is refused.
func TestFixedBytesRoundTrip(t *testing.T) {
	v := kernels.Keyed{Key: 7, Count: 3, Values: [8]float32{1, 2, 3, 4, 5, 6, 7, 8.5}}
	b := kernels.FixedBytes(&v)
	if len(b) != 40 || b[0] != 7 || b[4] != 3 {
		t.Fatalf("bytes % x", b)
	}
	var w kernels.Keyed
	if err := kernels.DecodeFixed(&w, b); err != nil || w != v {
		t.Fatalf("decoded %+v, %v", w, err)
	}
	if err := kernels.DecodeFixed(&w, b[:39]); !errors.Is(err, kernels.ErrBadFixed) {
		t.Fatalf("short payload: %v", err)
	}
}

// The C structs agree with Go field by field: a C++ program built from the
// generated declarations prints every field's offset and size and the
// struct's size as the C++ compiler lays them out, and they must equal
// Go's. The shipped header is the one generated.
func TestLayoutsMatchTheCCompiler(t *testing.T) {
	cxx := ""
	for _, c := range []string{os.Getenv("CXX"), "c++", "g++", "clang++"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			cxx = p
			break
		}
	}
	if cxx == "" {
		t.Skip("no C++ compiler ($CXX, c++, g++, clang++): the Go/C layout check needs one (the emulated driver's build does too)")
	}
	if kernels.Headers()[kernels.TypesHeaderName] != kernels.TypesHeader(kernels.BuiltinLayouts()) {
		t.Fatal("include/ringactor_types.h is stale: run go generate ./kernels/...")
	}
	pl, err := kernels.LayoutOf(reflect.TypeFor[padded](), "")
	if err != nil {
		t.Fatal(err)
	}
	layouts := append(kernels.BuiltinLayouts(), pl)
	var prog strings.Builder
	prog.WriteString("#include <cstdio>\n#include \"types.h\"\nint main() {\n")
	var want strings.Builder
	for _, l := range layouts {
		fmt.Fprintf(&prog, "    std::printf(\"%s size %%zu\\n\", sizeof(%s));\n", l.CName, l.CName)
		fmt.Fprintf(&want, "%s size %d\n", l.CName, l.Size)
		for _, f := range l.Fields {
			fmt.Fprintf(&prog, "    std::printf(\"%s.%s %%zu %%zu\\n\", __builtin_offsetof(%s, %s), sizeof(((%s *)0)->%s));\n",
				l.CName, f.Name, l.CName, f.Name, l.CName, f.Name)
			fmt.Fprintf(&want, "%s.%s %d %d\n", l.CName, f.Name, f.Offset, f.Size)
		}
	}
	prog.WriteString("    return 0;\n}\n")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "types.h"), []byte(kernels.TypesHeader(layouts)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.cpp"), []byte(prog.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "layouts")
	if out, err := exec.Command(cxx, "-std=c++14", "-Wall", "-Werror", "-o", bin, filepath.Join(dir, "main.cpp")).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cxx, err, out)
	}
	got, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want.String() {
		t.Fatalf("C++ lays the structs out as\n%s\nGo as\n%s", got, want.String())
	}
}
